// Script mode (docs/run-spec.md): the editor holds a whole program, and the launch pane lists the
// launches its run made (result.launches) in place of the form: kernel, line, grid, time and the
// bounds check's verdict, marked as the program's own report. A click on one asks for it (options.launch):
// that launch replayed alone from the inputs kept from the run that listed it (shown as the program ran it
// where its run was kept too: replay.as_ran), or, where they were not kept, the whole program run again;
// each row says which, and what it costs, before the click.
// "Form" makes a form run of one launch (/api/launch-form).
import { on, emit } from "../shared/hub.js";
import { h, replaceChildren } from "../shared/dom.js";
import { formatElapsed, formatMs, formatTuple } from "../shared/format.js";

const BOUNDS = {
  ok: ["✓ in bounds", "bounds-ok"],
  out_of_bounds: ["✗ out of bounds", "bounds-bad"],
  failed: ["✗ failed", "bounds-bad"],
  unchecked: ["not run", "bounds-none"],
};

let els = null;
let rules = null;      // the spec's options as the server defines them: {name: {default, modes, ...}}
let selected = null;   // options.launch: the launch asked for, or null (the program's default)
let shown = null;      // the result whose launches are listed
let edited = false;    // the program, or an option its launches depend on, changed since they were listed
let sent = null;       // {source, benchmarks} of the script run sent last
let listed = null;     // the same, of the run whose launches are listed

export function scriptMode() {
  return els !== null && els.pane.classList.contains("script");
}

// The options of `options` that a run of `mode` takes; optionRules: the server's (spec_schema.options).
export function optionsFor(mode, options, optionRules) {
  return Object.fromEntries(Object.entries(options).filter(([key]) => optionRules[key]?.modes.includes(mode)));
}

// The spec of a script run: the source and the options a script takes.
export function scriptSpec(source, options) {
  const kept = optionsFor("script", options, rules);
  return {
    version: 1, mode: "script", source,
    options: { ...kept, trace: els.trace.checked, bench: els.bench.checked, ir: els.ir.checked,
               timeline: els.timeline.checked, benchmarks: els.allPoints.checked ? "all" : "first", launch: selected },
  };
}

function setMode(mode) {
  const script = mode === "script";
  els.pane.classList.toggle("script", script);
  els.body.hidden = !script;
  for (const radio of els.radios) radio.checked = radio.value === mode;
  for (const node of els.pane.querySelectorAll(".form-only")) node.hidden = script;
  for (const node of els.pane.querySelectorAll(".script-only")) node.hidden = !script;
  if (els.title) els.title.textContent = script ? "program.py" : "kernel.py";   // the file the server runs
}

function loadScript(spec) {
  const options = spec.options || {};
  setMode(spec.mode === "script" ? "script" : "form");
  const value = (key) => options[key] ?? rules[key].default;
  els.trace.checked = value("trace");
  els.bench.checked = value("bench");
  els.ir.checked = value("ir");
  els.timeline.checked = value("timeline");
  els.allPoints.checked = value("benchmarks") === "all";
  selected = Number.isInteger(options.launch) ? options.launch : null;
  shown = null;
  renderLaunches();
}

// What a click on `launch` of a listing will cost, said before it costs it: {replay, short, words}.
// `traced`: the click asks for a trace (a launch's kept run is its trace: without one it launches).
export function clickCost(launches, launch, changed, traced = true) {
  const took = Number.isFinite(launches.program_ms) ? formatElapsed(launches.program_ms) : null;
  const rerun = (why) => ({ replay: false, short: took ? `re-run · ${took}` : "re-run",
                            words: `re-runs the whole program${took ? ` (took ${took})` : ""}: ${why}` });
  if (changed) return rerun("the program changed since its launches were listed");
  if (traced && launches.replay?.as_ran?.includes(launch.index)) {
    return { replay: true, asRan: true, short: "replay",
             words: "shows it as the program ran it (its trace and time, kept from that run): neither the program "
                    + "nor the launch runs again" };
  }
  if (launches.replay?.kept?.includes(launch.index)) {
    const own = Number.isFinite(launch.ms) ? ` (it took ${formatMs(launch.ms)} in the program)` : "";
    return { replay: true, short: "replay",
             words: `replays this launch alone${own}, from the inputs it received: the program does not run again` };
  }
  return rerun(launches.replay?.why || "its inputs were not kept from the run that listed it");
}

