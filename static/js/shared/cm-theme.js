// The look of every CodeMirror view of the page (the source editor and the IR tab), so both read
// as one tool: colours, the marks the playground sets, and Python's highlighting.
import { EditorView, HighlightStyle, syntaxHighlighting, tags } from "codemirror";

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
  { tag: tags.comment, color: "#8490a3", fontStyle: "italic" },  // 4.5:1 on the editor's background
  { tag: tags.meta, color: "#e0af68" },
  { tag: [tags.definition(tags.className), tags.className], color: "#f2cc70" },
  { tag: [tags.arithmeticOperator, tags.compareOperator, tags.bitwiseOperator, tags.updateOperator, tags.definitionOperator], color: "#89c7e6" },
  { tag: [tags.paren, tags.squareBracket, tags.brace, tags.separator, tags.derefOperator], color: "#95a0b3" },
]));
