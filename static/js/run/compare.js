// The Compare tab: pin a result, and every later run shows what changed against it (kernel time
// and bandwidth judged against their noise, registers, spills and shared memory, which elements each
// program wrote, each IR stage as a unified diff coloured by source line). Also the sweep: a few
// values of the meta-parameters, num_warps and num_stages, run as one sweep (options.sweep), and
// its table with the fastest.
import { on, emit } from "../shared/hub.js";
import { h, replaceChildren } from "../shared/dom.js";
import { formatClock, formatCount, formatMs, formatNumber } from "../shared/format.js";
import { MARKS, comparisonFigure, shownPart } from "./puzzle-figures.js";
import { loadPlotly } from "../shared/plotly.js";
import { coverageDiff, resourceRows, timeChange, unifiedDiff, withoutRenumbering } from "./compare-model.js";
import { describeLaunch, launchIdentity, shownLaunch } from "./script.js";

const SOURCE_COLOURS = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#17becf"];
const COVERAGE_WORDS = {
  missed: "written by the pinned run, not by this one",
  extra: "written by this run, not by the pinned one",
  twice: "written more than once by this run, once by the pinned one",
};

let pinned = null; // {result, spec, at}
let latest = null; // {result, spec}
let stages = [];   // result.ir's stages (the server's schema)
let stage = "ttgir";
let elements = null;
let getSpec = null;
let rules = null; // the spec's option rules (sandbox/spec.py schema): num_warps, num_stages, sweep

function percent(x) {
  return `${x >= 0 ? "+" : "−"}${formatNumber(Math.abs(x) * 100)}%`;
}

// What a run launched, in a few words: a script's run, the launch it shows; a form run, its
// meta-parameters and the options it compiled with (their defaults where the spec gives none).
function launchWords({ spec, result }) {
  if (spec.mode === "script") {
    const launch = shownLaunch(result);
    return launch ? describeLaunch(launch) : "no launch shown";
  }
  const option = (name) => `${name}=${spec.options[name] ?? rules[name].default}`;
  const values = Object.entries(spec.args || {}).filter(([, v]) => typeof v === "number").map(([k, v]) => `${k}=${v}`);
  return [...values, option("num_warps"), option("num_stages")].join(", ");
}

// Two script runs compare only where they show the same launch: the same kernel's same launch
// (the 2nd add_kernel launch), whatever its index or grid became. Returns null when they do, else
// the words that say they do not and, where this run made the pinned launch too, its index.
function differentLaunches(before, after) {
  if (before.spec.mode !== "script" || after.spec.mode !== "script") return null;
  const [a, b] = [shownLaunch(before.result), shownLaunch(after.result)];
  const same = (x, y) => x.kernel === y.kernel && x.nth === y.nth;
  const wanted = a && launchIdentity(before.result, a);
  if (a && b && same(wanted, launchIdentity(after.result, b))) return null;
  const match = wanted && after.result.launches?.list.find((launch) => same(wanted, launchIdentity(after.result, launch)));
  return {
    words: `Not compared: these runs show different launches. The pinned run shows ${a ? describeLaunch(a) : "no launch"}; `
      + `this run shows ${b ? describeLaunch(b) : "no launch"}. Their times, resources and IR are not a before and after.`,
    index: match ? match.index : null,
  };
}

function differentLaunchesSection(differ) {
  const show = differ.index === null ? h("p", { class: "hint" }, "This run made no launch like the pinned one: pin this run to compare from here.")
    : h("button", { type: "button", class: "button small primary", id: "compare-same-launch",
                    onclick: () => emit("launch-selected", { index: differ.index }) }, `Show launch ${differ.index} of this run`);
  return h("div", { class: "notice compare-launches-differ", id: "compare-launches-differ", role: "status" },
    h("p", {}, differ.words), show);
}

// ---- the sections ----

