// Wires the page: reads the initial state, builds the panes, talks to the server over Socket.IO,
// and keeps the spec (plus the selected program and tab) as the one state of the page.
import { on, emit } from "./shared/hub.js";
import { h } from "./shared/dom.js";
import { createEditor, getSource, initTabSwitch, initWrapSwitch } from "./editor/editor.js";
import { initLaunch, readLaunch, checkLaunch } from "./editor/form.js";
import { initResults } from "./run/results.js";
import { initTimings } from "./run/timings.js";
import { initTimeline } from "./run/timeline.js";
import { initIr } from "./run/ir.js";
import { initLesson, lessonText } from "./teach/lesson.js";
import { initDrafts } from "./editor/drafts.js";
import { initHistory } from "./editor/history.js";
import { initShare, initExport, isOwnSnippet, linkPrompt } from "./editor/share.js";
import { initPuzzle, openingSpec, setPuzzleClass } from "./teach/puzzle.js";
import { initCompare } from "./run/compare.js";
import { initVersions } from "./run/versions.js";
import { readTriton } from "./editor/triton-picker.js";
import { initStep } from "./run/step.js";
import { uiRules } from "./shared/ui-rules.js";
import { initScript, optionsFor, scriptMode, scriptSpec } from "./run/script.js";
import { isForeign, setForeign } from "./shared/provenance.js";
import { connect } from "./run/connection.js";
import { drawDiagram, forgetDiagram, initDiagramTab, redrawDiagram } from "./run/diagram-tab.js";
import { initExamples } from "./editor/examples.js";
import { initSplitters } from "./editor/splitters.js";
import { followInbox } from "./teach/class-message.js";

const $ = (selector) => document.querySelector(selector);
const initial = JSON.parse($("#initial-state").textContent);
const ui = { pid: null, pane: null, row_width: null, ir_stage: null };   // app/web/share.py UI_FIELDS
let loadedSpec = null;      // the last spec loaded: keeps the options the launch form does not edit (seed, atol, arch, ...)
let lastResult = null;
let sentSpec = null;        // the spec of the run under way
let resultSpec = null;      // the spec whose run gave lastResult: a program its trace left out is asked of it
let traceArrived = false;   // the current run's trace came as a part: its result's trace is the same, already drawn

// ---- the UI state (a shared link's, checked again here: the server already drops bad fields) ----

const PANES = [...document.querySelectorAll("[data-tab]")].map((tab) => tab.dataset.tab);

function validPane(pane) {
  return PANES.includes(pane) ? pane : null;
}

const { irStages, maxRowWidth, validPid, validRowWidth, validIrStage } = uiRules(initial.spec_schema.ui);

// ---- the spec ----

function getSpec() {
  if (scriptMode()) return scriptSpec(getSource(editorView), { ...(loadedSpec && loadedSpec.options), triton: readTriton() });
  const launch = readLaunch();
  return {
    version: 1,
    source: getSource(editorView),
    kernel: launch.kernel,
    inputs: launch.inputs,
    args: launch.args,
    grid: launch.grid,
    reference: launch.reference,
    // a spec loaded as a script kept options only a script takes: a form run leaves them out
    options: optionsFor("form", { ...(loadedSpec && loadedSpec.options), ...launch.options }, initial.spec_schema.options),
  };
}

function setSpec(spec, uiState = {}) {
  const saved = uiState && typeof uiState === "object" ? uiState : {};
  loadedSpec = structuredClone(spec);
  ui.pid = validPid(saved.pid);
  ui.row_width = validRowWidth(saved.row_width);
  ui.ir_stage = validIrStage(saved.ir_stage);
  lastResult = null;
  emit("spec-loaded", { spec: loadedSpec, ui: { ...ui, pane: validPane(saved.pane) } });
  showTab(validPane(saved.pane) || defaultPane(spec));
}

// An example (or any spec with a lesson) opens on its lesson, beside its kernel; a shared link on
// Results, unless it was shared on another tab. A run shows its results.
function defaultPane(spec) {
  return lessonText(spec.source) !== null && !initial.snippet_id ? "lesson" : "results";
}

// ---- tabs ----

function showTab(name) {
  if (!PANES.includes(name)) name = ["results", "diagram", "lesson"].find((pane) => PANES.includes(pane));
  ui.pane = name;
  for (const tab of document.querySelectorAll("[data-tab]")) {
    tab.classList.toggle("active", tab.dataset.tab === name);
    tab.setAttribute("aria-selected", String(tab.dataset.tab === name));
    tab.tabIndex = tab.dataset.tab === name ? 0 : -1;   // one tab stop; the arrows move between tabs
  }
  for (const panel of document.querySelectorAll("[data-panel]")) panel.classList.toggle("active", panel.dataset.panel === name);
  emit("tab-shown", { tab: name });
  if (name === "diagram") drawDiagram();
}

