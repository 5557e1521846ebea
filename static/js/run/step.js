// The Step tab: one program replayed statement by statement (a run with options.step_pid, over POST
// /api/run, apart from the page's own runs, saying whose code it is as they do: provenance.js). A
// slider and Prev/Next walk its steps (a loop's statements once per iteration, a statement over
// several lines one step); each step shows the
// locals after that statement (scalars, tiles as small heat tables,
// masks as boolean grids, pointers as offsets into their tensor), and what the line loaded and
// stored. The editor marks the step's lines.
import { on, emit } from "../shared/hub.js";
import { h, replaceChildren } from "../shared/dom.js";
import { formatCount, formatNumber, formatPid, formatTuple, formatWhole } from "../shared/format.js";
import { errorCard } from "./error-card.js";
import { regionText } from "./trace-words.js";
import { postRun } from "../shared/provenance.js";

let els = null;
let getSpec = null;
let selectedPid = [0, 0, 0];
let replay = null; // {result, at: step index, scope: [{name: value index}] per step}
let grid = null;

// ---- the locals at each step ----

function scopes(steps) {
  const all = [];
  let scope = { ...steps.initial };
  for (const step of steps.steps) {
    scope = { ...scope, ...step.set };
    all.push(scope);
  }
  return all;
}

// Which time the loop reaches this statement: a statement is known by its first line.
function visitOf(steps, at) {
  const line = steps.steps[at].line;
  const visits = steps.steps.filter((s) => s.line === line).length;
  const visit = steps.steps.slice(0, at + 1).filter((s) => s.line === line).length;
  return { visit, visits };
}

function lineWords(step) {
  return step.end_line > step.line ? `lines ${step.line}–${step.end_line}` : `line ${step.line}`;
}

function capitalised(text) {
  return text[0].toUpperCase() + text.slice(1);
}

// ---- drawing a value ----

function heat(values, unset) {
  const numbers = values.filter((v, i) => typeof v === "number" && Number.isFinite(v) && !unset.has(i));
  const lo = Math.min(...numbers);
  const hi = Math.max(...numbers);
  return (v) => {
    if (typeof v !== "number" || !Number.isFinite(v) || hi === lo) return null;
    const t = (v - lo) / (hi - lo);
    return `background: rgba(91, 157, 255, ${Math.round(12 + 60 * t) / 100})`;
  };
}

function cellText(value, kind, dtype) {
  if (kind === "mask") return value ? "✓" : "·";
  if (value === null) return "nan";
  if (typeof value !== "number") return String(value);
  return /int/.test(dtype) || kind === "pointer" ? String(value) : formatNumber(value);
}

const UNSET_TITLE = "masked off: a load without other= gives this lane no value (not 0: a GPU leaves whatever its register held)";
const LANES_PER_ROW = 16; // a 1-D block wraps into rows of this many lanes, each row labelled by its first lane

function tileTable(value) {
  const shape = value.corner || value.shape;
  const oneD = shape.length !== 2;
  const cols = oneD ? Math.min(LANES_PER_ROW, value.values.length) : shape[1];
  const rows = oneD ? Math.ceil(value.values.length / cols) : shape[0];
  const unset = new Set(value.unset || []);
  const colour = value.kind === "tile" ? heat(value.values, unset) : () => null;
  const cell = (v, i) => (unset.has(i) ? h("td", { class: "unset", title: UNSET_TITLE }, "?")
    : h("td", { class: value.kind === "mask" && !v ? "off" : null, style: colour(v) }, cellText(v, value.kind, value.dtype)));
  const body = [];
  for (let r = 0; r < rows; r++) {
    body.push(h("tr", {}, oneD && rows > 1 ? h("th", { class: "lane" }, `${r * cols}:`) : null,
      value.values.slice(r * cols, (r + 1) * cols).map((v, c) => cell(v, r * cols + c))));
  }
  return h("div", { class: "step-tile-scroll" }, h("table", { class: `step-tile ${value.kind}` }, h("tbody", {}, body)));
}

