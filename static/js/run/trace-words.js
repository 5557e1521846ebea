// What the diagram (and the Results pane, for coverage) says about a trace, in sentences, from
// the data of trace-model.js.
import { formatCount, formatOrdinal, formatPid, formatTuple, plural } from "../shared/format.js";
import { accessesAt, asRectangle, mergeRuns, regionsOf, runsLength, sourceLines } from "./trace-model.js";
import { firstIndexOfCell } from "./trace-cells.js";

export const NO_TRACE = "No trace: run the kernel with the trace option on to see which program touches which element.";

export const IDLE_CAPTION = "Each colour is one program, a copy of the kernel running with its own program_id. "
  + "Every element shows the program that loaded it (inputs) or stored it (outputs). "
  + "Click a program, or press Play, to follow one.";

export const LEGEND = {
  programColours: " program colours (repeat every 10 programs)",
  masked: "masked-off lane (address computed, not read or written)",
  untouched: "not touched",
  unwritten: "never written",
  multi: "stored by more than one program",
  stray: "out of bounds (an active lane outside its tensor)",
};

export const UNWRITTEN_ADVICE = "Check that the grid covers the whole tensor and that the mask does not cut off real elements.";

export function programLabel(pid) {
  return `program ${formatPid(pid)}`;
}

function rangeText([a, b]) {
  return a === b ? String(a) : `${a}..${b}`;
}

function runText([start, length]) {
  return rangeText([start, start + length - 1]);
}

// "896 lanes past the end of x (offsets 98432..99327)", and "... before the start of x (...)" for
// lanes at negative offsets.
export function strayText(name, runs) {
  const part = (side, where) => {
    if (!side.length) return null;
    const [first] = side[0];
    const [start, length] = side[side.length - 1];
    const count = runsLength(side);
    return `${plural(count, "lane")} ${where} ${name} (offset${count === 1 ? "" : "s"} ${rangeText([first, start + length - 1])})`;
  };
  return [part(runs.filter(([start]) => start >= 0), "past the end of"), part(runs.filter(([start]) => start < 0), "before the start of")]
    .filter(Boolean).join(" and ");
}

const ACCESS_NOUNS = { load: "load", store: "store", atomic: "atomic update" };

// "The run stopped at program (96, 0, 0): its load on line 10 reaches 896 lanes past the end of x (...)."
function strayAccessText(model, stray) {
  const where = stray.line == null ? "" : ` on line ${stray.line}`;
  return `The run stopped at ${programLabel(model.programs[stray.program].pid)}: its ${ACCESS_NOUNS[stray.op] ?? stray.op}${where} `
    + `reaches ${strayText(stray.tensor, stray.runs)}.`;
}

export function summaryText(model) {
  const [gx, gy, gz] = model.grid;
  const total = model.programsTotal;
  let words = `Launch grid ${formatTuple([gx, gy, gz])}: ${plural(total, "program")}.`;
  if (model.sampled || model.programs.length < total) {
    const { sample } = model;
    const which = sample ? `the first ${formatCount(sample.first)}, every ${formatOrdinal(sample.every)} in between and the last ${formatCount(sample.last)}`
      : "a sample";
    const fetched = model.fetched ? `, and ${plural(model.fetched, "program")} fetched on request` : "";
    words += ` Showing ${formatCount(model.programs.length)} of ${formatCount(total)} programs (${which}${fetched}); the others are drawn grey.`;
  }
  for (const stray of model.strays) words += ` ${strayAccessText(model, stray)}`;
  return words;
}

// A tensor's out-of-bounds line, for its card: null when no lane strayed outside it.
export function strayNote(tensor) {
  if (!tensor.strays.length) return null;
  const hidden = tensor.straysNotDrawn ? ` (${formatCount(tensor.straysNotDrawn)} of them not drawn: before its start or far past its end)` : "";
  return `Out of bounds: ${strayText(tensor.name, tensor.strays)}${hidden}.`;
}

export const fetchingCaption = (pid) => `fetching ${programLabel(pid)}…`;

export const fetchFailedCaption = (pid, message) => `Could not fetch ${programLabel(pid)}: ${message}`;

// "pid 2 of 97 programs" (its program id, as tl.program_id gives it, never a position in a list)
// while a program is selected; "97 programs" otherwise.
export function selectionCount(model, selected) {
  const count = plural(model.programsTotal, "program");
  if (selected === null) return count;
  const { pid } = model.programs[selected];
  const [, gy, gz] = model.grid;
  const id = gz > 1 ? formatTuple(pid) : gy > 1 ? formatTuple(pid.slice(0, 2)) : formatCount(pid[0]);
  return `pid ${id} of ${count}`;
}

