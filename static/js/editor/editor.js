// The source editor (CodeMirror 6): Python, Ctrl/Cmd+Enter runs, the failing line is marked,
// the lines of a program picked in the diagram (or of an IR line) are highlighted. Tab moves the
// focus on, as CodeMirror's accessible default has it, unless the reader opts in to Tab indenting
// (the pane's "Tab indents" switch); then Escape followed by Tab still leaves the editor. Enter and
// Tab indent by the loaded file's own indentation; a loaded kernel starts a fresh history (Undo
// never goes back past it); long lines wrap on request (the pane's "Wrap" switch).
import {
  EditorView, EditorState, StateField, StateEffect, RangeSet, Decoration, WidgetType, GutterMarker,
  gutterLineClass, keymap, Prec, Compartment, basicSetup, python, indentUnit,
} from "codemirror";
import { on, emit } from "../shared/hub.js";
import { debounce } from "../shared/dom.js";
import { playgroundTheme, playgroundHighlight } from "../shared/cm-theme.js";
import { indentationOf } from "./pysource.js";

// ---- line highlights (the error, the selected program, the line an IR line came from) ----

const setError = StateEffect.define();
const errorMarker = new (class extends GutterMarker { elementClass = "cm-error-gutter"; })();

class ErrorMessage extends WidgetType {
  constructor(text) { super(); this.text = text; }
  eq(other) { return other.text === this.text; }
  toDOM() {
    const span = document.createElement("span");
    span.className = "cm-error-inline";
    span.textContent = this.text;
    span.title = this.text;
    return span;
  }
}

function errorMarks(state, error) {
  if (!error || !error.line || error.line > state.doc.lines) return { deco: Decoration.none, gutter: RangeSet.empty };
  const line = state.doc.line(error.line);
  return {
    deco: Decoration.set([
      Decoration.line({ class: "cm-error-line" }).range(line.from),
      Decoration.widget({ widget: new ErrorMessage(error.text), side: 1 }).range(line.to),
    ]),
    gutter: RangeSet.of([errorMarker.range(line.from)]),
  };
}

const errorField = StateField.define({
  create: () => ({ deco: Decoration.none, gutter: RangeSet.empty }),
  update(marks, tr) {
    let next = { deco: marks.deco.map(tr.changes), gutter: marks.gutter.map(tr.changes) };
    for (const effect of tr.effects) if (effect.is(setError)) next = errorMarks(tr.state, effect.value);
    return next;
  },
  provide: (field) => [
    EditorView.decorations.from(field, (marks) => marks.deco),
    gutterLineClass.from(field, (marks) => marks.gutter),
  ],
});

// A set of whole lines drawn with one class, replaced as a whole by its effect. An edit clears it:
// the lines came from a run of the source as it was (a program's accesses, an IR line's origin).
function lineHighlight(className) {
  const set = StateEffect.define();
  const field = StateField.define({
    create: () => Decoration.none,
    update(deco, tr) {
      if (tr.docChanged) deco = Decoration.none;
      for (const effect of tr.effects) {
        if (!effect.is(set)) continue;
        const lines = [...new Set(effect.value)].filter((n) => n >= 1 && n <= tr.state.doc.lines).sort((a, b) => a - b);
        deco = Decoration.set(lines.map((n) => Decoration.line({ class: className }).range(tr.state.doc.line(n).from)));
      }
      return deco;
    },
    provide: (f) => EditorView.decorations.from(f),
  });
  return { set, field };
}

const programLines = lineHighlight("cm-program-line");
const linkedLines = lineHighlight("cm-linked-line");

// ---- the editor ----

function cursorLine(state) {
  return state.doc.lineAt(state.selection.main.head).number;
}

function reportChanges(sourceChanged) {
  let lastLine = null;
  return EditorView.updateListener.of((update) => {
    if (update.docChanged) sourceChanged(update.state.doc.toString());
    if (!update.selectionSet && !update.docChanged) return;
    const line = cursorLine(update.state);
    if (line !== lastLine) {
      lastLine = line;
      emit("source-line-selected", { line });
    }
  });
}

const wrapping = new Compartment();

