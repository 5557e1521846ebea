// The one ES module the page imports for its editors: what editor.js and ir.js use, nothing more.
export { EditorView, keymap, Decoration, WidgetType, gutterLineClass, GutterMarker } from "@codemirror/view";
export { EditorState, StateField, StateEffect, RangeSet, Prec, Compartment } from "@codemirror/state";
export { basicSetup, minimalSetup } from "codemirror";
export { python } from "@codemirror/lang-python";
export { HighlightStyle, syntaxHighlighting, StreamLanguage, indentUnit } from "@codemirror/language";
export { indentWithTab } from "@codemirror/commands";
export { tags } from "@lezer/highlight";