// ---- a run ----

// A result with nothing to show yet, as the server makes one (spec_schema.empty_result).
function emptyResult() {
  return structuredClone(initial.spec_schema.empty_result);
}

// ---- the header ----

function showDevice(device) {
  const badge = $("#device-badge");
  if (!device) return;
  badge.hidden = false;
  badge.classList.toggle("gpu", device.kind === "gpu");
  badge.title = `triton ${device.triton} · torch ${device.torch}`;
  badge.replaceChildren(h("b", {}, device.kind === "gpu" ? device.name : "Interpreter"),
    device.kind === "gpu" ? "" : " CPU", h("span", { class: "device-version" }, ` · triton ${device.triton}`));
}

function markResultsTab(result) {
  const tab = document.querySelector('[data-tab="results"]');
  if (!tab) return;   // an embed without Results
  tab.querySelector(".dot")?.remove();
  tab.append(h("span", { class: `dot ${result.status === "ok" ? "ok" : "bad"}` }));
}

function toast(text, kind = "error") {
  const note = h("div", { class: `toast ${kind}`, role: kind === "error" ? "alert" : "status" }, text);
  document.body.append(note);
  setTimeout(() => note.remove(), 6000);
}

// ---- start ----

const mac = /Mac|iPhone|iPad/.test(navigator.platform);
$("#run-shortcut").textContent = mac ? "⌘ ↵" : "Ctrl ↵";
$("#run-button").title = `Compile and run the kernel (${mac ? "⌘" : "Ctrl"}+Enter)`;

const editorView = createEditor($("#editor"), "", { readOnly: Boolean(initial.embed?.readonly) });
initTabSwitch(editorView, $("#tab-indents"), $("#tab-hint"));
initWrapSwitch(editorView, $("#wrap-lines"));
initLaunch($("#launch"), initial.spec_schema, { deviceKind: initial.device_kind, timeoutS: initial.run_timeout_s });
initLesson($('[data-tab="lesson"]'), $("#lesson"));
initResults($("#status-line"), $("#results"));
initTimings($("#timings"));
initTimeline($("#timeline"));
initIr($("#ir"), irStages);
initDiagramTab($("#diagram"), {
  shown: () => ({ result: lastResult, spec: resultSpec, pid: ui.pid, rowWidth: ui.row_width }),
  visible: () => ui.pane === "diagram",
  traceAsked: () => getSpec().options.trace !== false,
  showResults: PANES.includes("results") ? () => showTab("results") : null,
  maxRowWidth,
});
initPuzzle({ tab: $('[data-tab="puzzle"]'), panel: $("#puzzle"), teachButton: $("#teach-button"), getSpec, setSpec,
             confirmReplace: (what) => drafts.confirmReplace(what), words: initial.spec_schema.failure_words });
if ($("#compare")) initCompare({ panel: $("#compare"), spec: getSpec, options: initial.spec_schema.options, stages: irStages });
if ($("#versions-compare")) initVersions({ host: $("#versions-compare"), spec: getSpec, tritons: initial.spec_schema.tritons });
if ($("#step")) initStep({ panel: $("#step"), spec: getSpec });
// The UI state a link saves: pane and pid always, the other fields only when set, so that a page
// saved again without them keeps the link it came from (links are content-addressed).
function getUi() {
  return Object.fromEntries(Object.entries(ui).filter(([key, value]) => value !== null || key === "pane" || key === "pid"));
}

const drafts = initDrafts({ getSpec, getUi, setSpec, banner: $("#draft-banner"), form: $("#launch") });
initShare({ button: $("#share-button"), popover: $("#share-popover"), urlInput: $("#share-url"), note: $("#share-note"),
            embedInput: $("#share-embed"),
            about: $("#share-about") && { form: $("#share-about"), toggle: $("#share-describe"), title: $("#share-title"),
                                          description: $("#share-description") },
            getSpec, getUi, isOurs: () => !isForeign(), onShared: () => drafts.markClean() });
initHistory({ button: $("#history-button"), menu: $("#history-menu"), getSpec, fromLink: isForeign,
              onPick: (run) => {
                if (!drafts.confirmReplace(`the run of ${run.spec.kernel || "a kernel"} from your history`)) return;
                setSpec(run.spec);
                setForeign(run.fromLink);
                drafts.save();
              } });
initExport({ button: $("#export-button"), getSpec, onError: toast });
initExamples($("#example-select"), initial, { setSpec, setForeign, drafts, toast });
$("#new-kernel")?.addEventListener("click", (event) => {
  if (!drafts.confirmReplace("a new, blank kernel")) event.preventDefault();
});
initSplitters();
initScript($("#launch"), initial.spec_schema.options);