function timeSection(before, after) {
  const a = before.timings;
  const b = after.timings;
  if (!a || !b) return h("p", { class: "hint" }, "No times to compare: both runs need bench on.");
  const change = timeChange(a.kernel_ms, b.kernel_ms);
  const verdictWords = {
    faster: "faster, beyond the noise", slower: "slower, beyond the noise", noise: "within the noise: no real change",
    unmeasured: "the interpreter's wall clock: not a speed to compare",
  };
  const row = (label, x, y, extra) => h("tr", {}, h("th", {}, label), h("td", {}, x), h("td", {}, y), h("td", {}, extra));
  return h("table", { class: "compare-table", id: "compare-time" },
    h("thead", {}, h("tr", {}, h("th", {}), h("th", {}, "pinned"), h("th", {}, "this run"), h("th", {}, "change"))),
    h("tbody", {},
      row("kernel time (median)", formatMs(a.kernel_ms.median), formatMs(b.kernel_ms.median),
        change ? h("span", { class: `verdict ${change.verdict}`, dataset: { verdict: change.verdict } },
          `${percent(change.change)} · ${verdictWords[change.verdict]}${change.noise !== null ? ` (noise ±${formatNumber(change.noise * 100)}%)` : ""}`) : "—"),
      row("p20 … p80", `${formatMs(a.kernel_ms.p20)} … ${formatMs(a.kernel_ms.p80)}`, `${formatMs(b.kernel_ms.p20)} … ${formatMs(b.kernel_ms.p80)}`, ""),
      a.gbps && b.gbps ? row("bandwidth", `${formatNumber(a.gbps)} GB/s`, `${formatNumber(b.gbps)} GB/s`, percent(b.gbps / a.gbps - 1)) : null));
}

function resourceSection(before, after) {
  const a = before.ir && !before.ir.error ? before.ir : null;
  const b = after.ir && !after.ir.error ? after.ir : null;
  if (!a || !b) return h("p", { class: "hint" }, "No compiler resources to compare: both runs need the IR option on.");
  const rows = resourceRows(a, b);
  return h("table", { class: "compare-table", id: "compare-resources" },
    h("thead", {}, h("tr", {}, h("th", {}), h("th", {}, "pinned"), h("th", {}, "this run"), h("th", {}, "change"))),
    h("tbody", {}, rows.map((r) => h("tr", {}, h("th", {}, r.label), h("td", {}, r.before ?? "—"), h("td", {}, r.after ?? "—"),
      h("td", { class: r.delta ? (r.delta > 0 ? "worse" : "better") : "" }, r.delta === null ? "—" : r.delta === 0 ? "same" : (r.delta > 0 ? `+${r.delta}` : String(r.delta)))))));
}

function coverageSection(before, after) {
  if (!before.trace || !after.trace) return { node: h("p", { class: "hint" }, "No trace to compare: both runs need trace on."), draw: () => {} };
  const diff = coverageDiff(before.trace, after.trace);
  const plots = [];
  const node = h("div", { id: "compare-coverage" }, Object.entries(diff).map(([name, d]) => {
    const plot = h("div", { class: "puzzle-plot", dataset: { output: name } });
    plots.push([plot, name, d]);
    const words = Object.keys(MARKS).filter((kind) => d[kind].count)
      .map((kind) => h("li", {}, h("span", { style: `color:${MARKS[kind].colour}` }, "■ "), `${formatCount(d[kind].count)} ${COVERAGE_WORDS[kind]}`));
    const shown = shownPart((before.trace.tensors[name] || after.trace.tensors[name]).shape);
    return h("div", { class: "compare-figure" }, h("h4", {}, name, shown ? h("span", { class: "section-hint compare-shown" }, ` ${shown}`) : null), plot,
      words.length ? h("ul", { class: "puzzle-marks" }, words) : h("p", { class: "hint" }, "Both runs write the same elements; the colours show which program wrote each."));
  }));
  const draw = async () => {
    const Plotly = await loadPlotly();
    const theme = { paper: "#15181e", untouched: "#2b303a", text: getComputedStyle(elements.panel).color, axis: "#8b93a1" };
    for (const [plot, name, d] of plots) {
      const figure = comparisonFigure({ name, expected: before.trace, yours: after.trace, diff: d, theme,
                                        availableWidth: Math.max(plot.clientWidth, 320), titles: ["pinned", "this run"] });
      Plotly.react(plot, figure.data, figure.layout, figure.config);
    }
  };
  return { node, draw };
}

