// The source editor (CodeMirror 6): Python, Ctrl/Cmd+Enter runs, the failing line is marked,
// the lines of a program picked in the diagram (or of an IR line) are highlighted.
import {
  EditorView, EditorState, StateField, StateEffect, RangeSet, Decoration, WidgetType, GutterMarker,
  gutterLineClass, keymap, Prec, basicSetup, python, indentWithTab, HighlightStyle, syntaxHighlighting, tags,
} from "codemirror";
import { on, emit } from "./hub.js";
import { debounce } from "./dom.js";

// Shared with the IR views so both look like one tool.
export const playgroundTheme = EditorView.theme({
  "&": { color: "#d8dee9", backgroundColor: "#0f1218", fontSize: "12.5px" },
  ".cm-scroller": { fontFamily: "var(--mono)", lineHeight: "1.6" },
  ".cm-content": { caretColor: "#7fb3ff", padding: "6px 0" },
  ".cm-cursor, .cm-dropCursor": { borderLeftColor: "#7fb3ff", borderLeftWidth: "2px" },
  "&.cm-focused > .cm-scroller > .cm-selectionLayer .cm-selectionBackground, .cm-selectionBackground, ::selection":
    { backgroundColor: "#2a3b5c" },
  ".cm-gutters": { backgroundColor: "#0f1218", color: "#4b5566", border: "none", paddingRight: "4px" },
  ".cm-lineNumbers .cm-gutterElement": { padding: "0 8px 0 14px", minWidth: "42px" },
  ".cm-activeLine": { backgroundColor: "rgba(255,255,255,0.035)" },
  ".cm-activeLineGutter": { backgroundColor: "transparent", color: "#aab4c4" },
  ".cm-foldGutter .cm-gutterElement": { color: "#4b5566" },
  ".cm-matchingBracket, &.cm-focused .cm-matchingBracket": { backgroundColor: "rgba(127,179,255,0.18)", outline: "none" },
  ".cm-selectionMatch": { backgroundColor: "rgba(127,179,255,0.12)" },
  ".cm-searchMatch": { backgroundColor: "rgba(224,168,58,0.25)", outline: "1px solid rgba(224,168,58,0.5)" },
  ".cm-panels": { backgroundColor: "#13171e", color: "#d8dee9", borderColor: "#252b36" },
  ".cm-tooltip": { backgroundColor: "#191e27", border: "1px solid #333b49", color: "#d8dee9" },
  ".cm-tooltip-autocomplete > ul > li[aria-selected]": { backgroundColor: "#2a3b5c", color: "#fff" },
  // Marks set by the playground:
  ".cm-error-line": { backgroundColor: "rgba(242,109,109,0.13)", boxShadow: "inset 2px 0 #f26d6d" },
  ".cm-error-gutter": { color: "#f26d6d !important", fontWeight: "700" },
  ".cm-error-inline": {
    marginLeft: "2.5em", color: "#f59a9a", fontFamily: "var(--font)", fontSize: "12px",
    padding: "0 6px", borderRadius: "3px", backgroundColor: "rgba(242,109,109,0.12)",
  },
  ".cm-program-line": { backgroundColor: "rgba(91,157,255,0.12)", boxShadow: "inset 2px 0 #5b9dff" },
  ".cm-linked-line": { backgroundColor: "rgba(224,168,58,0.16)", boxShadow: "inset 2px 0 #e0a83a" },
}, { dark: true });

