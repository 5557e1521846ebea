// The Diagram tab: the shown result's trace drawn (diagram.js, loaded with plotly when first
// needed), or why there is none; a program the trace left out fetched by running it again.
import { h } from "../shared/dom.js";
import { loadPlotly } from "../shared/plotly.js";
import { postRun } from "../shared/provenance.js";

let panel = null;
let page = null;
let drawn = false;

function diagramMessage(text, ...more) {
  panel.replaceChildren(h("div", { class: "empty-state" }, text, ...more));
}

// A run that stopped before its accesses were recorded: the diagram says why and leads to the
// error card, where the phase, the line and the fix are.
function diagramErrorMessage(error) {
  const where = error.line ? ` on line ${error.line}` : "";
  diagramMessage(`No diagram: the run stopped with ${/^[aeiou]/i.test(error.phase) ? "an" : "a"} ${error.phase} error${where} `
      + "before the kernel's accesses were recorded.",
    page.showResults ? h("p", {}, h("button", { type: "button", class: "button small", id: "diagram-show-error",
                                                 onclick: page.showResults }, "See the error")) : null);
}

// Why a run has no picture, in the run's own words where it gave them (result.notes).
function noDiagramReason(result) {
  if (!result) return "Run the kernel to see which program reads and writes which element.";
  const notes = (result.notes || []).filter((note) => /trace/i.test(note));
  if (notes.length) return `No diagram for this run: ${notes.join(" ")}`;
  if (!page.traceAsked()) return "No diagram for this run: tick trace in the Options row to record the kernel's accesses.";
  return "No diagram for this run: the server recorded no trace.";
}

// diagram.js is optional: without it the tab says so and the rest of the page works.
export async function drawDiagram() {
  if (drawn) return;
  drawn = true;
  const { result, pid, rowWidth } = page.shown();
  if (result?.error && !result.trace) {
    diagramErrorMessage(result.error);
    return;
  }
  if (!result || !result.trace) {
    diagramMessage(noDiagramReason(result));
    return;
  }
  try {
    const [{ renderDiagram }] = await Promise.all([import("./diagram.js"), loadPlotly()]);
    panel.replaceChildren();
    await renderDiagram(panel, result.trace, { selectedPid: pid, rowWidth, maxRowWidth: page.maxRowWidth,
                                               fetchProgram: page.shown().spec && fetchProgram });
  } catch (error) {
    console.error(error);
    diagramMessage(`The diagram could not be drawn: ${error.message}`);
  }
}

// A program the shown trace left out (a sampled launch): the run that made the trace again, with
// only that program recorded and nothing else asked for. Resolves with the program; throws the reason.
async function fetchProgram(pid) {
  const spec = structuredClone(page.shown().spec);
  spec.options = { ...spec.options, trace_pid: pid, bench: false, ir: false, trace: true };
  if (spec.mode !== "script") spec.options = { ...spec.options, check: false, sweep: null, step_pid: null };
  let response, body;
  try {
    response = await postRun(spec);
    body = await response.json();
  } catch (error) {
    throw new Error(`the server did not answer (${error.message})`);
  }
  if (!response.ok) throw new Error(body?.error?.message || `the server answered ${response.status}`);
  const same = (program) => pid.every((v, axis) => v === (program.pid[axis] ?? 0));
  const program = body.trace?.programs?.find(same);
  if (program) return program;
  throw new Error(body.error?.message || "the server recorded no accesses for it");
}

// The shown result changed: drawn again now if the tab is shown, else when it is.
export function redrawDiagram() {
  drawn = false;
  if (page.visible()) drawDiagram();
}

// Drawn again when next shown (another program to select first).
export function forgetDiagram() {
  drawn = false;
}

// element: the tab's panel; hooks: {shown(): {result, spec (the spec whose run it is), pid, rowWidth},
// visible(), traceAsked(): whether the page's spec asks for a trace, showResults (null: no Results
// tab), maxRowWidth (the server's schema)}.
export function initDiagramTab(element, hooks) {
  panel = element;
  page = hooks;
}