function sourceMark(lineMap, index) {
  const line = lineMap && lineMap[String(index)];
  if (line === undefined || line === null) return h("span", { class: "src-mark" });
  return h("span", { class: "src-mark", style: `background:${SOURCE_COLOURS[line % SOURCE_COLOURS.length]}`, title: `source line ${line}` }, String(line));
}

function irSection(before, after) {
  const a = before.ir && !before.ir.error ? before.ir : null;
  const b = after.ir && !after.ir.error ? after.ir : null;
  if (!a || !b) return h("p", { class: "hint" }, "No IR to compare: both runs need the IR option on.");
  const present = stages.filter((s) => a[s] || b[s]);
  if (!present.includes(stage)) stage = present[0];
  const diff = unifiedDiff(a[stage], b[stage], 3, withoutRenumbering);
  const picker = h("div", { class: "compare-stages", role: "tablist" }, present.map((s) => h("button", {
    type: "button", class: `button small ${s === stage ? "primary" : ""}`, dataset: { stage: s },
    onclick: () => { stage = s; render(); } }, s.toUpperCase())));
  let body;
  if (diff.tooLarge) body = h("p", { class: "hint" }, "The two IRs differ in too many lines to show as a diff.");
  else if (!diff.hunks.length) body = h("p", { class: "hint", id: "compare-ir-same" }, `The ${stage.toUpperCase()} is the same in both runs.`);
  else {
    const mapA = (a.line_map || {})[stage];
    const mapB = (b.line_map || {})[stage];
    body = h("pre", { class: "compare-diff", id: "compare-ir-diff" }, diff.hunks.flatMap((hunk) => [
      h("div", { class: "hunk" }, hunk.header),
      ...hunk.lines.map((l) => h("div", { class: `diff-line ${{ "+": "add", "-": "del", " ": "same" }[l.kind]}` },
        l.kind === "+" ? sourceMark(mapB, l.b) : sourceMark(mapA, l.a), `${l.kind} ${l.text}`)),
    ]));
  }
  return h("div", {}, picker, h("p", { class: "hint" }, diff.tooLarge ? "" : `${diff.removed} line(s) removed, ${diff.added} added (not counting renumbered #loc ids and %value_N names); the coloured mark is each line's source line.`), body);
}

// ---- the sweep ----

const sweepValues = {}; // what was typed in the sweep's fields, kept across renders

// A first sweep that fits the limit: num_warps 4 and 8, and each meta-parameter's value with its
// double and its half, as many of them as keep the combinations within maxConfigs.
function suggestedSweep(constexprs, maxConfigs) {
  const lists = new Map(constexprs.map(([name, value]) => [name, [value]]));
  let count = 2; // num_warps: 4, 8
  for (const [name, value] of constexprs) {
    for (const extra of [value * 2, Math.max(1, Math.floor(value / 2))]) {
      const list = lists.get(name);
      const grown = (count / list.length) * (list.length + 1);
      if (list.includes(extra) || grown > maxConfigs) continue;
      list.push(extra);
      count = grown;
    }
  }
  return Object.fromEntries([...lists].map(([name, list]) => [name, list.sort((a, b) => a - b).join(", ")]));
}

// What one field's text asks for: {values} or {problem}, by the rules the server checks (sandbox/spec.py).
function fieldValues(name, text) {
  const parts = text.split(",").map((s) => s.trim()).filter(Boolean);
  const values = parts.map(Number);
  const bad = parts.find((part, i) => !Number.isFinite(values[i]));
  if (bad !== undefined) return { problem: `${name}: "${bad}" is not a number; give numbers separated by commas` };
  if (name === "num_warps") {
    const choices = rules.num_warps.choices;
    const wrong = values.find((v) => !choices.includes(v));
    if (wrong !== undefined) return { problem: `num_warps: ${wrong} is not one of ${choices.join(", ")}` };
  }
  if (name === "num_stages") {
    const { min, max } = rules.num_stages;
    const wrong = values.find((v) => !Number.isInteger(v) || v < min || v > max);
    if (wrong !== undefined) return { problem: `num_stages: ${wrong} is not an integer from ${min} to ${max}` };
  }
  return { values };
}

