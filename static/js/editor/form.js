// The launch pane: which kernel, its arguments (read from the source), the inputs (inputs-table.js), the grid
// and the options. Filled on `spec-loaded`; `readLaunch()` gives the spec's launch fields back.
import { on, emit } from "../shared/hub.js";
import { h, replaceChildren, debounce } from "../shared/dom.js";
import { findJitFunctions, parseShape } from "./pysource.js";
import { addRow, initInputsTable, inputRows, loadInputs, rowExpression } from "./inputs-table.js";
import { launchProblems } from "./launch-check.js";
import { estimate, estimateWarning } from "./estimate.js";
import { initTritonPicker, readTriton, setTriton } from "./triton-picker.js";

const CHECKBOXES = ["check", "bench", "trace", "ir", "timeline"];
const DEVICE_LABELS = { gpu: "GPU" };

// The spec's options as the server defines them: initial.spec_schema (also GET /api/spec) gives
// each option's default and its choices or range (sandbox/spec.py is their one definition).
const state = {
  functions: [],        // the last successful parse of the source
  source: "",           // the source as last seen (its top-level names may appear in expressions)
  kernel: null,
  values: {},           // parameter name → text the user typed or the spec gave
  loadedArgs: {},       // parameter name → the spec's own value, kept as is while its text is unchanged
  loadedFlops: null,    // the spec's options.flops, kept as is while the field still shows it
};
let els = null;
let schema = null;   // the spec's options: {name: {default, choices | min, max, modes}}
let expressionNames = [];   // what an expression may read besides the launch's own names (the server's schema)
let server = null;   // {deviceKind, timeoutS}: where runs go ("gpu" | "interpreter" | null) and their limit

// ---- arguments ----

function kernelParams() {
  const fn = state.functions.find((f) => f.name === state.kernel);
  if (fn) return fn.params;
  return Object.keys(state.loadedArgs).map((name) => ({ name, constexpr: false, comment: "", tuned: null, default: null }));
}

const SIZE_NAMES = /^(n|N|numel|n_elements|n_elems|num_elements|size|length)$/;
const BLOCK_NAMES = /BLOCK|TILE/;

function isPointer(param) {
  return !param.constexpr && /(_ptr|_pointer)$|^ptr_/.test(param.name);
}

function pointerInput(param) {
  return param.name.replace(/(_ptr|_pointer)$|^ptr_/, "");
}

// What an untouched parameter gets: its default in the def, else the input of the same name
// (x_ptr → x; a pointer with no such input: that name, an input the form offers to add), a size
// (n, numel, ...) the first input's numel(), a block size 1024 (a power of 2), else nothing.
function suggestedValue(param) {
  if (param.default !== null && param.default !== undefined) return param.default;
  const names = inputRows().map((r) => r.name);
  const stripped = pointerInput(param);
  if (names.includes(stripped)) return stripped;
  if (names.includes(param.name)) return param.name;
  if (isPointer(param)) return stripped;
  if (SIZE_NAMES.test(param.name) && names.length) return `${names[0]}.numel()`;
  if (param.constexpr && BLOCK_NAMES.test(param.name)) return "1024";
  return "";
}

// A pointer argument naming an input that does not exist: one click adds it (an output when its
// name says so).
function addInputButton(param) {
  const name = argText(param).trim();
  if (!isPointer(param) || !/^[A-Za-z_]\w*$/.test(name) || inputRows().some((r) => r.name === name)) return null;
  return h("button", { type: "button", class: "button small ghost add-for-arg", title: `Add an input named ${name} for ${param.name}`,
                       onclick: () => addRow(name) }, `+ input ${name}`);
}

function argText(param) {
  return param.name in state.values ? state.values[param.name] : suggestedValue(param);
}

// "1024" → 1024, "x" → "x": literals travel as JSON numbers/booleans, the rest as expressions.
function argValue(name, text) {
  const loaded = state.loadedArgs[name];
  if (loaded !== undefined && String(loaded) === text) return loaded;
  if (/^-?\d+$/.test(text) && Number.isSafeInteger(Number(text))) return Number(text);
  if (/^-?(\d+\.\d*|\.\d+|\d+)(e-?\d+)?$/i.test(text)) return Number(text);
  if (text === "True" || text === "False") return text === "True";
  return text;
}

function paramBadge(param) {
  if (param.tuned) return h("span", { class: "badge warn", title: `set by @triton.${param.tuned}; not passed at launch` }, param.tuned === "autotune" ? "autotuned" : "heuristic");
  if (param.constexpr) return h("span", { class: "badge constexpr", title: "tl.constexpr: a compile-time meta-parameter" }, "constexpr");
  return null;
}

