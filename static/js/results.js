// The status line (the phases of the current run as they stream in) and the Results tab:
// the verdict, the error card, the launch, the run's notes, each checked output, and the kernel's stdout.
import { on, emit } from "./hub.js";
import { h, replaceChildren, notesList } from "./dom.js";

const PHASE_LABELS = {
  queued: "queued", compiling: "compiling", tracing: "tracing", running: "running",
  checking: "checking", bench: "timing", ir: "IR", done: "done",
};

export function formatPid(pid) {
  return Array.isArray(pid) ? `(${pid.join(", ")})` : String(pid);
}

function formatError(value) {
  if (value === null || value === undefined) return "–";
  if (!Number.isFinite(value)) return String(value);
  if (value === 0) return "0";
  return Math.abs(value) < 1e-3 || Math.abs(value) >= 1e4 ? value.toExponential(2) : value.toPrecision(3);
}

function formatCount(value) {
  return value === null || value === undefined ? "–" : value.toLocaleString("en-US");
}

function formatSeconds(ms) {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}

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

  phase({ phase, message, progress }) {
    if (!this.phases.includes(phase)) this.phases.push(phase);
    // A phase that reports its progress (0..1) gets a real bar instead of the sweeping one.
    if (typeof progress === "number") this.el.style.setProperty("--progress", `${Math.round(100 * progress)}%`);
    else this.el.style.removeProperty("--progress");
    const current = this.phases[this.phases.length - 1];
    const steps = this.phases.flatMap((p, i) => [
      i ? h("span", { class: "sep" }, "›") : null,
      h("span", { class: `step ${p === current ? "current" : "done"}` }, PHASE_LABELS[p] || p),
    ]);
    replaceChildren(this.el, h("span", { class: "spinner" }), h("span", { class: "steps" }, steps),
      h("span", { class: "message", title: message || "" }, message || ""));
  }

  finish(result) {
    const seconds = this.startedAt ? formatSeconds(performance.now() - this.startedAt) : null;
    const verdict = {
      ok: result.check && result.check.ok ? "✓ outputs match" : "✓ ran",
      mismatch: "✗ mismatch",
      error: `✗ ${result.error ? `${result.error.phase} error` : "error"}`,
    }[result.status] || result.status;
    const trace = result.trace;
    const facts = [
      trace && trace.programs_total !== undefined ? `${formatCount(trace.programs_total)} program${trace.programs_total === 1 ? "" : "s"}` : null,
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
  return h("div", { class: "summary" }, h("span", { class: "summary-icon none" }, "✓"),
    h("div", {}, "Ran without errors",
      h("div", { class: "sub" }, "Nothing was checked: give an output a reference in the Inputs table to compare it with PyTorch.")));
}

// The message without what the card's head already says: its type ("ValueError: ...") and its
// line ("line 37: ...", "... (line 41)"). Triton's error comes first; a plain-words hint, if any,
// follows a blank line.
function errorText(error) {
  let text = error.message || "(no message)";
  if (error.type) text = text.replace(`${error.type}: `, "");
  if (error.line) text = text.replace(`line ${error.line}: `, "").replace(` (line ${error.line})`, "");
  const [message, ...hint] = text.split("\n\n");
  return { message, hint: hint.join("\n\n") };
}

// The card for a failed run (or a failed IR compile, under its own title).
export function errorCard(error, title = `${error.phase || "run"} error`) {
  const where = h("span", { class: "where" },
    error.line ? h("button", { type: "button", class: "link-button", title: "Show this line in the editor",
                                onclick: () => emit("jump-to-line", { line: error.line }) }, `line ${error.line}`) : null,
    error.pid !== null && error.pid !== undefined
      ? h("button", { type: "button", class: "link-button", title: "Show this program in the diagram",
                      onclick: () => emit("show-program", { pid: error.pid }) }, `program ${formatPid(error.pid)}`)
      : null);
  const { message, hint } = errorText(error);
  return h("div", { class: "card error-card" },
    h("div", { class: "card-head" },
      h("span", { class: "phase" }, title),
      error.type && error.type !== "RunError" ? h("span", { class: "type" }, error.type) : null,  // RunError names no cause
      where),
    h("pre", {}, message),
    hint ? h("p", { class: "hint" }, hint) : null);
}

function launchFacts(result) {
  const trace = result.trace;
  if (!trace) return null;
  const grid = trace.grid || [];
  const traced = trace.programs_traced !== undefined && trace.programs_traced !== trace.programs_total
    ? h("span", {}, "traced ", h("b", {}, formatCount(trace.programs_traced))) : null;
  return h("div", { class: "launch-facts" },
    h("span", {}, "grid ", h("b", {}, `(${grid.join(", ")})`)),
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

function outputsCard(check) {
  const entries = Object.entries(check.outputs || {});
  if (!entries.length) return null;
  const rows = entries.map(([name, o]) => h("tr", { dataset: { output: name } },
    h("td", { class: "name" }, name, h("span", { class: `badge ${o.ok ? "ok" : "bad"}`,
      title: `within atol ${formatError(o.atol)} + rtol ${formatError(o.rtol)} × |reference|` }, o.ok ? "ok" : "mismatch")),
    h("td", { class: o.max_abs_err > o.atol ? "bad" : "" }, formatError(o.max_abs_err)),
    h("td", { class: "rel" }, formatError(o.max_rel_err)),
    h("td", { class: o.mismatched ? "bad" : "zero" }, formatCount(o.mismatched)),
    h("td", { class: o.unwritten ? "bad" : "zero" }, formatCount(o.unwritten)),
    h("td", { class: "zero tol" }, formatError(o.atol)),
    h("td", { class: "zero tol" }, formatError(o.rtol))));
  const notes = entries.filter(([, o]) => o.unwritten).map(([name, o]) =>
    h("p", { class: "output-note" }, `${formatCount(o.unwritten)} element${o.unwritten === 1 ? "" : "s"} of ${name} were never written: `
      + "no program stored there. Check that the grid covers the whole tensor and that the mask does not cut off real elements."));
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

export function initResults(statusEl, resultsEl) {
  const status = new StatusLine(statusEl);
  let liveStdout = "";
  replaceChildren(resultsEl, emptyState());

  on("run-requested", () => {
    status.start();
    resultsEl.classList.add("stale");   // the last run's results stay readable until the new ones arrive
  });
  on("run-status", (event) => { if (event.phase !== "done") status.phase(event); });
  on("run-stdout", ({ text }) => {
    liveStdout += text;
    const card = stdoutCard(liveStdout, true);
    const old = resultsEl.querySelector(".stdout");
    if (old) old.replaceWith(card); else resultsEl.append(card);
  });
  on("run-started", () => { liveStdout = ""; });
  on("run-result", ({ result }) => {
    status.finish(result);
    resultsEl.classList.remove("stale");
    replaceChildren(resultsEl,
      result.error ? Object.assign(errorCard(result.error), { id: "error-card" }) : summary(result),
      launchFacts(result),
      notesList(result.notes),
      result.check ? outputsCard(result.check) : null,
      result.stdout ? stdoutCard(result.stdout, false) : null);
  });
  on("spec-loaded", () => { status.idle(); replaceChildren(resultsEl, emptyState()); });
}