// An integer tile's values as integers (an offset of 98,431, never 9.84e+4); a float's to three digits.
function statText(value, dtype, kind) {
  if (!/int/.test(dtype ?? "") && kind !== "pointer") return formatNumber(value);
  return formatWhole(value);
}

function summaryText({ summary, corner, dtype, kind }) {
  const stat = (v) => statText(v, dtype, kind);
  const stats = summary.min === undefined ? "no lane holds a value"
    : `min ${stat(summary.min)} · max ${stat(summary.max)} · mean ${stat(summary.mean)}`;
  const unset = summary.unset ? ` (${formatCount(summary.unset)} masked-off lanes hold none)` : "";
  return `${stats}${unset}; ${corner.length === 2 ? `its top-left ${formatTuple(corner)} below` : `its first ${corner[0]} lanes below`}`;
}

function valueView(value) {
  if (value.kind === "scalar" && !value.shape) return h("code", {}, String(value.value));
  if (!value.shape || value.shape.length === 0) {
    const v = value.values[0];
    return h("code", {}, value.kind === "pointer" ? `${value.tensor || "?"} + ${v}` : cellText(v, value.kind, value.dtype));
  }
  if (value.kind === "other") return h("code", {}, value.value);
  return h("div", {},
    value.summary ? h("p", { class: "hint" }, summaryText(value)) : null,
    value.kind === "pointer" ? h("p", { class: "hint" }, `element offsets into ${value.tensor || "no input tensor"}`) : null,
    value.unset ? h("p", { class: "hint step-unset-note" }, h("span", { class: "unset-swatch" }, "?"),
      " masked off: loaded without other=, these lanes hold no value (a GPU leaves whatever its register held)") : null,
    tileTable(value));
}

function describeType(value) {
  if (!value.shape || !value.shape.length) return value.dtype;
  return `${value.kind === "pointer" ? "" : `${value.kind} `}${value.dtype} ${formatTuple(value.shape)}`;
}

// An access in the diagram's words: "loads a[32..63, 0..31]", the masked-off lanes alike.
function accessView(access, tensors) {
  const name = access.tensor || "?";
  const shape = tensors?.[access.tensor]?.shape || [];
  const where = (runs) => regionText({ shape, oneD: shape.length <= 1 }, name, runs);
  return h("li", { class: `step-access ${access.op}` }, h("b", {}, access.op === "load" ? "loads " : access.op === "store" ? "stores " : `${access.atomic || "atomic"} `),
    h("code", {}, access.offsets.length ? where(access.offsets) : `no element of ${name}`),
    access.masked.length ? h("span", { class: "masked" }, " · masked-off lanes pointed at ", h("code", {}, where(access.masked))) : null);
}

// ---- the panel ----