// readOnly: the source can be read, selected and run, not edited (an embed with ?readonly=1).
export function createEditor(parent, source, { readOnly = false } = {}) {
  const runKey = Prec.highest(keymap.of([{ key: "Mod-Enter", preventDefault: true, run: () => { emit("run-requested"); return true; } }]));
  const sourceChanged = debounce((text) => emit("source-changed", { source: text }), 250);
  const extensions = [
    runKey, basicSetup, keymap.of([{ key: "Tab", run: indentLines, shift: dedentLines }]), python(), EditorView.contentAttributes.of({ "aria-label": "Kernel source (Python)" }), playgroundTheme, playgroundHighlight,
    EditorState.tabSize.of(4), EditorState.readOnly.of(readOnly), errorField, programLines.field, linkedLines.field, reportChanges(sourceChanged),
  ];
  // A state of its own for each source loaded: its indentation, an empty history, the wrap as set.
  const stateOf = (text, anchor = 0) => EditorState.create({
    doc: text, selection: { anchor },
    extensions: [extensions, indentUnit.of(indentationOf(text)), wrapping.of(wrapLines() ? EditorView.lineWrapping : [])],
  });
  const view = new EditorView({ parent, state: stateOf(source) });
  view.setTabFocusMode(!tabIndents());
  wireEditor(view, { stateOf, sourceChanged });
  return view;
}

// A code field of a form (the teacher's starter): Python in the page's colours, Tab moving the focus
// on; it takes no part in the page's runs and events.
export function createCodeField(parent, source, label) {
  const view = new EditorView({
    parent,
    state: EditorState.create({
      doc: source,
      extensions: [basicSetup, python(), EditorView.contentAttributes.of({ "aria-label": label }), playgroundTheme,
                   playgroundHighlight, EditorState.tabSize.of(4), indentUnit.of(indentationOf(source))],
    }),
  });
  view.setTabFocusMode(true);
  return view;
}

// ---- Tab: focus by default, indent on request (remembered by this browser) ----

function selectedLines(state) {
  const lines = new Set();
  for (const range of state.selection.ranges) {
    for (let n = state.doc.lineAt(range.from).number; n <= state.doc.lineAt(range.to).number; n++) lines.add(n);
  }
  return [...lines].map((n) => state.doc.line(n));
}

// One level of the file's indentation (indentUnit), added or taken away at each selected line's start.
function indentLines(view) {
  const unit = view.state.facet(indentUnit);
  view.dispatch({ changes: selectedLines(view.state).map((line) => ({ from: line.from, insert: unit })), userEvent: "input.indent" });
  return true;
}

function dedentLines(view) {
  const unit = view.state.facet(indentUnit);
  const level = unit === "\t" ? /^\t?/ : new RegExp(`^ {0,${unit.length}}`);
  const changes = selectedLines(view.state).map((line) => ({ from: line.from, to: line.from + level.exec(line.text)[0].length }));
  view.dispatch({ changes, userEvent: "delete.dedent" });
  return true;
}

const TAB_KEY = "playground.tabIndents";

function tabIndents() {
  try { return localStorage.getItem(TAB_KEY) === "1"; } catch { return false; }
}

// The switch in the editor's pane head.
export function initTabSwitch(view, checkbox, hint) {
  if (!checkbox) return;
  const say = () => { hint.textContent = checkbox.checked ? "Esc then Tab leaves the editor" : "Tab moves the focus on"; };
  checkbox.checked = tabIndents();
  say();
  checkbox.addEventListener("change", () => {
    view.setTabFocusMode(!checkbox.checked);
    say();
    try { localStorage.setItem(TAB_KEY, checkbox.checked ? "1" : "0"); } catch { /* kept for this page only */ }
  });
}

// ---- Wrap: long lines wrap at the pane's edge on request (remembered by this browser) ----

const WRAP_KEY = "playground.wrapLines";

function wrapLines() {
  try { return localStorage.getItem(WRAP_KEY) === "1"; } catch { return false; }
}

export function initWrapSwitch(view, checkbox) {
  if (!checkbox) return;
  checkbox.checked = wrapLines();
  checkbox.addEventListener("change", () => {
    view.dispatch({ effects: wrapping.reconfigure(checkbox.checked ? EditorView.lineWrapping : []) });
    try { localStorage.setItem(WRAP_KEY, checkbox.checked ? "1" : "0"); } catch { /* kept for this page only */ }
  });
}

export function getSource(view) {
  return view.state.doc.toString();
}