export const playgroundHighlight = syntaxHighlighting(HighlightStyle.define([
  { tag: [tags.keyword, tags.controlKeyword, tags.definitionKeyword, tags.moduleKeyword, tags.operatorKeyword], color: "#c594f5" },
  { tag: tags.function(tags.definition(tags.variableName)), color: "#7fb3ff", fontWeight: "600" },
  { tag: [tags.function(tags.variableName), tags.function(tags.propertyName)], color: "#82c8e8" },
  { tag: tags.propertyName, color: "#a9c7f0" },
  { tag: [tags.string, tags.special(tags.string)], color: "#a3d98a" },
  { tag: [tags.number, tags.bool, tags.null], color: "#f0a46c" },
  { tag: tags.comment, color: "#6b7689", fontStyle: "italic" },
  { tag: tags.meta, color: "#e0af68" },
  { tag: [tags.definition(tags.className), tags.className], color: "#f2cc70" },
  { tag: [tags.arithmeticOperator, tags.compareOperator, tags.bitwiseOperator, tags.updateOperator, tags.definitionOperator], color: "#89c7e6" },
  { tag: [tags.paren, tags.squareBracket, tags.brace, tags.separator, tags.derefOperator], color: "#95a0b3" },
]));

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

function reportChanges() {
  let lastLine = null;
  const sourceChanged = debounce((source) => emit("source-changed", { source }), 250);
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

export function createEditor(parent, source) {
  const runKey = Prec.highest(keymap.of([{ key: "Mod-Enter", preventDefault: true, run: () => { emit("run-requested"); return true; } }]));
  const view = new EditorView({
    parent,
    state: EditorState.create({
      doc: source,
      extensions: [
        runKey, basicSetup, keymap.of([indentWithTab]), python(), playgroundTheme, playgroundHighlight,
        EditorState.tabSize.of(4), errorField, programLines.field, linkedLines.field, reportChanges(),
      ],
    }),
  });
  wireEditor(view);
  return view;
}

export function getSource(view) {
  return view.state.doc.toString();
}

// A new source opens on its first @triton decorator: the kernel, not the example's prose above it.
function setSource(view, source) {
  view.dispatch({
    changes: { from: 0, to: view.state.doc.length, insert: source },
    selection: { anchor: 0 },
    effects: setError.of(null),
  });
  const kernel = /^@triton/m.exec(source);
  // In a transaction of its own: in the one that replaces the text, the scroll target is lost.
  view.dispatch({ effects: EditorView.scrollIntoView(kernel ? kernel.index : 0, { y: "start" }) });
}

function clearRunHighlights(view) {
  view.dispatch({ effects: [programLines.set.of([]), linkedLines.set.of([])] });
}

export function jumpToLine(view, lineNumber) {
  if (!lineNumber || lineNumber > view.state.doc.lines) return;
  const line = view.state.doc.line(lineNumber);
  view.dispatch({ selection: { anchor: line.from }, effects: EditorView.scrollIntoView(line.from, { y: "center" }) });
  view.focus();
}

function scrollToLine(view, lineNumber, y = "nearest") {
  if (!lineNumber || lineNumber > view.state.doc.lines) return;
  view.dispatch({ effects: EditorView.scrollIntoView(view.state.doc.line(lineNumber).from, { y }) });
}

// The first line of the message, short enough to sit at the end of a code line.
function inlineText(error) {
  const first = (error.message || error.type || "error").split("\n").find((l) => l.trim()) || "";
  const text = first.length > 140 ? first.slice(0, 137) + "…" : first;
  return error.type && !text.startsWith(error.type) ? `${error.type}: ${text}` : text;
}

function wireEditor(view) {
  on("spec-loaded", ({ spec }) => setSource(view, spec.source || ""));
  on("run-requested", () => clearRunHighlights(view));
  on("run-started", () => view.dispatch({ effects: setError.of(null) }));
  on("run-result", ({ result }) => {
    const error = result.error;
    view.dispatch({ effects: setError.of(error && error.line ? { line: error.line, text: inlineText(error) } : null) });
    if (error && error.line) scrollToLine(view, error.line, "center");
  });
  on("program-selected", ({ lines }) => {
    view.dispatch({ effects: programLines.set.of(lines || []) });
    if (lines && lines.length) scrollToLine(view, Math.min(...lines));
  });
  on("ir-line-selected", ({ line }) => {
    view.dispatch({ effects: linkedLines.set.of(line ? [line] : []) });
    scrollToLine(view, line);
  });
  on("jump-to-line", ({ line }) => jumpToLine(view, line));
}
