// The elements around the diagram's plots (legend, coverage list, a tensor's card, a tooltip), built
// with dom.js's h(). Nothing here keeps state or listens to events.
import { h } from "../shared/dom.js";
import { PROGRAM_COLOURS } from "./trace-cells.js";
import { LEGEND, colouringText, coverageText, programLabel, strayNote, tensorMeta } from "./trace-words.js";
import { PALETTE } from "./diagram-figures.js";

function swatch(colour, className = null) {
  return h("span", { class: className ? `diagram-swatch ${className}` : "diagram-swatch", style: colour ? `background: ${colour}` : null });
}

// tag "button": a chip that does something on click (and on Enter or Space, as any button).
function swatchItem(label, colour, className = null, attrs = {}, tag = "span") {
  return h(tag, { ...attrs, class: `diagram-legend-item${attrs.class ? ` ${attrs.class}` : ""}` }, swatch(colour, className), label);
}

// Program chips (a few programs; a click picks one) or the palette, then the marks in use.
export function legend(model, theme, onPick) {
  const { programs, tensors } = model;
  const items = programs.length <= 12
    ? programs.map((program, index) => swatchItem(programLabel(program.pid), PALETTE[program.linear % PROGRAM_COLOURS], null,
      { class: "diagram-legend-program", type: "button", title: `Select ${programLabel(program.pid)}`, onclick: () => onPick(index) }, "button"))
    : [h("span", { class: "diagram-legend-item" }, PALETTE.map((colour) => swatch(colour)), LEGEND.programColours)];
  return h("div", { class: "diagram-legend" }, items,
    tensors.some((t) => t.accesses.some((a) => a.masked.length)) ? swatchItem(LEGEND.masked, null, "diagram-swatch-masked") : null,
    swatchItem(LEGEND.untouched, theme.untouched),
    tensors.some((t) => t.coverage?.unwritten) ? swatchItem(LEGEND.unwritten, null, "diagram-swatch-unwritten") : null,
    tensors.some((t) => t.coverage?.multi) ? swatchItem(LEGEND.multi, null, "diagram-swatch-multi") : null,
    tensors.some((t) => t.strays.length) ? swatchItem(LEGEND.stray, theme.stray, null, { class: "diagram-legend-stray" }) : null);
}

// Each written tensor's coverage verdict, one line each.
export function coverageList(model) {
  return h("ul", { class: "diagram-coverage" }, model.tensors.filter((tensor) => tensor.writes).map((tensor) => {
    const sentence = coverageText(tensor.coverage);
    return sentence ? h("li", { class: sentence.ok ? "diagram-ok" : "diagram-warn", dataset: { tensor: tensor.name } }, sentence.text) : null;
  }));
}

// A tensor's card: its name and facts (and its out-of-bounds lanes, if any) over an empty plot and note.
export function tensorCard(tensor) {
  const strays = strayNote(tensor);
  return h("figure", { class: strays ? "diagram-tensor diagram-tensor-stray" : "diagram-tensor", dataset: { tensor: tensor.name } },
    h("figcaption", {}, h("strong", { class: "diagram-tensor-name" }, tensor.name), " ",
      h("span", { class: "diagram-tensor-meta" }, tensorMeta(tensor)),
      h("div", { class: "diagram-tensor-colouring" }, colouringText(tensor)),
      strays ? h("div", { class: "diagram-stray-note" }, strays) : null),
    h("div", { class: "diagram-plot" }),
    h("p", { class: "diagram-note" }));
}

export function tooltipLines(lines) {
  return lines.map((line, i) => h("div", { class: i === 0 ? "diagram-tooltip-head" : null }, line));
}