// "meta-parameter-changed" once typing in a constexpr field pauses; .now(name) at once, dropping
// the pending one (Enter, or leaving the field, after typing).
const META_PAUSE_MS = 600;
const metaChangedSoon = (() => {
  let timer = null;
  let pending = false;
  const fire = (name) => { clearTimeout(timer); pending = false; emit("meta-parameter-changed", { name }); };
  const soon = (name) => { clearTimeout(timer); pending = true; timer = setTimeout(() => fire(name), META_PAUSE_MS); };
  soon.now = (name) => { if (pending) fire(name); };
  return soon;
})();

function renderArgs() {
  const params = kernelParams();
  if (!params.length) {
    replaceChildren(els.args, h("div", { class: "args-empty" }, "This kernel takes no parameters."));
    return;
  }
  replaceChildren(els.args, params.map((param) => {
    const input = h("input", {
      class: "arg-value", spellcheck: false, dataset: { param: param.name },
      value: param.tuned ? "" : argText(param), disabled: Boolean(param.tuned),
      placeholder: param.tuned ? "chosen by the tuner" : "expression or literal",
      "aria-label": `value of ${param.name}`,
      // A new meta-parameter value is a new compile: tried once the typing pauses, or at once on
      // Enter or leaving the field.
      oninput: (event) => {
        state.values[param.name] = event.target.value;
        if (param.constexpr) metaChangedSoon(param.name);
      },
      onchange: () => { if (param.constexpr) metaChangedSoon.now(param.name); },
    });
    // The source's own comment on the parameter, as a tooltip: the editor shows it too.
    const note = [`${param.name}${param.annotation ? `: ${param.annotation}` : ""}`, param.comment].filter(Boolean).join("\n");
    return h("label", { class: "arg", title: note }, h("span", { class: "arg-name" }, h("span", { class: "arg-label" }, param.name), paramBadge(param)),
      h("span", { class: "arg-control" }, input, addInputButton(param)));
  }));
}

// Inputs were renamed or added: untouched parameters follow their suggestion, and a pointer's
// "+ input" offer comes or goes.
function refreshSuggestions() {
  for (const param of kernelParams()) {
    const input = els.args.querySelector(`input[data-param="${CSS.escape(param.name)}"]`);
    if (!input || param.tuned) continue;
    if (!(param.name in state.values)) input.value = suggestedValue(param);
    input.parentElement.querySelector(".add-for-arg")?.remove();
    const offer = addInputButton(param);
    if (offer) input.after(offer);
  }
}

function renderKernelSelect() {
  const names = state.functions.map((f) => f.name);
  if (state.kernel && !names.includes(state.kernel)) names.push(state.kernel);
  replaceChildren(els.kernel, names.map((name) => h("option", { value: name, selected: name === state.kernel },
    state.functions.some((f) => f.name === name) ? name : `${name} (not in source)`)));
}

// Source edited: re-read the jit functions, following a renamed kernel by its position.
function reparse(source) {
  state.source = source;
  const functions = findJitFunctions(source);
  if (!functions.length) return;   // mid-edit and unparsable: keep what we had
  const oldIndex = state.functions.findIndex((f) => f.name === state.kernel);
  if (!functions.some((f) => f.name === state.kernel)) {
    state.kernel = (functions[oldIndex] || functions[0]).name;
  }
  const before = JSON.stringify(state.functions);
  state.functions = functions;
  renderKernelSelect();
  if (JSON.stringify(functions) !== before) renderArgs();
}

// ---- options ----

// An option's values: its choices, or every integer of its range.
function choicesOf(option) {
  if (option.choices) return option.choices;
  return Array.from({ length: option.max - option.min + 1 }, (_, i) => option.min + i);
}

function fillSelect(select, option, current, label = String) {
  const values = choicesOf(option);
  replaceChildren(select, (values.includes(current) ? values : [...values, current])
    .map((value) => h("option", { value, selected: value === current }, label(value))));
  select.value = String(current);
}

function setOptions(options) {
  const value = (key) => options[key] ?? schema[key].default;
  fillSelect(els.warps, schema.num_warps, value("num_warps"));
  fillSelect(els.stages, schema.num_stages, value("num_stages"));
  fillSelect(els.device, schema.device, value("device"), (device) => DEVICE_LABELS[device] ?? device);
  for (const key of CHECKBOXES) els.options[key].checked = Boolean(value(key));
  state.loadedFlops = options.flops ?? null;
  els.flops.value = state.loadedFlops === null ? "" : String(state.loadedFlops);
  setTriton(options);
}

