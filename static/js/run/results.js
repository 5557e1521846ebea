// The status line (the phases of the current run as they stream in) and the Results tab:
// the verdict, the error card, the launch, the run's notes and warnings, the coverage verdicts of
// the written tensors, each checked output, and the kernel's stdout.
import { emit, on } from "../shared/hub.js";
import { h, replaceChildren, notesList } from "../shared/dom.js";
import { formatCount, formatElapsed, formatNumber, formatTuple, phaseWords, plural } from "../shared/format.js";
import { errorCard } from "./error-card.js";
import { coverageVerdicts } from "./trace-model.js";
import { coverageText, unwrittenAdvice, UNWRITTEN_ADVICE } from "./trace-words.js";

// The phases a run reports (run-status), as the status line names them.
const PHASE_LABELS = {
  queued: "queued", starting: "starting", compiling: "compiling", running: "running",
  checking: "checking", bench: "timing", ir: "IR",
};

// ---- status line ----

class StatusLine {
  constructor(el) {
    this.el = el;
    this.idle();
  }

  idle() {
    this.el.dataset.state = "idle";
    replaceChildren(this.el, h("span", { class: "message" }, "Ready. Press Run to compile and launch the kernel."));
  }

  start() {
    this.phases = [];
    this.startedAt = performance.now();
    this.el.dataset.state = "running";
    this.phase({ phase: "queued", message: "sending the run to the server" });
  }

  phase({ phase, message }) {
    if (!this.phases.includes(phase)) this.phases.push(phase);
    const current = this.phases[this.phases.length - 1];
    const steps = this.phases.flatMap((p, i) => [
      i ? h("span", { class: "sep" }, "›") : null,
      h("span", { class: `step ${p === current ? "current" : "done"}` }, PHASE_LABELS[p] || p),
    ]);
    replaceChildren(this.el, h("span", { class: "spinner" }), h("span", { class: "steps" }, steps),
      h("span", { class: "message", title: message || "" }, message || ""));
  }

  finish(result) {
    const seconds = this.startedAt ? formatElapsed(performance.now() - this.startedAt) : null;
    const verdict = {
      ok: result.check && result.check.ok ? "✓ outputs match" : "✓ ran",
      mismatch: "✗ mismatch",
      error: `✗ ${result.error ? phaseWords(result.error.phase) : "error"}`,
    }[result.status] || result.status;
    const trace = result.trace;
    const facts = [
      trace && trace.programs_total !== undefined ? plural(trace.programs_total, "program") : null,
      result.device ? (result.device.kind === "gpu" ? result.device.name : "interpreter") : null,
      seconds,
    ].filter(Boolean).join(" · ");
    this.el.dataset.state = result.status;
    replaceChildren(this.el, h("span", { class: "verdict" }, verdict), h("span", { class: "facts" }, facts));
  }
}

// ---- the Results tab ----

function emptyState() {
  const mac = /Mac|iPhone|iPad/.test(navigator.platform);
  const embed = document.body.classList.contains("embed");
  const step = (title, ...text) => h("li", {}, h("b", {}, title), " ", ...text);
  return h("div", { class: "empty-state" },
    h("p", {}, "Press ", h("b", {}, "Run"), " (", h("kbd", {}, mac ? "⌘" : "Ctrl"), " + ", h("kbd", {}, "Enter"), ") to compile and launch the kernel."),
    embed ? null : h("ol", { class: "primer" },
      step("Grid.", "How many programs run. Each is a copy of the kernel that gets its own ", h("code", {}, "tl.program_id"), "."),
      step("Arguments.", "Tensors arrive as pointers; ", h("code", {}, "tl.constexpr"), " values are fixed when the kernel is compiled."),
      step("Check.", "Each output with a reference is compared with PyTorch, element by element."),
      step("Diagram.", "Shows which program loaded and stored which element, and which lanes the mask switched off.")));
}

function summary(result) {
  const outputs = result.check ? Object.entries(result.check.outputs || {}) : [];
  if (result.status === "mismatch") {
    const bad = outputs.filter(([, o]) => !o.ok).map(([name, o]) => `${name}: ${formatCount(o.mismatched)}`
      + (o.numel ? ` of ${formatCount(o.numel)}` : "") + " elements differ"
      + (o.unwritten ? `, ${formatCount(o.unwritten)} never written` : ""));
    return h("div", { class: "summary" }, h("span", { class: "summary-icon bad" }, "✗"),
      h("div", {}, "Output differs from the reference", h("div", { class: "sub" }, bad.join(" · "))));
  }
  if (outputs.length) {
    return h("div", { class: "summary" }, h("span", { class: "summary-icon ok" }, "✓"),
      h("div", {}, outputs.length === 1 ? "The output matches the reference" : `All ${outputs.length} outputs match the reference`,
        h("div", { class: "sub" }, "Every element is within tolerance and was written by some program.")));
  }
  if (result.launches) return scriptSummary(result.launches);
  return h("div", { class: "summary" }, h("span", { class: "summary-icon none" }, "✓"),
    h("div", {}, "Ran without errors",
      h("div", { class: "sub" }, "Nothing was checked: give an output a reference in the Inputs table to compare it with PyTorch.")));
}