// What a click on `launch` of the listing shown costs, as the page's options stand.
const costOf = (launch) => clickCost(shown.launches, launch, edited, els.trace.checked);

// The line under the list: what a click costs, for the row under the pointer or focus, else for any row.
function sayCost(launch) {
  const launches = shown?.launches;
  const others = launches ? launches.list.filter((other) => other.index !== launches.selected) : [];
  els.cost.hidden = !others.length;
  if (!others.length) return;
  if (launch) {
    els.cost.textContent = launch.index === launches.selected ? `Launch ${launch.index} is the one shown.`
      : `A click on launch ${launch.index} ${costOf(launch).words}.`;
    return;
  }
  const costs = others.map(costOf);
  const rerun = costs.find((cost) => !cost.replay);
  els.cost.textContent = !rerun && costs.every((cost) => cost.asRan) ? `A click on another launch ${costs[0].words}.`
    : !rerun ? "A click on another launch replays it alone, in about the time it took in the program "
               + "(Time), from the inputs it received: the program does not run again."
    : costs.some((cost) => cost.replay) ? `A click on a launch marked “replay” shows it alone, without running the program; on any other it ${rerun.words}.`
    : `A click on another launch ${rerun.words}.`;
}

function launchRow(launch, chosen) {
  // An unchecked launch that ran (on a GPU, one the GPU tracer cannot see: the notes say why).
  const [word, tone] = launch.bounds === "unchecked" && launch.ms !== null ? ["unchecked", "bounds-none"]
    : BOUNDS[launch.bounds] || [launch.bounds, "bounds-none"];
  const pick = () => {
    if (launch.index === chosen) return;
    selected = launch.index;
    emit("launch-selected", { index: launch.index });
  };
  const toForm = h("button", { type: "button", class: "button small ghost to-form",
                               title: "Make a form run of this launch: its kernel, inputs of the same shapes, dtypes and strides, its arguments and grid",
                               onclick: (event) => { event.stopPropagation(); emit("launch-to-form", { launch }); } },
                   "Form");
  const cost = launch.index === chosen ? null : costOf(launch);
  return h("tr", { class: launch.index === chosen ? "selected" : null, tabindex: 0, "aria-selected": String(launch.index === chosen),
                   dataset: { index: String(launch.index), cost: cost ? (cost.replay ? "replay" : "rerun") : "shown" },
                   title: cost ? `Click: ${cost.words}` : null, onclick: pick,
                   onmouseenter: () => sayCost(launch), onmouseleave: () => sayCost(null),
                   onfocus: () => sayCost(launch), onblur: () => sayCost(null),
                   onkeydown: (event) => { if (event.key === "Enter" || event.key === " ") { event.preventDefault(); pick(); } } },
           h("td", {}, String(launch.index)), h("td", {}, launch.kernel), h("td", {}, launch.line ?? "–"),
           h("td", {}, formatTuple(trimmed(launch.grid))), h("td", {}, launch.ms === null ? "–" : formatMs(launch.ms)),
           h("td", { class: tone }, word),
           h("td", { class: cost ? (cost.replay ? "cost-replay" : "cost-rerun") : "cost-shown" }, cost ? cost.short : "shown"),
           h("td", {}, toForm));
}

function trimmed(grid) {
  const axes = [...grid];
  while (axes.length > 1 && axes[axes.length - 1] === 1) axes.pop();
  return axes;
}