export function tensorMeta(tensor) {
  const role = { input: "input", output: "output", inout: "input and output" }[tensor.role] ?? tensor.role;
  return `${role} · ${tensor.dtype ?? ""} · shape (${tensor.shape.join(", ")}${tensor.shape.length === 1 ? "," : ""})`;
}

export function colouringText(tensor) {
  return tensor.writes ? "colour: the program that stored each element" : "colour: the program that loaded each element";
}

export function tensorAxes(tensor, view) {
  return { x: tensor.oneD ? "offset within the row" : "column",
           y: view.full.allRows === 1 ? null : tensor.oneD ? "row starts at offset" : "row" };
}

export function gridAxes(grid) {
  return { x: grid.folded ? `program_id(0) mod ${grid.cols}` : "program_id(0)",
           y: grid.folded ? `1-D grid, ${grid.cols} a row` : grid.twoD ? "program_id(1)" : null };
}

export function tensorNote(view) {
  const { tensor, layout } = view;
  const notes = [];
  if (tensor.oneD && layout.allRows > 1) notes.push(`1-D, drawn in rows of ${formatCount(layout.width)} elements`);
  if (!tensor.oneD && tensor.shape.length > 2) notes.push(`leading dimensions flattened into rows of ${formatCount(layout.width)}`);
  const perCell = layout.bx * layout.by;
  if (perCell > 1) {
    const block = layout.by > 1 ? ` (${layout.by} rows × ${layout.bx} columns)` : "";
    notes.push(`each cell = ${formatCount(perCell)} elements${block}, coloured by the first program among them; drag a box to zoom in`);
  }
  if (view.layout !== view.full) notes.push("zoomed in: double-click to see all of it");
  if (tensor.extent > tensor.numel) {
    const strays = tensor.strays.some(([start, length]) => start + length > tensor.numel);
    const masked = tensor.accesses.some((access) => access.masked.some(([start, length]) => start + length > tensor.numel));
    const lanes = strays && masked ? "stray and masked-off lanes" : strays ? "its stray lanes" : "masked-off lanes";
    notes.push(`drawn past its end (${formatCount(tensor.numel)} elements) where ${lanes} point`);
  }
  if (tensor.lanesNotDrawn) notes.push(`${formatCount(tensor.lanesNotDrawn)} masked-off lanes point far outside it (not drawn)`);
  if (!tensor.accesses.length) notes.push("no program accessed it");
  return notes.join("; ");
}

// ---- coverage ---------------------------------------------------------------------------------

// "out[0]", "out[0..4, 8..9]", "12 elements of out".
function elementsText(name, runs, count) {
  return runs.length <= 3 ? `${name}[${runs.map(runText).join(", ")}]` : `${formatCount(count)} elements of ${name}`;
}

function atomicNames(kinds) {
  const named = kinds.filter((kind) => kind !== "atomic").map((kind) => `tl.${kind}`);
  return named.length ? ` (${named.join(", ")})` : "";
}

// "out[0] was updated atomically by 10 programs (tl.atomic_add), which is not a race"
function atomicClause(name, atomic) {
  const { elements, runs, fewest, most } = atomic;
  const programs = fewest === most ? (most === 1 ? "one program" : plural(most, "program")) : `${fewest} to ${most} programs`;
  const each = elements > 1 && most > 1 ? " each" : "";
  const traced = atomic.complete ? "" : " among the traced programs";
  return `${elementsText(name, runs, elements)} ${elements === 1 ? "was" : "were"} updated atomically by ${programs}${each}${traced}`
    + `${atomicNames(atomic.kinds)}, which is not a race`;
}

// "the run stopped first, at the out-of-bounds store to out on line 12 of program (96, 0, 0)"
export function stoppedText(stopped) {
  const where = stopped.line == null ? "" : ` on line ${stopped.line}`;
  return `the run stopped first, at the out-of-bounds ${ACCESS_NOUNS[stopped.op] ?? stopped.op} `
    + `${stopped.op === "load" ? "from" : "to"} ${stopped.tensor}${where} of ${programLabel(stopped.pid)}`;
}

// What to check about unwritten elements: the grid and mask, unless the run stopped before
// writing them (the out-of-bounds access is then the thing to fix).
export function unwrittenAdvice(verdict) {
  return verdict.unwritten && !verdict.stopped ? UNWRITTEN_ADVICE : "";
}