// A script (docs/run-spec.md, script mode) checks itself: it ran to its end, its asserts held.
function scriptSummary(launches) {
  const shown = launches.selected === null ? "" : `; the diagram, timings and IR are of launch ${launches.selected}`;
  if (launches.replay?.replayed) {
    return h("div", { class: "summary" }, h("span", { class: "summary-icon ok" }, "✓"),
      h("div", {}, `Launch ${launches.selected} replayed alone`,
        h("div", { class: "sub" }, "From the inputs it received when the program ran: the program did not run again. "
                                   + "The list of launches and the benchmarks are that run's.")));
  }
  return h("div", { class: "summary" }, h("span", { class: "summary-icon ok" }, "✓"),
    h("div", {}, "The program ran to its end",
      h("div", { class: "sub" }, launches.total
        ? `Its own checks held. ${plural(launches.total, "kernel launch", "kernel launches")}, each in bounds${shown}.`
        : "It launched no Triton kernel.")));
}

// A run whose check is still to come (its trace came first): no verdict yet, and none guessed.
function pendingSummary() {
  return h("div", { class: "summary pending" }, h("span", { class: "spinner" }),
    h("div", {}, "Checking the outputs…", h("div", { class: "sub" }, "The kernel ran; its outputs are being compared with the reference.")));
}

// Whether a run of `spec` checks its outputs (docs/run-spec.md: options.check, on by default).
function checks(spec) {
  return spec?.options?.check !== false && Object.keys(spec?.reference || {}).length > 0;
}

function launchFacts(result) {
  const trace = result.trace;
  if (!trace) return null;
  const grid = trace.grid || [];
  const traced = trace.programs_traced !== undefined && trace.programs_traced !== trace.programs_total
    ? h("span", {}, "traced ", h("b", {}, formatCount(trace.programs_traced))) : null;
  return h("div", { class: "launch-facts" },
    h("span", {}, "grid ", h("b", {}, formatTuple(grid))),
    h("span", {}, "programs ", h("b", {}, formatCount(trace.programs_total))),
    traced);
}

const COLUMNS = [
  ["output", "a tensor with a reference"],
  ["max abs err", "largest |kernel - reference| over the written elements"],
  ["max rel err", "largest |kernel - reference| / |reference|", "rel"],
  ["mismatched", "elements outside atol + rtol * |reference|, unwritten ones included"],
  ["unwritten", "elements no program stored to (still holding the poison value)"],
  ["atol", "absolute tolerance", "tol"],
  ["rtol", "relative tolerance", "tol"],
];

// What the trace says of each written tensor, where it is not simply "written exactly once": the
// Diagram tab's verdict (trace-model.js), in its words.
function coverageNotes(verdicts) {
  const items = [...verdicts.values()].filter((verdict) => !verdict.ok).map((verdict) =>
    h("li", { dataset: { tensor: verdict.tensor } }, coverageText(verdict).text, unwrittenAdvice(verdict) ? ` ${unwrittenAdvice(verdict)}` : ""));
  return items.length ? h("ul", { class: "coverage-notes" }, items) : null;
}

// The check per output; the trace's coverage verdict, where there is one, speaks for unwritten elements.
function outputsCard(check, verdicts) {
  const entries = Object.entries(check.outputs || {});
  if (!entries.length) return null;
  const rows = entries.map(([name, o]) => h("tr", { dataset: { output: name } },
    h("td", { class: "name" }, name, h("span", { class: `badge ${o.ok ? "ok" : "bad"}`,
      title: `within atol ${formatNumber(o.atol)} + rtol ${formatNumber(o.rtol)} × |reference|` }, o.ok ? "ok" : "mismatch")),
    h("td", { class: o.max_abs_err > o.atol ? "bad" : "" }, formatNumber(o.max_abs_err)),
    h("td", { class: "rel" }, formatNumber(o.max_rel_err)),
    h("td", { class: o.mismatched ? "bad" : "zero" }, formatCount(o.mismatched)),
    h("td", { class: o.unwritten ? "bad" : "zero" }, formatCount(o.unwritten)),
    h("td", { class: "zero tol" }, formatNumber(o.atol)),
    h("td", { class: "zero tol" }, formatNumber(o.rtol))));
  const notes = entries.filter(([name, o]) => o.unwritten && !verdicts.has(name)).map(([name, o]) =>
    h("p", { class: "output-note" }, `${plural(o.unwritten, "element")} of ${name} ${o.unwritten === 1 ? "was" : "were"} never written: `
      + `no program stored there. ${UNWRITTEN_ADVICE}`));
  return h("div", { class: "card" },
    h("div", { class: "card-head" }, "Check", h("span", { class: "muted" }, "kernel output vs. the PyTorch reference")),
    h("div", { class: "table-scroll" }, h("table", { class: "outputs" },
      h("thead", {}, h("tr", {}, COLUMNS.map(([label, title, cls]) => h("th", { title, class: cls }, label)))),
      h("tbody", {}, rows))),
    notes);
}