function renderLaunches() {
  const launches = shown?.launches;
  const rows = launches ? launches.list.map((launch) => launchRow(launch, launches.selected)) : [];
  replaceChildren(els.tbody, rows);
  // A script's list, verdicts and times are its program's own report (result.claims): the page says so,
  // beside the server's own check of the shown launch (result.server_check), made without the program.
  els.claim.hidden = !(shown?.claims || []).includes("launches");
  const check = shown?.server_check;
  els.serverCheck.hidden = !check;
  if (check) {
    const [word] = BOUNDS[check.bounds] || [check.bounds];
    els.serverCheck.textContent = check.bounds === "unchecked"
      ? `The server could not check launch ${check.launch} again without the program.`
      : `The server checked launch ${check.launch} again, without the program: ${word}.`;
    els.serverCheck.title = check.message || "";
  }
  els.table.hidden = !rows.length;
  sayCost(null);
  els.empty.hidden = Boolean(rows.length);
  if (!launches) els.empty.textContent = "Press Run: the launches appear here.";
  else if (!launches.total) els.empty.textContent = "The program launched no Triton kernel.";
  else if (launches.total > launches.list.length) {
    els.empty.hidden = false;
    els.empty.textContent = `…and ${launches.total - launches.list.length} more launches, each bounds-checked, not listed.`;
  }
}

// optionRules: the spec's options as the server's schema gives them (spec_schema.options).
export function initScript(pane, optionRules) {
  rules = optionRules;
  els = {
    pane, body: pane.querySelector("#script-body"), table: pane.querySelector("#launches-table"),
    tbody: pane.querySelector("#launches-table tbody"), empty: pane.querySelector("#launches-empty"),
    claim: pane.querySelector("#launches-claim"), serverCheck: pane.querySelector("#launches-server-check"),
    cost: pane.querySelector("#launches-cost"),
    radios: [...pane.querySelectorAll('input[name="run-mode"]')],
    trace: pane.querySelector("#script-trace"), bench: pane.querySelector("#script-bench"),
    ir: pane.querySelector("#script-ir"), timeline: pane.querySelector("#script-timeline"),
    allPoints: pane.querySelector("#script-all-points"),
    title: document.querySelector("#editor-title"),
  };
  for (const radio of els.radios) {
    radio.addEventListener("change", () => { if (radio.checked) { setMode(radio.value); emit("run-mode-changed", { mode: radio.value }); } });
  }
  on("spec-loaded", ({ spec }) => loadScript(spec));
  // The launch shown is the one asked for next: an edit keeps it (the program's launches keep their
  // order while its kernels change); Compare says so where a run shows another launch than its pin.
  on("run-result", ({ result }) => {
    if (!result.launches) return;
    shown = result;
    listed = sent;
    edited = false;
    const stillThere = selected !== null && selected < result.launches.total;   // (a launch that failed showed none)
    selected = result.launches.selected ?? (stillThere ? selected : null);
    renderLaunches();
  });
  on("launch-selected", ({ index }) => { selected = index; });
  on("timeline-requested", ({ mode }) => {  // the Timings tab's one click: the shown launch's timeline
    if (mode !== "script") return;
    els.timeline.checked = true;
    emit("run-requested");
  });
  // A replay needs the program as it was listed: an edit, or another set of its benchmark points,
  // makes a click run it again, which the list says at once.
  let source = null;
  const changed = () => {
    const now = Boolean(listed) && (source !== null && source !== listed.source || els.allPoints.checked !== listed.benchmarks);
    if (shown && now !== edited) { edited = now; renderLaunches(); }
  };
  on("source-changed", (event) => { source = event.source; changed(); });
  on("run-started", ({ spec }) => {
    if (spec?.mode === "script") sent = { source: spec.source, benchmarks: spec.options?.benchmarks === "all" };
  });
  els.allPoints.addEventListener("change", changed);
  els.trace.addEventListener("change", () => { if (shown) renderLaunches(); });  // a launch's kept run is its trace
}

// The launch a script's result shows (a record of result.launches.list), or null.
export function shownLaunch(result) {
  const launches = result?.launches;
  return launches ? launches.list.find((launch) => launch.index === launches.selected) ?? null : null;
}

// A launch as Compare names it across runs: its kernel and which of that kernel's launches it is
// (the 2nd add_kernel launch), its index and grid aside: an edit may move them.
export function launchIdentity(result, launch) {
  const sameKernel = result.launches.list.filter((other) => other.kernel === launch.kernel && other.index <= launch.index);
  return { kernel: launch.kernel, nth: sameKernel.length };
}

export function describeLaunch(launch) {
  return `launch ${launch.index} (${launch.kernel}, grid ${formatTuple(trimmed(launch.grid))})`;
}
