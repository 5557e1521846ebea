// The Puzzle tab: a puzzle's statement, its hints one at a time, its tests' verdicts after a graded
// run, and the expected-vs-yours figure. Also "Make puzzle": a teacher turns the page's spec into a
// puzzle (its source the hidden solution, its reference the hidden check) and gets its link.
// The page knows the puzzle only by name (spec.options.puzzle) and its public side (/api/puzzles/<name>).
import { on } from "../shared/hub.js";
import { h, replaceChildren, withCode } from "../shared/dom.js";
import { formatCount, formatMoment, phaseWords } from "../shared/format.js";
import { isDone, markDone, solvedSource } from "./progress.js";
import { createCodeField, getSource } from "../editor/editor.js";
import { withoutLesson } from "./lesson.js";
import { MARKS, comparisonFigure, shownPart } from "../run/puzzle-figures.js";
import { loadPlotly } from "../shared/plotly.js";
import { stoppedAt } from "../run/trace-model.js";
import { stoppedText } from "../run/trace-words.js";

let state = null; // {puzzle, starter (its spec), shownHints, result, next: the course's next puzzle | null}
let elements = null;
let page = null; // {getSpec, setSpec, confirmReplace}
let sentSource = null; // the source of the run under way: what passed, when it passes
let failureWords = {}; // {failure: its sentence}, as the server words a failed test
let studentClass = null; // the class this browser's student is in ({code, title, puzzles}), or null

// A puzzle solved in this browser opens on the solution that passed, not on the starter (on its
// own page: a shared link shows what it was shared with).
export function openingSpec(spec) {
  const name = spec.options?.puzzle;
  const solved = name && location.pathname === `/puzzles/${encodeURIComponent(name)}` ? solvedSource(name) : null;
  return solved ? { ...spec, source: solved } : spec;
}