function stdoutCard(text, live) {
  const lines = text ? text.replace(/\n$/, "").split("\n").length : 0;
  return h("details", { class: "card stdout", open: true },
    h("summary", { class: "card-head" }, "stdout", h("span", { class: "muted" }, live ? "streaming…" : `${lines} line${lines === 1 ? "" : "s"}`)),
    h("pre", {}, text));
}

// A run that hit the time limit: the phase it was in when the limit struck (the status line saw it
// last), and what to turn off or make smaller to fit.
const TIMEOUT_ADVICE = {
  queued: "It never started: the server was busy. Try again in a moment.",
  starting: "It was still starting. Try again in a moment.",
  compiling: "Compiling took the time: a kernel this large may need a smaller BLOCK or fewer unrolled loops.",
  running: "Each program runs one after another (on the CPU in the interpreter): fewer programs (a bigger BLOCK) or smaller inputs fit; unticking trace in the Options row saves recording every access.",
  checking: "Comparing with the reference took the time: a smaller input fits, or untick check in the Options row.",
  bench: "Timing the kernel took the time: untick bench in the Options row.",
  ir: "Compiling the IR took the time: untick IR in the Options row.",
};

function timeoutAdvice(phase) {
  const label = PHASE_LABELS[phase] || phase || "starting";
  return h("p", { class: "hint timeout-advice" }, `The limit struck while ${label === "IR" ? "compiling the IR" : label}. `,
    TIMEOUT_ADVICE[phase] || "");
}

// The warnings the run raised (result.warnings): each at its line of the source (a link to it), else
// where Triton raised it, with how often.
function warningsCard(warnings) {
  if (!warnings || !warnings.length) return null;
  const where = (w) => (w.line !== null
    ? h("button", { type: "button", class: "link-button", title: "Show this line in the editor",
                    onclick: () => emit("jump-to-line", { line: w.line }) }, `line ${w.line}`)
    : h("code", {}, w.where));
  return h("ul", { class: "warnings", "aria-label": "warnings" }, warnings.map((w) => h("li", {},
    where(w), " ", h("span", { class: "category" }, w.category), " ", w.message,
    w.count > 1 ? h("span", { class: "count" }, ` (${plural(w.count, "time")})`) : null)));
}

function errorCardOf(error, lastPhase) {
  const card = Object.assign(errorCard(error), { id: "error-card" });
  if (error.phase === "timeout") card.append(timeoutAdvice(lastPhase));
  return card;
}

export function initResults(statusEl, resultsEl) {
  const status = new StatusLine(statusEl);
  let liveStdout = "";
  replaceChildren(resultsEl, emptyState());

  on("run-requested", () => {
    status.start();
    resultsEl.classList.add("stale");   // the last run's results stay readable until the new ones arrive
  });
  on("run-status", (event) => status.phase(event));
  on("run-stdout", ({ text }) => {
    liveStdout += text;
    const card = stdoutCard(liveStdout, true);
    const old = resultsEl.querySelector(".stdout");
    if (old) old.replaceWith(card); else resultsEl.append(card);
  });
  let checking = false;   // the current run will send its check
  on("run-started", ({ spec }) => { liveStdout = ""; checking = checks(spec); });
  // The verdict and the launch as soon as their parts arrive; the timings and the IR come later.
  on("run-partial", ({ part, result }) => {
    if (part !== "check" && part !== "trace") return;
    resultsEl.classList.remove("stale");
    const verdicts = coverageVerdicts(result.trace);
    replaceChildren(resultsEl,
      result.check || !checking ? summary(result) : pendingSummary(),
      launchFacts(result),
      coverageNotes(verdicts),
      result.check ? outputsCard(result.check, verdicts) : null,
      liveStdout ? stdoutCard(liveStdout, true) : null);
  });
  on("run-result", ({ result }) => {
    status.finish(result);
    resultsEl.classList.remove("stale");
    const verdicts = coverageVerdicts(result.trace);
    replaceChildren(resultsEl,
      result.error ? errorCardOf(result.error, status.phases?.at(-1)) : summary(result),
      launchFacts(result),
      notesList(result.notes),
      warningsCard(result.warnings),
      coverageNotes(verdicts),
      result.check ? outputsCard(result.check, verdicts) : null,
      result.stdout ? stdoutCard(result.stdout, false) : null);
  });
  on("spec-loaded", () => { status.idle(); replaceChildren(resultsEl, emptyState()); });
}