// A new source opens on its first @triton decorator, the cursor there too: the kernel, not the
// example's prose above it, and a key typed on entering the editor lands where the reader looks.
// Loading is not an edit: a fresh state, its history empty, so Undo stops at the loaded kernel.
function setSource(view, { stateOf, sourceChanged }, source) {
  const kernel = /^@triton/m.exec(source);
  view.setState(stateOf(source, kernel ? kernel.index : 0));
  sourceChanged(source);   // the panes that follow the text (lesson, form, drafts) read it as after an edit
  // The editor's own scroller only: scrollIntoView would scroll the page too, and on a phone, where
  // the page scrolls, open it scrolled down with the code under the sticky top bar.
  const at = kernel ? kernel.index : 0;
  view.requestMeasure({ read: () => view.lineBlockAt(at).top, write: (top) => { view.scrollDOM.scrollTop = top; } });
}

function clearRunHighlights(view) {
  view.dispatch({ effects: [programLines.set.of([]), linkedLines.set.of([])] });
}

function jumpToLine(view, lineNumber) {
  if (!lineNumber || lineNumber > view.state.doc.lines) return;
  const line = view.state.doc.line(lineNumber);
  view.dispatch({ selection: { anchor: line.from }, effects: EditorView.scrollIntoView(line.from, { y: "center" }) });
  view.focus();
}

// Brings lines lineNumber to lastLine into view (the margin keeps the lines after the first in it).
function scrollToLine(view, lineNumber, y = "nearest", lastLine = lineNumber) {
  if (!lineNumber || lineNumber > view.state.doc.lines) return;
  const yMargin = 5 + view.defaultLineHeight * Math.max(0, lastLine - lineNumber);
  view.dispatch({ effects: EditorView.scrollIntoView(view.state.doc.line(lineNumber).from, { y, yMargin }) });
}

// The first line of the message, short enough to sit at the end of a code line.
function inlineText(error) {
  const first = ((error.message || error.type || "error").split("\n").find((l) => l.trim()) || "").replace(/`([^`\n]+)`/g, "$1");
  const text = first.length > 140 ? first.slice(0, 137) + "…" : first;
  return error.type && !text.startsWith(error.type) ? `${error.type}: ${text}` : text;
}

function wireEditor(view, loader) {
  on("spec-loaded", ({ spec }) => setSource(view, loader, spec.source || ""));
  on("run-requested", () => clearRunHighlights(view));
  on("run-started", () => view.dispatch({ effects: setError.of(null) }));
  on("run-result", ({ result }) => {
    const error = result.error;
    view.dispatch({ effects: setError.of(error && error.line ? { line: error.line, text: inlineText(error) } : null) });
    if (error && error.line) scrollToLine(view, error.line, "center");
  });
  // A compile ahead of the text still in the editor: its error marks the line as you type; a clean
  // compile clears the mark an older source left.
  on("compile-result", ({ ok, error, source }) => {
    if (source !== getSource(view)) return;
    view.dispatch({ effects: setError.of(!ok && error && error.line ? { line: error.line, text: inlineText(error) } : null) });
  });
  // One "current" highlight at a time: the diagram's program, an IR line or a step each replace
  // the others', and a pane's goes out when another tab is shown.
  on("program-selected", ({ lines }) => {
    view.dispatch({ effects: [linkedLines.set.of([]), programLines.set.of(lines || [])] });
    if (lines && lines.length) scrollToLine(view, Math.min(...lines));
  });
  on("ir-line-selected", ({ line }) => {
    view.dispatch({ effects: [programLines.set.of([]), linkedLines.set.of(line ? [line] : [])] });
    scrollToLine(view, line);
  });
  on("jump-to-line", ({ line }) => jumpToLine(view, line));
  on("step-shown", ({ line, endLine = line }) => {
    const lines = line ? Array.from({ length: endLine - line + 1 }, (_, i) => line + i) : [];
    view.dispatch({ effects: [programLines.set.of([]), linkedLines.set.of(lines)] });
    scrollToLine(view, line, "nearest", endLine);
  });
  on("timeline-region-selected", ({ line, endLine }) => {
    const lines = Array.from({ length: endLine - line + 1 }, (_, i) => line + i);
    view.dispatch({ effects: [programLines.set.of([]), linkedLines.set.of(lines)] });
    scrollToLine(view, line, "nearest", endLine);
  });
  on("tab-shown", () => clearRunHighlights(view));
}