// `code` spans and paragraphs of a statement or hint, never parsed as HTML.
function inline(text) {
  return text.split(/(`[^`]+`)/).map((part) => (part.startsWith("`") && part.endsWith("`") && part.length > 2
    ? h("code", {}, part.slice(1, -1)) : part));
}

function paragraphs(text) {
  return text.split(/\n\s*\n/).map((p) => h("p", {}, inline(p.replace(/\s*\n\s*/g, " "))));
}

function hintsBlock() {
  const { puzzle, shownHints } = state;
  const shown = puzzle.hints.slice(0, shownHints).map((hint, i) => h("li", { class: "puzzle-hint" }, h("b", {}, `Hint ${i + 1}. `), inline(hint)));
  const more = shownHints < puzzle.hints.length
    ? h("button", { type: "button", class: "button small", id: "puzzle-hint-button",
                    onclick: () => { state.shownHints += 1; render(); } },
        shownHints ? `Another hint (${shownHints + 1} of ${puzzle.hints.length})` : `Show a hint (1 of ${puzzle.hints.length})`)
    : null;
  return puzzle.hints.length ? h("div", { class: "puzzle-hints" }, h("ol", {}, shown), more) : null;
}

// Why a test failed: its `failures`, each the server's sentence (spec_schema.failure_words) with the
// test's counts filled in.
function failureText(test) {
  const fill = (words) => words.replace(/\{(\w+)\}/g, (_, key) => formatCount(test[key]));
  return withCode((test.failures ?? []).map((key) => fill(failureWords[key])).join(", "));
}

function testRow(label, test) {
  if (!test) return h("li", { class: "puzzle-test pending" }, h("span", { class: "verdict" }, "·"), label, h("span", { class: "why" }, "not run yet"));
  let why = "passes";
  if (test.error) why = `${phaseWords(test.error.phase)}${test.error.line ? ` at line ${test.error.line}` : ""}: ${test.error.message}`;
  else if (!test.ok) why = failureText(test);
  return h("li", { class: `puzzle-test ${test.ok ? "ok" : "bad"}` }, h("span", { class: "verdict" }, test.ok ? "✓" : "✗"),
    label, h("span", { class: "why" }, why));
}

function testsBlock() {
  const graded = state.result && state.result.puzzle;
  const tests = graded ? graded.tests : null;
  const hidden = Array.from({ length: state.puzzle.hidden_tests || 0 }, (_, i) => `hidden test ${i + 1}`);
  return h("div", { class: "puzzle-tests" },
    h("h3", { class: "section-title" }, "Tests ", h("span", { class: "section-hint" },
      hidden.length ? "the check is on the server: your Run is graded on each size, and on sizes not shown"
                    : "the check is on the server: your Run is graded on each size")),
    h("ul", {}, state.puzzle.tests.concat(hidden).map((label, i) => testRow(label, tests && tests[i]))),
    graded ? h("p", { class: `puzzle-verdict ${graded.ok ? "ok" : "bad"}`, id: "puzzle-verdict" },
      graded.ok ? "Solved: every test passes." : "Not yet: a test fails. The figure shows where the first test differs.",
      graded.ok ? nextLink() : null) : null);
}

function nextLink() {
  const { next } = state;
  return next ? h("a", { href: `/puzzles/${encodeURIComponent(next.name)}`, class: "button small primary puzzle-next", id: "puzzle-next" },
    `Next puzzle: ${next.title} →`) : h("a", { href: "/puzzles", class: "button small puzzle-next", id: "puzzle-next" }, "All puzzles →");
}

// Back to the starter (the puzzle's own launch and the kernel with its gap); progress stays. The
// kernel that passed is asked about even unedited: the editor's drafts would not keep it.
function startOver() {
  const solved = solvedSource(state.puzzle.name);
  if (solved !== null && page.getSpec().source === solved
      && !window.confirm(`Start over? The editor shows your kernel that solved "${state.puzzle.title}"; `
        + "it stays saved in this browser and opens again with the puzzle.")) return;
  if (!page.confirmReplace(`the starter of "${state.puzzle.title}"`)) return;
  state.result = null;
  page.setSpec(structuredClone(state.starter));
  render();
  elements.tab.click(); // still on the statement
}

// Where this browser's student is in a class that has the puzzle: their graded runs count for it.
function classLine() {
  const counted = studentClass && studentClass.puzzles.find((p) => p.name === state.puzzle.name);
  if (!counted) return null;
  return h("p", { class: "puzzle-class", id: "puzzle-class" }, "Each Run here is graded and counts for your class ",
    h("a", { href: `/classes/${encodeURIComponent(studentClass.code)}` }, studentClass.title),
    counted.due ? ` (due ${formatMoment(counted.due)})` : "", ".");
}

export function setPuzzleClass(found) {
  studentClass = found;
  if (state) render();
}

function progressLine() {
  const { puzzle } = state;
  const solved = solvedSource(puzzle.name);
  const source = page.getSpec().source;
  const words = !isDone(puzzle.name) ? null
    : solved !== null && source === solved ? "Solved in this browser: the editor shows the solution that passed."
      : "Solved in this browser.";
  return h("p", { class: "puzzle-progress", id: "puzzle-progress" }, words,
    h("button", { type: "button", class: "button small ghost", id: "puzzle-start-over", onclick: startOver,
                  title: "Open the starter again: the kernel with its gap, the puzzle's own launch" }, "Start over"));
}

// Each kind of difference, marked as the figure marks it; when yours stopped out of bounds, what
// it missed is what it never reached.
function diffWords(diff, stopped) {
  return Object.entries(MARKS).filter(([kind]) => diff[kind].count)
    .map(([kind, mark]) => h("li", {}, h("span", { class: "mark", style: `color:${mark.colour}` }, "■ "),
      `${formatCount(diff[kind].count)} ${kind === "missed" && stopped ? `missed: never written, as ${stoppedText(stopped)}` : mark.words}`));
}

function figuresBlock() {
  const graded = state.result && state.result.puzzle;
  if (!graded) return null;
  if (!graded.expected || !state.result.trace) {
    return h("p", { class: "hint" }, state.result.trace ? "No expected picture: the server could not run the puzzle's solution."
      : "No picture: the first test stopped before its accesses were recorded.");
  }
  return h("div", { class: "puzzle-figures" }, Object.entries(graded.diff || {}).map(([name, diff]) => {
    const plot = h("div", { class: "puzzle-plot", dataset: { output: name } });
    const words = diffWords(diff, stoppedAt(state.result.trace));
    const shown = shownPart(state.result.trace.tensors[name]?.shape ?? []);
    return h("div", { class: "puzzle-figure" },
      h("h3", { class: "section-title" }, `${name}: expected vs yours `,
        h("span", { class: "section-hint" }, `first test (${state.puzzle.tests[0]}); each colour is one program${shown ? `; ${shown}` : ""}`)),
      plot, words.length ? h("ul", { class: "puzzle-marks" }, words) : h("p", { class: "hint" }, "Yours writes exactly the elements the solution writes."));
  }));
}

async function drawFigures() {
  const graded = state.result && state.result.puzzle;
  if (!graded || !graded.expected || !state.result.trace) return;
  const Plotly = await loadPlotly();
  const style = getComputedStyle(elements.panel);
  const theme = { paper: "#15181e", untouched: "#2b303a", text: style.color, axis: "#8b93a1" };
  for (const plot of elements.panel.querySelectorAll(".puzzle-plot")) {
    const name = plot.dataset.output;
    const figure = comparisonFigure({ name, expected: graded.expected, yours: state.result.trace, diff: graded.diff[name], theme,
                                      availableWidth: Math.max(plot.clientWidth, 320) });
    Plotly.react(plot, figure.data, figure.layout, figure.config);
  }
}

function render() {
  const { puzzle } = state;
  replaceChildren(elements.panel, h("article", { class: "puzzle" },
    h("header", { class: "puzzle-head" }, h("h2", {}, puzzle.title),
      h("span", { class: `badge ${isDone(puzzle.name) ? "ok" : ""}`, id: "puzzle-done" }, isDone(puzzle.name) ? "done" : "not yet"),
      h("a", { href: "/puzzles", class: "puzzle-course" }, "All puzzles")),
    progressLine(), classLine(),
    h("div", { class: "puzzle-statement" }, paragraphs(puzzle.statement)),
    hintsBlock(), testsBlock(), figuresBlock()));
  drawFigures();
}

async function load(name) {
  if (state && state.puzzle.name === name) return;
  elements.tab.hidden = !name;
  if (!name) {
    state = null;
    return;
  }
  const response = await fetch(`/api/puzzles/${encodeURIComponent(name)}`);
  if (!response.ok) {
    replaceChildren(elements.panel, h("p", { class: "empty-state" }, `The puzzle "${name}" could not be loaded.`));
    return;
  }
  const { spec: starter, ...puzzle } = await response.json();
  state = { puzzle, starter, shownHints: 0, result: null, next: await nextOf(name) };
  render();
  elements.tab.click(); // a puzzle opens on its statement
}

// The course's puzzle after this one, or null (the last, or a teacher's).
async function nextOf(name) {
  try {
    const { puzzles } = await (await fetch("/api/puzzles")).json();
    const at = puzzles.findIndex((puzzle) => puzzle.name === name);
    return at >= 0 && at + 1 < puzzles.length ? puzzles[at + 1] : null;
  } catch {
    return null; // the verdict goes without the link
  }
}

// ---- a teacher's puzzle ----

// A test's label as the server writes it (app/course/puzzles.py label).
function testLabel(names) {
  return Object.entries(names).map(([k, v]) => `${k}=${v}`).join(", ") || "the spec's own launch";
}

// What a student will see of the puzzle: the Puzzle tab's statement, hints and tests, and the starter.
function studentPreview({ title, statement, hints, tests, starter }) {
  return [
    h("p", { class: "hint" }, "What a student sees: the Puzzle tab, and the starter in the editor."),
    h("article", { class: "puzzle teach-student" },
      h("header", { class: "puzzle-head" }, h("h2", {}, title || "(no title yet)"), h("span", { class: "badge" }, "not yet")),
      h("div", { class: "puzzle-statement" }, statement.trim() ? paragraphs(statement) : h("p", { class: "hint" }, "(no statement yet)")),
      hints.length ? h("ol", { class: "puzzle-hints" }, hints.map((hint, i) => h("li", { class: "puzzle-hint" }, h("b", {}, `Hint ${i + 1}. `), inline(hint))))
        : h("p", { class: "hint" }, "No hints."),
      h("h3", { class: "section-title" }, "Tests"),
      h("ul", { class: "teach-tests" }, tests.map((names) => h("li", { class: "mono" }, testLabel(names))))),
    h("h3", { class: "section-title" }, "Starter"),
    h("pre", { class: "teach-starter-preview", id: "teach-starter-preview" }, starter)];
}

function teachDialog(getSpec) {
  const spec = getSpec();
  const field = (label, control, id) => h("div", { class: "teach-field", dataset: { field: id } },
    h("label", { for: control.id || undefined }, label), control);
  const title = h("input", { id: "teach-title", required: true, placeholder: "Vector add with a tail" });
  const statement = h("textarea", { id: "teach-statement", rows: 4, placeholder: "What the student must write, and why." });
  const hints = h("textarea", { id: "teach-hints", rows: 2, placeholder: "One hint per line, revealed one at a time." });
  const starterBox = h("div", { class: "teach-code", id: "teach-starter" });
  const tests = h("input", { id: "teach-tests", class: "mono", placeholder: '[{"N": 7}, {"N": 1000}]  (optional)' });
  const note = h("p", { class: "teach-note", id: "teach-note", role: "status" });
  const controls = { title, statement, hints, starter: starterBox, tests };
  const edit = h("div", { class: "teach-body", id: "teach-edit" },
    h("p", { class: "hint" }, "The kernel in the editor becomes the hidden solution and the inputs' references the hidden check: "
      + "students see only the title, the statement, the hints and the starter below. Saving runs the solution and the starter "
      + "on every test size: the solution must pass them all, the starter must not."),
    field("Title", title, "title"), field("Statement", statement, "statement"), field("Hints", hints, "hints"),
    field("Starter: the kernel with a gap (the lesson at the top of the source is left out)", starterBox, "starter"),
    field("Test sizes (optional): values of the names the launch uses, such as N in torch.randn(N)", tests, "tests"));
  const preview = h("div", { class: "teach-body teach-preview", id: "teach-preview", hidden: true });
  const save = h("button", { type: "submit", class: "button primary", id: "teach-save" }, "Save puzzle and get its link");
  const previewButton = h("button", { type: "button", class: "button", id: "teach-preview-button" }, "Preview as a student");
  const dialog = h("dialog", { class: "teach-dialog", id: "teach-dialog", "aria-labelledby": "teach-heading" });
  let starter = null;

  const values = () => ({ title: title.value.trim(), statement: statement.value, starter: getSource(starter),
                          hints: hints.value.split("\n").map((s) => s.trim()).filter(Boolean) });
  const parsedTests = () => {
    if (!tests.value.trim()) return { tests: null };
    try {
      const parsed = JSON.parse(tests.value);
      if (Array.isArray(parsed) && parsed.every((t) => t && typeof t === "object" && !Array.isArray(t))) return { tests: parsed };
    } catch { /* said below */ }
    return { problem: "Test sizes must be JSON: a list of objects such as {\"N\": 7}." };
  };
  // A refusal goes under its field (the server names it); one of the solution's, in the note.
  const clearProblems = () => {
    for (const control of Object.values(controls)) {
      control.classList.remove("error-field");
      control.removeAttribute("aria-invalid");
    }
    dialog.querySelectorAll(".teach-field .field-problem").forEach((problem) => problem.remove());
  };
  const showProblem = (fieldName, message) => {
    const control = controls[fieldName];
    note.className = "teach-note bad";
    if (!control) {
      note.textContent = `Not saved: ${message}`;
      return;
    }
    note.textContent = "Not saved: see the marked field.";
    showEditing(true);
    control.classList.add("error-field");
    control.setAttribute("aria-invalid", "true");
    const problem = h("span", { class: "field-problem", id: `teach-problem-${fieldName}` }, message);
    control.closest(".teach-field").append(problem);
    control.setAttribute("aria-describedby", problem.id);
    problem.scrollIntoView({ block: "nearest" });
  };
  const showEditing = (editing) => {
    edit.hidden = !editing;
    preview.hidden = editing;
    previewButton.textContent = editing ? "Preview as a student" : "Back to editing";
    if (!editing) {
      const found = parsedTests();
      replaceChildren(preview, studentPreview({ ...values(), tests: found.tests || [{}] }));
    }
  };
  previewButton.addEventListener("click", () => showEditing(preview.hidden === false));
  const submit = async () => {
    clearProblems();
    const found = parsedTests();
    if (found.problem) return showProblem("tests", found.problem);
    note.className = "teach-note";
    note.textContent = "Checking: the solution and the starter run on every test size…";
    save.disabled = true;
    try {
      const body = { spec, ...values(), tests: found.tests };
      const response = await fetch("/api/puzzles", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
      const answer = await response.json();
      if (!response.ok) return showProblem(answer.error.field, answer.error.message);
      note.className = "teach-note ok";
      note.replaceChildren("Saved. Students open it at ", h("a", { href: answer.url, id: "teach-link" }, answer.url));
    } catch (error) {
      note.className = "teach-note bad";
      note.textContent = `The server did not answer (${error.message}): nothing was saved.`;
    } finally {
      save.disabled = false;
    }
  };
  dialog.append(h("form", { method: "dialog", class: "teach-form", onsubmit: (event) => { event.preventDefault(); submit(); } },
    h("div", { class: "teach-head" }, h("h2", { id: "teach-heading" }, "Make a puzzle of this kernel")),
    edit, preview,
    h("div", { class: "teach-foot" }, note,
      h("div", { class: "teach-actions" }, previewButton,
        h("button", { type: "button", class: "button", id: "teach-close", onclick: () => dialog.close() }, "Close"), save))));
  dialog.addEventListener("close", () => dialog.remove());
  document.body.append(dialog);
  // The starter starts as the kernel alone: the lesson at the top of the source would explain the gap.
  starter = createCodeField(starterBox, withoutLesson(spec.source), "Starter kernel (Python)");
  dialog.showModal();
  title.focus();
}

// tab and panel: the Puzzle tab's button (hidden unless the spec names a puzzle) and its content;
// teachButton opens the teacher's dialog; getSpec and setSpec: the page's spec; confirmReplace(what):
// may `what` replace the page's edits; words: spec_schema.failure_words.
export function initPuzzle({ tab, panel, teachButton, getSpec, setSpec, confirmReplace, words }) {
  elements = { tab, panel };
  failureWords = words;
  page = { getSpec, setSpec, confirmReplace };
  on("spec-loaded", ({ spec }) => load(spec.options && spec.options.puzzle));
  on("run-started", ({ spec }) => { sentSource = spec?.source ?? null; });
  on("run-result", ({ result }) => {
    if (!state || !result.puzzle || result.puzzle.name !== state.puzzle.name) return;
    state.result = result;
    if (result.puzzle.ok) markDone(state.puzzle.name, sentSource);
    render();
  });
  on("tab-shown", ({ tab: shown }) => { if (shown === "puzzle" && state) drawFigures(); });
  if (teachButton) teachButton.addEventListener("click", () => teachDialog(getSpec));
}
