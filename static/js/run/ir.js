// The IR tab: TTIR → TTGIR → LLIR → PTX → SASS in a read-only editor, with registers, spills and
// shared memory, for a target picked in its header. The cursor's source line lights up its IR lines;
// an IR line lights up its source.
import {
  EditorView, EditorState, StateField, StateEffect, Decoration, StreamLanguage, HighlightStyle,
  syntaxHighlighting, basicSetup, tags,
} from "codemirror";
import { on, emit } from "../shared/hub.js";
import { h, replaceChildren } from "../shared/dom.js";
import { formatCount } from "../shared/format.js";
import { playgroundTheme } from "../shared/cm-theme.js";
import { errorCard } from "./error-card.js";

// options.arch values Triton 3.7 compiles for on a host without a GPU (each checked there, down to
// SASS); "" is auto: the server's GPU, or sm90 without one.
const TARGETS = [["", "auto"], ["sm80", "sm80 A100"], ["sm86", "sm86 RTX 30"], ["sm89", "sm89 L4, RTX 40"],
                 ["sm90", "sm90 H100"], ["sm100", "sm100 B200"], ["sm120", "sm120 RTX 50"]];

// ---- highlighting for MLIR, LLVM IR, PTX and SASS: one small tokenizer is enough to read them ----

function irLanguage(lineComment) {
  return StreamLanguage.define({
    token(stream) {
      if (stream.eatSpace()) return null;
      if (stream.match("//") || (lineComment && stream.match(lineComment))) { stream.skipToEnd(); return "comment"; }
      if (stream.match(/^\/\*.*?\*\//)) return "comment";
      if (stream.match(/^"(?:[^"\\]|\\.)*"?/)) return "string";
      if (stream.match(/^[%$][\w.$]+/)) return "variableName";
      if (stream.match(/^@[\w.$]+/)) return "variableName.definition";
      if (stream.match(/^#[\w.]+/)) return "meta";
      if (stream.match(/^(U?R\d+|U?P\d+|RZ|URZ|PT)\b/)) return "variableName";
      if (stream.match(/^!?[\w]+\.ptr\b|^(i1|i8|i16|i32|i64|f16|bf16|f32|f64|index|ptr|tensor|void)\b/)) return "typeName";
      if (stream.match(/^-?(0x[0-9a-fA-F]+|\d+(\.\d+)?([eE][-+]?\d+)?)/)) return "number";
      if (stream.match(/^[A-Za-z_][\w]*(\.[\w]+)+/)) return "keyword";
      if (stream.match(/^[A-Za-z_][\w]*/)) return null;
      stream.next();
      return null;
    },
  });
}

const LANGUAGES = { ttir: irLanguage(null), ttgir: irLanguage(null), llir: irLanguage(";"), ptx: irLanguage(null), sass: irLanguage(null) };

const irHighlight = syntaxHighlighting(HighlightStyle.define([
  { tag: tags.comment, color: "#6b7689", fontStyle: "italic" },
  { tag: tags.string, color: "#a3d98a" },
  { tag: tags.variableName, color: "#9fc2ff" },
  { tag: tags.definition(tags.variableName), color: "#7fb3ff", fontWeight: "600" },
  { tag: tags.meta, color: "#e0af68" },
  { tag: tags.typeName, color: "#f2cc70" },
  { tag: tags.number, color: "#f0a46c" },
  { tag: tags.keyword, color: "#c594f5" },
]));

// ---- highlighted IR lines ----

const setLinked = StateEffect.define();
const linkedField = StateField.define({
  create: () => Decoration.none,
  update(deco, tr) {
    deco = deco.map(tr.changes);
    for (const effect of tr.effects) {
      if (!effect.is(setLinked)) continue;
      const lines = effect.value.filter((n) => n >= 1 && n <= tr.state.doc.lines).sort((a, b) => a - b);
      deco = Decoration.set(lines.map((n) => Decoration.line({ class: "cm-linked-line" }).range(tr.state.doc.line(n).from)));
    }
    return deco;
  },
  provide: (f) => EditorView.decorations.from(f),
});

// ---- the tab ----

// What a reader should know about this IR: on a server without a GPU it was compiled for a GPU
// that is not there, and tools the server lacks leave stages out.
function irNotes(ir, device) {
  const notes = [];
  if (device && device.kind === "interpreter") {
    notes.push(`No GPU on this server: Triton compiled this IR for ${ir.target || "a GPU"} on the CPU, as that GPU would run it. `
      + "The kernel itself ran in Triton's interpreter.");
  }
  return notes.concat(ir.notes || []);
}

class IrPane {
  // stages: result.ir's stages in the compiler's order (the server's schema: initial.spec_schema.ui)
  constructor(container, stages) {
    this.container = container;
    this.stages = stages;
    this.ir = null;
    this.stage = stages[0];
    this.sourceLine = null;
    this.arch = null;      // the spec's options.arch
  }

  // Heads the tab in every state, so a target that does not compile can be swapped for another.
  targetPicker() {
    const current = this.arch || "";
    const targets = TARGETS.some(([value]) => value === current) ? TARGETS : [...TARGETS, [current, current]];
    return h("label", { class: "ir-target", title: "The GPU architecture to compile the IR for; changing it runs the kernel again" }, "target",
      h("select", { "aria-label": "IR target", onchange: (event) => this.pickTarget(event.target.value || null) },
        targets.map(([value, label]) => h("option", { value, selected: value === current }, label))));
  }

  pickerBar() {
    return h("div", { class: "ir-bar" }, this.targetPicker());
  }

  pickTarget(arch) {
    this.arch = arch;
    this.waiting(`Running again to compile for ${arch || "this server's GPU (sm90 without one)"}…`);
    emit("ir-target-selected", { arch });
  }

  waiting(text) {
    this.ir = null;
    this.view = null;
    replaceChildren(this.container, this.pickerBar(), h("div", { class: "empty-state" }, text));
  }

  // [IR line, source line] pairs of the shown stage, both 1-based (the map's keys are 0-based
  // indices into the IR's lines, as strings in JSON).
  lineMap() {
    const map = (this.ir && this.ir.line_map && this.ir.line_map[this.stage]) || {};
    return Object.entries(map).map(([index, src]) => [Number(index) + 1, src]);
  }

  show(result) {
    const ir = result.ir;
    if (!ir) {
      this.waiting(result.status === "error" ? "No IR: the run stopped with an error." : "No IR for this run: tick IR in the Options row to see the compiler's stages.");
      return;
    }
    if (ir.error) {
      this.ir = null;
      replaceChildren(this.container, this.pickerBar(),
        h("div", { class: "results" }, errorCard(ir.error, "IR could not be compiled")));
      return;
    }
    this.ir = ir;
    if (!ir[this.stage]) this.stage = this.stages.find((key) => ir[key]) || this.stages[0];
    this.build(irNotes(ir, result.device));
  }

  build(notes) {
    const ir = this.ir;
    const pill = (label, value, bad = false) => (value === null || value === undefined ? null
      : h("span", { class: `pill ${bad ? "bad" : ""}` }, label, " ", h("b", {}, String(value))));
    this.buttons = this.stages.map((key) => h("button", {
      type: "button", class: `ir-stage ${key === this.stage ? "active" : ""}`, disabled: !ir[key], dataset: { stage: key },
      title: ir[key] ? `${ir[key].split("\n").length} lines` : "not produced for this target",
      onclick: () => this.select(key),
    }, key.toUpperCase()));
    const host = h("div", { class: "ir-view" });
    replaceChildren(this.container,
      h("div", { class: "ir-bar" }, this.buttons, this.targetPicker(), h("span", { class: "ir-stats" },
        ir.target ? h("span", { class: "pill ir-compiled-for", title: "the target this IR was compiled for" }, "compiled for ", h("b", {}, ir.target)) : null,
        pill("regs", ir.n_regs),
        pill("spills", ir.n_spills, ir.n_spills > 0),
        ir.shared_bytes !== null && ir.shared_bytes !== undefined ? pill("shared", `${formatCount(ir.shared_bytes)} B`) : null)),
      notes.length ? h("div", { class: "ir-notes" }, notes.map((note) => h("p", {}, note))) : null,
      host,
      h("div", { class: "ir-help" }, "Move the cursor in the editor to light up the IR of that line; click an IR line to find its source line."));
    this.view = new EditorView({ parent: host, state: this.state() });
    this.highlightSource(this.sourceLine, false);
  }

  state() {
    return EditorState.create({
      doc: this.ir[this.stage] || "",
      extensions: [
        basicSetup, EditorState.readOnly.of(true), playgroundTheme, irHighlight, LANGUAGES[this.stage], linkedField,
        EditorView.updateListener.of((update) => { if (update.selectionSet && update.view.hasFocus) this.irLineClicked(); }),
      ],
    });
  }

  // A stage opens at its start (its own scroll, not the last stage's: SASS would open on its
  // trailing NOPs), the cursor's source line lit without moving there.
  select(stage) {
    this.stage = stage;
    emit("ir-stage-selected", { stage });
    for (const button of this.buttons) button.classList.toggle("active", button.dataset.stage === stage);
    this.view.setState(this.state());
    this.view.scrollDOM.scrollTop = 0;
    this.highlightSource(this.sourceLine, false);
  }

  // The editor's cursor moved to `line`: light up the IR lines made from it, and scroll to them
  // when `scroll` and the tab is on screen (measuring a hidden editor makes CodeMirror loop).
  highlightSource(line, scroll = true) {
    this.sourceLine = line;
    if (!this.view) return;
    const irLines = this.lineMap().filter(([, src]) => src === line).map(([ir]) => ir);
    this.view.dispatch({ effects: setLinked.of(irLines) });
    const first = Math.min(...irLines);
    if (scroll && this.container.offsetParent && irLines.length && first <= this.view.state.doc.lines) {
      this.view.dispatch({ effects: EditorView.scrollIntoView(this.view.state.doc.line(first).from, { y: "center" }) });
    }
  }

  irLineClicked() {
    const state = this.view.state;
    const irLine = state.doc.lineAt(state.selection.main.head).number;
    const entry = this.lineMap().find(([ir]) => ir === irLine);
    const source = entry ? entry[1] : null;
    this.view.dispatch({ effects: setLinked.of(source ? this.lineMap().filter(([, src]) => src === source).map(([ir]) => ir) : []) });
    emit("ir-line-selected", { line: source });
  }

  // An editor built while its tab was hidden measures itself once it can be seen.
  shown() {
    if (this.view) this.view.requestMeasure();
  }
}

export function initIr(container, stages) {
  if (!container) return;
  const pane = new IrPane(container, stages);
  const waiting = () => pane.waiting("Run the kernel to see what Triton compiles it to: TTIR → TTGIR → LLIR → PTX → SASS.");
  on("spec-loaded", ({ spec, ui }) => {
    pane.arch = (spec.options && spec.options.arch) || null;
    pane.stage = ui?.ir_stage || stages[0];   // a link shared on PTX opens on PTX
    waiting();
  });
  waiting();
  // Until its part arrives, a run that compiles the IR says so (the verdict and the diagram come first).
  on("run-started", ({ spec }) => { if (spec?.options?.ir !== false) pane.waiting("compiling IR…"); });
  on("run-partial", ({ part, result }) => { if (part === "ir") pane.show(result); });
  on("run-result", ({ result }) => pane.show(result));
  on("source-line-selected", ({ line }) => pane.highlightSource(line));
  on("tab-shown", ({ tab }) => { if (tab === "ir") pane.shown(); });
}