function render() {
  const pidInputs = [0, 1, 2].map((axis) => h("input", { type: "number", min: 0, class: "mono step-pid", value: selectedPid[axis] ?? 0,
    "aria-label": `program id, axis ${axis}`, oninput: (event) => { selectedPid[axis] = Math.max(0, Number(event.target.value) || 0); } }));
  const head = h("div", { class: "step-head" }, h("span", {}, "Program "), pidInputs,
    h("button", { type: "button", class: "button small primary", id: "step-button", onclick: start }, "Step through"),
    h("span", { class: "hint", id: "step-status" }, grid ? `grid ${formatTuple(grid)}` : "pick a program in the diagram, or type its id"));
  if (!replay) {
    replaceChildren(els.panel, h("div", { class: "step" }, head,
      h("p", { class: "hint" }, "Replays one program alone in Triton's interpreter and shows every local after each line, loop iterations included.")));
    return;
  }
  const { result } = replay;
  const steps = result.steps;
  const parts = [head];
  if (!steps || !steps.steps.length) {
    parts.push(result.error ? errorCard(result.error) : h("p", { class: "hint" }, "The program ran no line of the kernel."));
    replaceChildren(els.panel, h("div", { class: "step" }, parts));
    return;
  }
  const at = replay.at;
  const step = steps.steps[at];
  const { visit, visits } = visitOf(steps, at);
  const slider = h("input", { type: "range", min: 0, max: steps.steps.length - 1, value: at, id: "step-slider", class: "step-slider",
    "aria-label": "step", oninput: (event) => show(Number(event.target.value)) });
  parts.push(h("div", { class: "step-nav" },
    h("button", { type: "button", class: "button small", id: "step-prev", disabled: at === 0, onclick: () => show(at - 1) }, "‹ Prev"),
    slider,
    h("button", { type: "button", class: "button small", id: "step-next", disabled: at === steps.steps.length - 1, onclick: () => show(at + 1) }, "Next ›"),
    h("span", { id: "step-where" }, `step ${at + 1} of ${steps.steps.length} · ${lineWords(step)}`, visits > 1 ? ` · visit ${visit} of ${visits}` : "")),
  h("p", { class: "hint" }, `Program ${formatPid(steps.pid)} of ${formatTuple(steps.grid)}, replayed alone in Triton's interpreter on CPU copies of the inputs.`,
    steps.truncated ? " Long program: only its first steps were recorded." : ""));
  const failedHere = result.error && at === steps.steps.length - 1;
  if (failedHere) parts.push(errorCard(result.error));
  const accesses = steps.accesses.slice(step.accesses[0], step.accesses[1]);
  parts.push(h("h3", { class: "section-title" }, `${capitalised(lineWords(step))} `, h("span", { class: "section-hint" }, accesses.length ? "its memory accesses" : "no memory access")),
    accesses.length ? h("ul", { class: "step-accesses", id: "step-accesses" }, accesses.map((access) => accessView(access, steps.tensors))) : null);
  const scope = replay.scope[at];
  parts.push(h("h3", { class: "section-title" }, "Locals after this statement"),
    h("table", { class: "step-locals", id: "step-locals" }, h("tbody", {}, Object.entries(scope).map(([name, index]) => {
      const value = steps.values[index];
      return h("tr", { class: name in step.set ? "changed" : null, dataset: { name } },
        h("th", { class: "mono" }, h("span", { class: "step-name" }, name), h("div", { class: "step-type" }, describeType(value))), h("td", {}, valueView(value)));
    }))));
  replaceChildren(els.panel, h("div", { class: "step" }, parts));
}

function show(at) {
  replay.at = Math.max(0, Math.min(at, replay.result.steps.steps.length - 1));
  const step = replay.result.steps.steps[replay.at];
  emit("step-shown", { line: step.line, endLine: step.end_line ?? step.line });
  render();
}

async function start() {
  const spec = getSpec();
  spec.options = { ...spec.options, step_pid: [...selectedPid] };
  const status = els.panel.querySelector("#step-status");
  if (status) status.textContent = "replaying…";
  const began = performance.now();
  let body;
  try {
    const response = await postRun(spec);
    body = await response.json();
    if (!response.ok) body = { status: "error", error: body.error, steps: null };   // the server's one error body
  } catch (error) {
    body = { status: "error", error: { phase: "sandbox", type: "RunError", message: `The server did not answer: ${error.message}`, line: null, pid: null, hint: null, field: null }, steps: null };
  }
  replay = { result: body, at: 0, scope: body.steps ? scopes(body.steps) : [], ms: performance.now() - began };
  if (body.steps) grid = body.steps.grid;
  els.panel.dataset.replayMs = String(Math.round(replay.ms));
  if (body.steps && body.steps.steps.length) show(body.error ? body.steps.steps.length - 1 : 0);
  else render();
}

// panel: the Step tab's content; spec: () => the page's spec.
export function initStep({ panel, spec }) {
  els = { panel };
  getSpec = spec;
  on("program-selected", ({ pid }) => {
    if (pid) selectedPid = [...pid, 0, 0].slice(0, 3);
    if (!replay) render();
  });
  on("step-requested", ({ pid }) => {
    selectedPid = [...pid, 0, 0].slice(0, 3);
    document.querySelector('[data-tab="step"]')?.click();
    start();
  });
  on("run-result", ({ result }) => { if (result.trace) grid = result.trace.grid; if (!replay) render(); });
  on("spec-loaded", () => { replay = null; grid = null; render(); });
  render();
}