// Run while the same launch is already under way (a changed constexpr just started it) sends nothing.
function runUnlessUnderWay() {
  if ($("#run-button").classList.contains("running") && sameLaunch(getSpec(), sentSpec)) return;
  emit("run-requested");
}

// Two specs that launch the same thing: a sweep's or a step's options are one run's, not the launch's.
function sameLaunch(a, b) {
  const plain = (spec) => spec && JSON.stringify({ ...spec, options: { ...spec.options, sweep: null, step_pid: null } });
  return Boolean(a && b) && plain(a) === plain(b);
}

$("#run-button").addEventListener("click", runUnlessUnderWay);
$("#stop-button").addEventListener("click", () => emit("stop-requested"));
document.addEventListener("keydown", (event) => {
  // Ctrl/Cmd+Enter anywhere on the page (the editor handles its own).
  if (event.key === "Enter" && (event.ctrlKey || event.metaKey) && !event.defaultPrevented && !editorView.hasFocus) {
    event.preventDefault();
    runUnlessUnderWay();
  }
});
for (const tab of document.querySelectorAll("[data-tab]")) tab.addEventListener("click", () => showTab(tab.dataset.tab));
// The tab list as the ARIA pattern has it: Left/Right (Home/End) move to the next visible tab and show it.
$(".tabs")?.addEventListener("keydown", (event) => {
  const tabs = [...document.querySelectorAll("[data-tab]")].filter((tab) => !tab.hidden);
  const at = tabs.indexOf(document.activeElement);
  const to = { ArrowRight: at + 1, ArrowLeft: at - 1, Home: 0, End: tabs.length - 1 }[event.key];
  if (at < 0 || to === undefined) return;
  event.preventDefault();
  const tab = tabs[(to + tabs.length) % tabs.length];
  showTab(tab.dataset.tab);
  tab.focus();
});
if ($("#open-full")) $("#open-full").href = location.pathname;

on("run-started", () => { traceArrived = false; });
// The verdict and the diagram as soon as their parts arrive, while the run goes on timing and compiling.
on("run-partial", ({ part, result }) => {
  if (part === "check") markResultsTab(result);
  if (part !== "trace") return;
  traceArrived = true;
  lastResult = result;
  resultSpec = sentSpec;
  redrawDiagram();
});
on("run-result", ({ result }) => {
  showDevice(result.device);
  markResultsTab(result);
  // The trace drawn from its part is this result's trace: kept as drawn (a program fetched into it
  // included), not drawn again.
  const drawn = traceArrived && result.trace && lastResult?.trace;
  traceArrived = false;
  lastResult = drawn ? { ...result, trace: lastResult.trace } : result;
  resultSpec = shownSpec(sentSpec, result);
  if (drawn) return;
  // An out-of-bounds error comes with the trace up to the offending access: its program is the one
  // to see first (until another is picked).
  if (result.error?.pid && result.trace) ui.pid = validPid(result.error.pid);
  redrawDiagram();
});
// The spec of what a result shows: a script's run asked for the program's default launch (or one
// gone since) shows the one it chose, which the page asks for from then on.
function shownSpec(spec, result) {
  if (!spec || spec.mode !== "script" || !result.launches || result.launches.selected === null) return spec;
  return { ...spec, options: { ...spec.options, launch: result.launches.selected } };
}

// A program fetched into the shown trace stays in it for every later drawing.
on("trace-extended", ({ from, trace }) => {
  if (lastResult?.trace === from) lastResult = { ...lastResult, trace };
});
// Script mode: another launch of the program to see (the run again, asking for it), or one made a form run.
on("launch-selected", () => emit("run-requested"));
on("launch-to-form", async ({ launch }) => {
  if (!drafts.confirmReplace(`a form run of launch ${launch.index} (${launch.kernel})`)) return;
  let response, body;
  try {
    response = await fetch("/api/launch-form", { method: "POST", headers: { "Content-Type": "application/json" },
                                                 body: JSON.stringify({ source: getSource(editorView), launch,
                                                                        seed: getSpec().options.seed ?? initial.spec_schema.options.seed.default }) });
    body = await response.json();
  } catch (error) {
    return toast(`The server did not answer (${error.message}).`);
  }
  if (!response.ok) return toast(`No form for this launch: ${body?.error?.message || response.status}`);
  setSpec(body.spec);
  drafts.save();
  if (body.notes?.length) toast(body.notes.join(" "), "info");  // which inputs hold the program's values
});
// A sweep is one run with options.sweep; the runs after it are plain runs again. What the launch
// form can tell is wrong is said on its fields, and the last result stays on screen.
on("sweep-requested", ({ sweep }) => {
  const problems = checkLaunch();
  if (problems.length) return emit("sweep-refused", { problems });
  loadedSpec.options = { ...loadedSpec.options, sweep };
  emit("run-requested");
  loadedSpec.options = { ...loadedSpec.options, sweep: null };
});
// The IR tab's target is an option of the spec (so Share keeps it); a new target means a new compile.
on("ir-target-selected", ({ arch }) => {
  loadedSpec.options = { ...loadedSpec.options, arch };
  emit("run-requested");
});
// Trying another num_warps, num_stages or constexpr value re-runs once a run has been seen
// (Triton's cache is shared between runs, so a value tried before does not compile again); one
// changed while a run is under way runs when that one ends.
let rerunWhenDone = false;
on("meta-parameter-changed", () => {
  if (!lastResult) return;
  if ($("#run-button").classList.contains("running")) rerunWhenDone = true;
  else runUnlessUnderWay();
});
on("run-result", () => {
  if (!rerunWhenDone) return;
  rerunWhenDone = false;
  if (!sameLaunch(getSpec(), sentSpec)) setTimeout(runUnlessUnderWay);   // after every pane has the result
});