// options.flops: empty → null (no FLOP count), a plain number → a number, else an expression.
function flopsValue(text) {
  if (state.loadedFlops !== null && String(state.loadedFlops) === text) return state.loadedFlops;
  if (text === "") return null;
  return /^\d+(\.\d*)?(e\d+)?$/i.test(text) ? Number(text) : text;
}

function readOptions() {
  const options = { num_warps: Number(els.warps.value), num_stages: Number(els.stages.value), device: els.device.value,
                    flops: flopsValue(els.flops.value.trim()), triton: readTriton() };
  for (const key of CHECKBOXES) options[key] = els.options[key].checked;
  return options;
}

// ---- the pane ----

function loadLaunch(spec) {
  state.values = {};
  state.loadedArgs = { ...(spec.args || {}) };
  for (const [name, value] of Object.entries(state.loadedArgs)) state.values[name] = String(value);
  state.source = spec.source || "";
  state.functions = findJitFunctions(state.source);
  state.kernel = spec.kernel || (state.functions[0] && state.functions[0].name) || null;
  renderKernelSelect();
  loadInputs(spec.inputs || {}, spec.reference || {});
  renderArgs();
  els.grid.value = spec.grid || "";
  setOptions(spec.options || {});
}

// The spec's launch fields as the pane shows them (options: only those the pane controls).
export function readLaunch() {
  const args = {};
  for (const param of kernelParams()) {
    const text = argText(param).trim();
    if (!param.tuned && text !== "") args[param.name] = argValue(param.name, text);
  }
  const inputs = {}, reference = {};
  for (const row of inputRows()) {
    inputs[row.name] = rowExpression(row);
    if (row.reference.trim()) reference[row.name] = row.reference.trim();
  }
  return { kernel: state.kernel, inputs, args, grid: els.grid.value.trim(), reference, options: readOptions() };
}

// ---- the interpreter's cost, before the run (estimate.js) ----

function largestInput() {
  const sizes = inputRows().filter((row) => row.mode === "init").map((row) => parseShape(row.shape))
    .filter((dims) => dims && dims.every((d) => /^\d+$/.test(d))).map((dims) => dims.reduce((a, d) => a * Number(d), 1));
  return sizes.length ? Math.max(...sizes) : null;
}

function showEstimate() {
  if (!els.estimate) return;
  const device = els.device.value === "auto" ? server.deviceKind : els.device.value;
  const blocks = kernelParams().filter((p) => p.constexpr && /BLOCK/.test(p.name))
    .map((p) => Number(argText(p))).filter((v) => Number.isInteger(v) && v > 0);
  const warning = device === "interpreter"
    ? estimateWarning(estimate({ elements: largestInput(), blocks, grid: els.grid.value, ir: els.options.ir.checked }), server.timeoutS)
    : null;
  els.estimate.hidden = !warning;
  els.estimate.textContent = warning || "";
}

// specSchema: the server's schema of the spec (initial.spec_schema); serverFacts: {deviceKind,
// timeoutS}: where runs go and their time limit, for the estimate.
export function initLaunch(root, specSchema, serverFacts = {}) {
  schema = specSchema.options;
  expressionNames = specSchema.expression_names;
  root.addEventListener("submit", (event) => event.preventDefault());  // Enter in a field never leaves the page
  server = { deviceKind: serverFacts.deviceKind ?? null, timeoutS: serverFacts.timeoutS ?? null };
  els = {
    kernel: root.querySelector("#kernel-select"),
    grid: root.querySelector("#grid-input"),
    args: root.querySelector("#args-list"),
    tbody: root.querySelector("#inputs-table tbody"),
    warps: root.querySelector("#opt-num_warps"),
    stages: root.querySelector("#opt-num_stages"),
    device: root.querySelector("#opt-device"),
    flops: root.querySelector("#opt-flops"),
    optionsRow: root.querySelector("#options-row"),
    estimate: root.querySelector("#launch-estimate"),
    options: Object.fromEntries(CHECKBOXES.map((key) => [key, root.querySelector(`#opt-${key}`)])),
  };
  els.triton = initTritonPicker(root, specSchema);
  els.kernel.addEventListener("change", () => { state.kernel = els.kernel.value; renderArgs(); });
  for (const name of ["warps", "stages"]) {
    els[name].addEventListener("change", () => emit("meta-parameter-changed", { name: `num_${name}` }));
  }
  els.grid.addEventListener("input", () => els.grid.classList.toggle("invalid", !els.grid.value.trim()));
  initInputsTable(els.tbody, refreshSuggestions);
  root.querySelector("#add-input").addEventListener("click", () => addRow());
  on("spec-loaded", ({ spec }) => { loadLaunch(spec); showEstimate(); });
  on("source-changed", ({ source }) => { reparse(source); showEstimate(); });
  const estimateSoon = debounce(showEstimate, 300);
  root.addEventListener("input", estimateSoon);
  root.addEventListener("change", estimateSoon);
  on("run-result", ({ result }) => { if (result.device) { server.deviceKind = result.device.kind; showEstimate(); } });
  on("run-started", () => markField(root, null));
  on("run-result", ({ result }) => (result.error?.problems ? showProblems(root, result.error.problems) : markField(root, result.error)));
  on("sweep-refused", ({ problems }) => showProblems(root, problems));
  on("timeline-requested", ({ mode }) => {  // the Timings tab's one click: the option on, and a run
    if (mode !== "form") return;  // a script's own option (script.js)
    els.options.timeline.checked = true;
    emit("run-requested");
  });
}