function sweepForm() {
  const spec = getSpec();
  const maxConfigs = rules.sweep.max_configs;
  // Integer literals of upper-case parameters: the meta-parameters (BLOCK_SIZE, GROUP_M, ...).
  const constexprs = Object.entries(spec.args || {}).filter(([name, v]) => Number.isInteger(v) && /^[A-Z][A-Z0-9_]*$/.test(name));
  const suggested = { ...suggestedSweep(constexprs, maxConfigs), num_warps: "4, 8", num_stages: "" };
  const note = h("span", { class: "hint", id: "sweep-note", role: "status" });
  const button = h("button", { type: "button", class: "button small primary", id: "sweep-button" }, "Run sweep");
  let sweep = null; // what the button runs now, or null when the fields ask for nothing it can run
  const fields = [...constexprs.map(([name]) => name), "num_warps", "num_stages"].map((name) => {
    const input = h("input", { class: "mono", dataset: { param: name }, value: sweepValues[name] ?? suggested[name],
                               placeholder: name === "num_stages" ? String(spec.options.num_stages ?? rules.num_stages.default) : "",
                               "aria-describedby": "sweep-note",
                               oninput: (event) => { sweepValues[name] = event.target.value; update(); } });
    return [name, input];
  });
  // The combinations are counted as the fields are typed in; the button runs only a sweep the server takes.
  function update() {
    sweep = {};
    let problem = null;
    for (const [name, input] of fields) {
      const found = fieldValues(name, input.value);
      input.classList.toggle("error-field", Boolean(found.problem));
      input.setAttribute("aria-invalid", String(Boolean(found.problem)));
      problem ||= found.problem;
      if (found.values?.length) sweep[name] = found.values;
    }
    const count = Object.values(sweep).reduce((product, values) => product * values.length, 1);
    if (problem) note.textContent = problem;
    else if (!Object.keys(sweep).length) note.textContent = "Give at least one list of values.";
    else if (count > maxConfigs) note.textContent = `${count} combinations: a sweep runs at most ${maxConfigs}. Remove some values.`;
    else note.textContent = `${count} combination${count === 1 ? "" : "s"} (at most ${maxConfigs}), each run, checked and timed.`;
    const runnable = !problem && Object.keys(sweep).length && count <= maxConfigs;
    note.classList.toggle("bad", !runnable);
    button.disabled = !runnable;
    button.textContent = runnable ? `Run sweep (${count})` : "Run sweep";
    if (!runnable) sweep = null;
  }
  button.addEventListener("click", () => { if (sweep) emit("sweep-requested", { sweep }); });
  update();
  return h("div", { class: "sweep-form" },
    fields.map(([name, input]) => h("label", { class: "sweep-field" }, h("span", { class: "mono" }, name), input)),
    button, note);
}

function sweepTable(sweep) {
  const rows = sweep.rows.map((r, i) => h("tr", { class: i === sweep.best ? "best" : r.status !== "ok" ? "failed" : "" },
    sweep.params.map((p) => h("td", { class: "mono" }, String(r.config[p]))),
    h("td", {}, r.status === "ok" ? "✓ matches" : r.error ? `✗ ${r.error.message}` : "✗ mismatch"),
    h("td", {}, r.kernel_ms ? formatMs(r.kernel_ms.median) : "—"),
    h("td", {}, r.kernel_ms && r.kernel_ms.n > 1 ? `${formatMs(r.kernel_ms.p20)} … ${formatMs(r.kernel_ms.p80)}` : "—"),
    h("td", {}, r.gbps ? `${formatNumber(r.gbps)} GB/s` : "—")));
  let verdict;
  if (sweep.best !== null) {
    const best = sweep.rows[sweep.best].config;
    verdict = `Fastest: ${sweep.params.map((p) => `${p}=${best[p]}`).join(", ")}${sweep.clear ? "" : " (but within the noise of the runner-up)"}.`;
  } else {
    verdict = sweep.interpreter ? "Triton's interpreter checks each configuration but has no clock worth comparing: run the sweep on a GPU to find the fastest."
      : "No configuration both matched and was timed.";
  }
  return h("div", { id: "sweep-result" }, h("p", { class: "sweep-verdict", id: "sweep-verdict" }, verdict),
    h("table", { class: "compare-table sweep-table" },
      h("thead", {}, h("tr", {}, sweep.params.map((p) => h("th", { class: "mono" }, p)), h("th", {}, "check"), h("th", {}, "median"), h("th", {}, "p20 … p80"), h("th", {}, "bandwidth"))),
      h("tbody", {}, rows)));
}