// The verdict of trace-model.js's coverageVerdicts, in words: {ok, text}; null without one.
export function coverageText(verdict) {
  if (!verdict) return null;
  const name = verdict.tensor;
  const parts = [];
  if (verdict.unwritten) {
    const runs = verdict.unwrittenRuns;
    const where = runs.length && runs.length <= 3 ? ` (${runs.map(runText).join(", ")})` : "";
    parts.push(`${plural(verdict.unwritten, "element")} of ${name} ${verdict.unwritten === 1 ? "was" : "were"} never written${where}`
      + (verdict.stopped ? `: ${stoppedText(verdict.stopped)}` : ""));
  }
  if (verdict.multi) {
    parts.push(`${plural(verdict.multi, "element")} of ${name} ${verdict.multi === 1 ? "was" : "were"} stored by more than one program `
      + "(the last store wins, in no fixed order)");
  }
  const atomic = verdict.atomic ? atomicClause(name, verdict.atomic) : null;
  if (!parts.length) {
    return { ok: true, text: atomic ? `Every element of ${name} was written; ${atomic}.` : `Every element of ${name} was written exactly once.` };
  }
  const drawn = verdict.truncated ? " Only the first ranges of them are drawn." : "";
  return { ok: false, text: `${[...parts, atomic].filter(Boolean).join("; ")}.${drawn}` };
}

// ---- a program's caption ----------------------------------------------------------------------

// How a caption words one kind of access: "loads x[..]", "stores out[..]", "updates out[..] with tl.atomic_add".
function phraseOf(region) {
  if (region.strays.length) return { verb: `was stopped before ${{ load: "loading", store: "storing" }[region.op] ?? "updating"}`, tail: "" };
  if (region.op !== "atomic") return { verb: `${region.op}s`, tail: "" };
  if (!region.atomic) return { verb: "atomically updates", tail: "" };
  return { verb: "updates", tail: ` with tl.atomic_${region.atomic}` };
}

// "c[32..63, 64..95]" for a rectangle of a matrix, "x[0..127]" for a few runs of offsets.
export function regionText(tensor, name, runs) {
  const merged = mergeRuns(runs);
  if (tensor && !tensor.oneD && tensor.shape.length === 2) {
    const rect = asRectangle(merged, tensor.shape[1]);
    if (rect) return `${name}[${rangeText(rect.rows)}, ${rangeText(rect.cols)}]`;
  }
  if (merged.length <= 3) return `${name}[${merged.map(runText).join(", ")}]`;
  const first = merged[0][0];
  const last = merged[merged.length - 1];
  return `${name} (${formatCount(runsLength(merged))} elements in ${merged.length} pieces, offsets ${first}..${last[0] + last[1] - 1})`;
}

// "2 lanes masked off (offsets 10..11)" when the accesses of 1-D tensors mask the same offsets,
// else per tensor, with rows and columns for a matrix: "x: 56 lanes masked off (x[18, 0..55])".
function maskedText(maskedBy, byTensor, touched) {
  if (!maskedBy.size) return "no lanes masked off";
  const entries = [...maskedBy].map(([name, runs]) => [name, mergeRuns(runs)]);
  const lanes = (runs) => `${plural(runsLength(runs), "lane")} masked off`;
  const offsets = (runs) => (runs.length <= 3 ? ` (offset${runsLength(runs) === 1 ? "" : "s"} ${runs.map(runText).join(", ")})` : "");
  const [, firstRuns] = entries[0];
  const same = entries.every(([name, runs]) => byTensor.get(name)?.oneD && JSON.stringify(runs) === JSON.stringify(firstRuns));
  if (same && maskedBy.size === touched.size) return lanes(firstRuns) + offsets(firstRuns);
  if (same) return `${[...maskedBy.keys()].join(", ")}: ${lanes(firstRuns)}${offsets(firstRuns)}`;  // not every tensor's
  return entries.map(([name, runs]) => {
    const tensor = byTensor.get(name);
    const rect = tensor && tensor.shape.length === 2 ? asRectangle(runs, tensor.shape[1]) : null;
    const where = rect ? ` (${name}[${rangeText(rect.rows)}, ${rangeText(rect.cols)}])` : offsets(runs);
    return `${name}: ${lanes(runs)}${where}`;
  }).join(", ");
}