// ---- what the form can tell before a run ----

// Every problem the form can see now (launch-check.js), in the form's order: [{field, message, part?}].
export function checkLaunch() {
  const args = {};
  for (const param of kernelParams()) args[param.name] = param.tuned ? "" : argText(param);
  const inputs = inputRows().map((row) => ({ name: row.name, init: row.init, dtype: row.dtype, mode: row.mode, reference: row.reference }));
  return launchProblems({ args, grid: els.grid.value, inputs }, kernelParams(), state.source, expressionNames);
}

function problemControl(problem) {
  const row = problem.part && els.tbody.querySelector(`tr[data-input="${CSS.escape(problem.field.slice("inputs.".length))}"]`);
  if (problem.part === "dtype") return row?.querySelector(".cell-dtype select");
  if (problem.part === "name") return row?.querySelector(".cell-name input");
  return controlOf(problem.field);
}

// Each problem on its field: outlined, its message under it (and read with it by a screen reader).
function showProblems(root, problems) {
  markField(root, null);
  problems.forEach((problem, i) => {
    const control = problemControl(problem);
    if (!control) return;
    const id = `field-problem-${i}`;
    control.classList.add("error-field");
    control.setAttribute("aria-invalid", "true");
    control.setAttribute("aria-describedby", id);
    const message = h("span", { class: "field-problem", id }, problem.message);
    const row = control.closest("tr");
    if (row) problemRow(row).append(message);   // a table cell is too narrow: a row of its own below
    else control.closest(".arg-control, .field")?.append(message);
  });
}

function problemRow(row) {
  if (row.nextElementSibling?.classList.contains("problem-row")) return row.nextElementSibling.firstElementChild;
  const cell = h("td", { colspan: 6 });
  row.after(h("tr", { class: "problem-row" }, cell));
  return cell;
}

// The control of a spec field ("args.n", "inputs.x", "reference.out", "grid", "kernel",
// "options.num_warps"); a field the form has no control of names its section, or nothing.
function controlOf(field) {
  const dot = field.indexOf(".");
  const [kind, name] = dot < 0 ? [field, null] : [field.slice(0, dot), field.slice(dot + 1)];
  const row = name && els.tbody.querySelector(`tr[data-input="${CSS.escape(name)}"]`);
  switch (kind) {
    case "kernel": return els.kernel;
    case "grid": return els.grid;
    case "args": return name ? els.args.querySelector(`input[data-param="${CSS.escape(name)}"]`) : els.args;
    case "inputs": return name ? row?.querySelector(":is(.cell-expr, .cell-shape) input") : els.tbody.closest("table");
    case "reference": return name ? row?.querySelector(".cell-ref input") : els.tbody.closest("table");
    case "options": {
      const controls = { num_warps: els.warps, num_stages: els.stages, device: els.device, flops: els.flops, triton: els.triton,
                         ...els.options };
      return controls[name] ?? els.optionsRow;
    }
    default: return null;
  }
}

// The spec field a run's error names (error.field): its control is outlined until the next run.
function markField(root, error) {
  for (const el of root.querySelectorAll(".field-problem, .problem-row")) el.remove();
  for (const el of root.querySelectorAll("[aria-invalid]")) { el.removeAttribute("aria-invalid"); el.removeAttribute("aria-describedby"); }
  for (const el of root.querySelectorAll(".error-field")) el.classList.remove("error-field");
  if (error?.field) controlOf(error.field)?.classList.add("error-field");
}