// ---- the tab ----

function render() {
  const sections = [];
  const pinButton = h("button", { type: "button", class: "button small", id: "pin-button", disabled: !latest,
    onclick: () => { pinned = { ...latest, at: new Date() }; render(); } }, pinned ? "Pin this run instead" : "Pin this result");
  const unpin = pinned ? h("button", { type: "button", class: "button small ghost", id: "unpin-button", onclick: () => { pinned = null; render(); } }, "Unpin") : null;
  sections.push(h("div", { class: "compare-head" }, pinButton, unpin,
    h("span", { class: "hint", id: "pinned-label" }, pinned ? `Pinned: ${launchWords(pinned)} (${formatClock(pinned.at)})`
      : "Pin a result, change something, run again: this tab shows what changed.")));
  let draw = () => {};
  const differ = pinned && latest && latest.result !== pinned.result ? differentLaunches(pinned, latest) : null;
  if (differ) {
    sections.push(differentLaunchesSection(differ));
  } else if (pinned && latest && latest.result !== pinned.result) {
    const coverage = coverageSection(pinned.result, latest.result);
    draw = coverage.draw;
    sections.push(h("p", { class: "hint" }, `This run: ${launchWords(latest)}`),
      h("h3", { class: "section-title" }, "Time"), timeSection(pinned.result, latest.result),
      h("h3", { class: "section-title" }, "Compiler resources"), resourceSection(pinned.result, latest.result),
      h("h3", { class: "section-title" }, "Who writes what"), coverage.node,
      h("h3", { class: "section-title" }, "IR diff"), irSection(pinned.result, latest.result));
  } else if (pinned) {
    sections.push(h("p", { class: "hint" }, "Run again (change a value first) to compare with the pinned result."));
  }
  sections.push(h("h3", { class: "section-title" }, "Sweep ", h("span", { class: "section-hint" }, "each combination is run, checked and timed")),
    getSpec().mode === "script" ? h("p", { class: "hint", id: "sweep-script" }, "A sweep runs one kernel's launch: make a form run of a launch "
      + "(its Form button in the launch list), then sweep its meta-parameters here.") : sweepForm());
  if (latest && latest.result.sweep) sections.push(sweepTable(latest.result.sweep));
  replaceChildren(elements.panel, h("div", { class: "compare" }, sections));
  draw();
}

// panel: the Compare tab's content; spec: () => the page's spec (what a pinned run ran with);
// options: the spec schema's options (their rules, the sweep's limit); stages: result.ir's stages in
// order (initial.spec_schema.ui.ir_stage.choices).
export function initCompare({ panel, spec, options, stages: irStages }) {
  stages = irStages;
  elements = { panel };
  getSpec = spec;
  rules = options;
  let requested = null;
  on("run-requested", () => { requested = getSpec(); });
  on("run-result", ({ result }) => {
    if (result.status === "error" && !result.run_id) return; // refused before it ran
    latest = { result, spec: requested || getSpec() };
    render();
  });
  // Another spec loaded keeps the pin: two kernels (matmul and matmul + ReLU) compare as well as two tries.
  on("spec-loaded", () => { latest = null; render(); });
  on("tab-shown", ({ tab }) => { if (tab === "compare") render(); });
  // The launch form has problems of its own: the sweep did not start, and the last result stays.
  on("sweep-refused", ({ problems }) => {
    const note = elements.panel.querySelector("#sweep-note");
    if (!note) return;
    note.textContent = `Not run: the launch form has ${problems.length === 1 ? "a problem" : `${problems.length} problems`} to fix first, `
      + `marked in the form: ${problems[0].message}`;
    note.classList.add("bad");
  });
  render();
}