export function programCaption(program, tensors) {
  const byTensor = new Map(tensors.map((t) => [t.name, t]));
  const phrases = new Map(); // access kind -> {verb, tail, parts}, in the kernel's order
  const maskedBy = new Map(); // tensor name -> runs
  const strays = [];
  const touched = new Set();
  for (const region of regionsOf(program)) {
    const kind = region.strays.length ? `stopped ${region.kind}` : region.kind;
    touched.add(region.tensor);
    if (!phrases.has(kind)) phrases.set(kind, { ...phraseOf(region), parts: [] });
    if (region.offsets.length) phrases.get(kind).parts.push(regionText(byTensor.get(region.tensor), region.tensor, region.offsets));
    if (region.masked.length) maskedBy.set(region.tensor, [...(maskedBy.get(region.tensor) ?? []), ...region.masked]);
    if (region.strays.length) strays.push(strayText(region.tensor, region.strays));
  }
  const clauses = [...phrases.values()].filter(({ parts }) => parts.length).map(({ verb, tail, parts }) => `${verb} ${parts.join(", ")}${tail}`);
  let words = `${programLabel(program.pid)} ${clauses.join(", ") || "touches no element"}`;
  words += `; ${maskedText(maskedBy, byTensor, touched)}`;
  if (strays.length) words += `; out of bounds: ${strays.join(", ")}`;
  if (program.truncated) words += " (only its first accesses were recorded)";
  const lines = sourceLines(program);
  if (lines.length) words += ` · source line${lines.length === 1 ? "" : "s"} ${lines.join(", ")}`;
  return words;
}

// ---- tooltips ---------------------------------------------------------------------------------

const HOVER_LIMIT = 4; // accesses listed in a tooltip

const STRAY_VERBS = { load: "loads", store: "stores to", atomic: "updates" };

// Where an offset outside the tensor lies: "8 past the end of x (98,432 elements)".
function outsideText(tensor, offset) {
  const size = `(${formatCount(tensor.numel)} elements)`;
  if (offset < 0) return `${formatCount(-offset)} before the start of ${tensor.name} ${size}`;
  return offset === tensor.numel ? `just past the end of ${tensor.name} ${size}` : `${formatCount(offset - tensor.numel)} past the end of ${tensor.name} ${size}`;
}

function elementText(tensor, offset) {
  if (tensor.oneD || tensor.shape.length < 2 || offset >= tensor.numel || offset < 0) return `${tensor.name}[${offset}]`;
  const cols = tensor.shape[tensor.shape.length - 1];
  return `${tensor.name}[${Math.floor(offset / cols)}, ${offset % cols}] (offset ${offset})`;
}

// A tensor cell's tooltip: the element (or the cell's first element) and who touched it.
export function tensorHoverLines(view, cell, programs) {
  const { tensor, layout } = view;
  const first = firstIndexOfCell(layout, cell);
  const perCell = layout.bx * layout.by;
  const lines = [perCell > 1 ? `cell of ${formatCount(perCell)} elements from ${elementText(tensor, first)}` : elementText(tensor, first)];
  if (first >= tensor.numel) lines.push(outsideText(tensor, first));
  if (perCell > 1) {
    if (view.owner[cell] < 0 && view.strayOwner[cell] >= 0) {
      lines.push(`out of bounds: ${programLabel(programs[view.strayOwner[cell]].pid)} reaches here (the run's error)`);
      return lines;
    }
    const owner = view.owner[cell] >= 0 ? view.owner[cell] : view.ghostOwner[cell];
    lines.push(owner >= 0 ? `first program here: ${formatPid(programs[owner].pid)}` : "no program touched these elements");
    return lines;
  }
  const touches = accessesAt(tensor, first);
  for (const { access, masked, stray } of touches.slice(0, HOVER_LIMIT)) {
    const who = programLabel(programs[access.program].pid);
    const where = access.line == null ? "" : ` on line ${access.line}`;
    if (stray) lines.push(`${who} ${STRAY_VERBS[access.op] ?? "touches"} it${where}: out of bounds, the run's error`);
    else if (masked) lines.push(`${who}: masked-off lane of the ${access.op}${where}, not ${access.op === "load" ? "read" : "written"}`);
    else lines.push(`${who}: ${access.op}${where}`);
  }
  if (touches.length > HOVER_LIMIT) lines.push(`and ${touches.length - HOVER_LIMIT} more accesses`);
  if (!touches.length) lines.push("no program touched this element");
  return lines;
}

// A program grid cell's tooltip; `index` is the traced program drawn there (-1: none); `fetchable`:
// a click on an untraced program asks the server for it.
export function gridHoverLines(pid, grid, index, programs, fetchable = false) {
  const perCell = grid.layout.bx * grid.layout.by;
  if (perCell > 1) {
    const traced = index >= 0 ? `first traced: ${formatPid(programs[index].pid)}` : fetchable ? "none traced: click to fetch the first" : "none traced";
    return [`programs from ${formatPid(pid)}, ${perCell} per cell`, traced];
  }
  return [programLabel(pid), index >= 0 ? "click to follow it" : fetchable ? "not traced (sampled): click to fetch it" : "not traced (sampled)"];
}