// A result whose kernel or launch changed since its run is marked stale at once, in every pane
// that shows it, until the next run.
function markStale() {
  const stale = Boolean(lastResult && resultSpec) && !sameLaunch(getSpec(), resultSpec);
  for (const pane of ["#results", "#diagram", "#timings", "#timeline"]) $(pane)?.classList.toggle("edited", stale);
  $("#status-line").dataset.edited = String(stale);
}
on("source-changed", markStale);
$("#launch").addEventListener("input", markStale);
$("#launch").addEventListener("change", markStale);
on("run-result", markStale);
on("run-partial", markStale);
on("spec-loaded", markStale);
on("program-selected", ({ pid }) => { ui.pid = pid || null; });
on("row-width-changed", ({ width }) => { ui.row_width = width; });
on("ir-stage-selected", ({ stage }) => { ui.ir_stage = stage; });
on("run-requested", () => { if (ui.pane === "lesson") showTab("results"); });
// On a phone the output sits under the code: Run brings it into view (under the sticky top bar),
// and a puzzle's verdict once it is graded.
const phone = window.matchMedia("(max-width: 600px)");
const scrollUnderTopbar = (element) => {
  const top = element.getBoundingClientRect().top + window.scrollY - $(".topbar").offsetHeight;
  window.scrollTo({ top, behavior: "instant" });
};
on("run-requested", () => { if (phone.matches) scrollUnderTopbar($("#column-right")); });
on("run-result", () => {
  if (phone.matches && ui.pane === "puzzle") requestAnimationFrame(() => $("#puzzle-verdict")?.scrollIntoView({ block: "nearest" }));
});
on("run-result", () => { if (ui.pane === "lesson") showTab("results"); });
on("show-program", ({ pid }) => {
  ui.pid = validPid(Array.isArray(pid) ? pid : [pid, 0, 0]);
  forgetDiagram();
  showTab("diagram");
});
on("spec-loaded", () => {
  document.querySelector('[data-tab="results"] .dot')?.remove();
  redrawDiagram();
});
// Back and Forward open the page at the address they reach; the edits of the one left are its draft.
window.addEventListener("popstate", () => { drafts.save(); location.reload(); });

connect({ getSpec, checkLaunch, emptyResult, onSocket: (socket) => followInbox(socket, ({ class: found }) => setPuzzleClass(found)), onSend: (spec) => { sentSpec = spec; } });
setSpec(openingSpec(initial.spec), initial.ui);
drafts.markClean();
drafts.offerRestore();
// A shared link never runs on opening: it shows the kernel, its launch and its tab, and over the
// output a prompt whose button runs it (then the tab and program it was shared with are drawn).
// Any run, or another spec loaded, takes the prompt away.
if (initial.fork_of) setForeign(!isOwnSnippet(initial.fork_of));
if (initial.snippet_id) {
  const own = isOwnSnippet(initial.snippet_id);
  setForeign(!own);
  const prompt = linkPrompt({ own, pane: ui.pane, pid: ui.pid, onRun: () => emit("run-requested"),
                              title: initial.ui?.title, description: initial.ui?.description });
  if ($("#share-about")) {   // Share again keeps them (an embed has no Share)
    $("#share-title").value = initial.ui?.title || "";
    $("#share-description").value = initial.ui?.description || "";
  }
  $(".tab-panels").append(prompt);
  on("run-requested", () => prompt.remove());
  on("spec-loaded", () => prompt.remove());
  // Fork: the same kernel as an editable copy at an address of its own (app/web/editor.py, /fork/<id>),
  // where a reload finds the copy's edits and not the link's.
  $("#fork-button")?.addEventListener("click", () => {
    prompt.remove();
    history.pushState(null, "", `/fork/${encodeURIComponent(initial.snippet_id)}`);
    $("#fork-button").remove();
    drafts.moved();
    toast("Forked: this copy is yours to edit. Share it to get a link of its own.", "info");
  });
}
window.playground = { getSpec, setSpec, editorView };
