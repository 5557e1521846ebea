// The trace as cells to draw: each tensor folded into rows and binned to a budget of cells, each
// cell's colour class (which program owns it, dimmed or ghosted by the selection), and the program
// grid's cells. Pure, as trace-model.js, whose indexed trace (traceModel) it draws.
import { isDrawnOp } from "./trace-model.js";

// ---- colour classes ---------------------------------------------------------------------------

// Every drawn cell holds a colour class (a small integer); the figures map classes to colours, so a
// selection only recomputes an array of classes. Programs cycle through PROGRAM_COLOURS colours.
export const PROGRAM_COLOURS = 10;
const K = PROGRAM_COLOURS;
const UNTOUCHED = 0;
const vividClass = (linear) => 1 + (linear % K);
const dimClass = (linear) => 1 + K + (linear % K);
const ghostClass = (linear) => 1 + 2 * K + (linear % K);
const GHOST_DIM = 1 + 3 * K;
const STRAY = GHOST_DIM + 1; // an active lane outside its tensor: the run's out-of-bounds error
export const CLASS_COUNT = STRAY + 1;

const TENSOR_CELL_BUDGET = 65536; // drawn cells per tensor; more elements are binned
const GRID_CELL_BUDGET = 16384; // drawn cells of the program grid

// ---- folding and binning ----------------------------------------------------------------------

// Linear index i sits at row floor(i / width), column i % width. The drawing shows a window of
// rows x cols starting at (row0, col0) (the area; all of it unless zoomed); a cell covers bx columns x by rows.
function makeLayout(length, width, budget, area = null) {
  const allRows = Math.max(1, Math.ceil(length / width));
  const { row0 = 0, rows = allRows, col0 = 0, cols = width } = area ?? {};
  let bx = 1;
  let by = 1;
  while (Math.ceil(rows / by) * Math.ceil(cols / bx) > budget) {
    if (Math.ceil(cols / bx) >= Math.ceil(rows / by)) bx *= 2;
    else by *= 2;
  }
  return { length, width, allRows, row0, col0, rows, cols, bx, by, cellRows: Math.ceil(rows / by), cellCols: Math.ceil(cols / bx) };
}

export function cellCount(layout) {
  return layout.cellRows * layout.cellCols;
}

// Visits every cell of the window that holds an element of [start, start + length), some of them
// more than once. Whole rows go a cell row at a time, so long runs cost cells, not elements.
function forEachCell(layout, start, length, visit) {
  const { width, row0, col0, rows, cols, bx, by, cellCols } = layout;
  const begin = Math.max(0, start);
  const end = Math.min(start + length, layout.length);
  if (begin >= end) return;
  const lastRow = Math.min(Math.floor((end - 1) / width), row0 + rows - 1);
  let row = Math.max(Math.floor(begin / width), row0);
  while (row <= lastRow) {
    const from = Math.max(begin - row * width, 0);
    const to = Math.min(end - row * width, width);
    if (from === 0 && to === width) {
      const lastFullRow = Math.min(lastRow, Math.floor(end / width) - 1);
      for (let r = Math.floor((row - row0) / by); r <= Math.floor((lastFullRow - row0) / by); r++) {
        for (let c = 0; c < cellCols; c++) visit(r * cellCols + c);
      }
      row = lastFullRow + 1;
      continue;
    }
    const low = Math.max(from, col0);
    const high = Math.min(to, col0 + cols);
    const base = Math.floor((row - row0) / by) * cellCols;
    for (let c = Math.floor((low - col0) / bx); low < high && c <= Math.floor((high - 1 - col0) / bx); c++) visit(base + c);
    row += 1;
  }
}

export function firstIndexOfCell(layout, cell) {
  const row = layout.row0 + Math.floor(cell / layout.cellCols) * layout.by;
  return row * layout.width + layout.col0 + (cell % layout.cellCols) * layout.bx;
}

// The zoomed window of an axis range change, snapped to whole elements; null for everything.
export function windowOf(full, xRange, yRange) {
  const clamp = (v, low, high) => Math.min(high, Math.max(low, v));
  const col0 = clamp(Math.floor(Math.min(...xRange) + 0.5), 0, full.width - 1);
  const colEnd = clamp(Math.ceil(Math.max(...xRange) + 0.5), col0 + 1, full.width);
  const row0 = clamp(Math.floor(Math.min(...yRange) + 0.5), 0, full.allRows - 1);
  const rowEnd = clamp(Math.ceil(Math.max(...yRange) + 0.5), row0 + 1, full.allRows);
  if (col0 === 0 && row0 === 0 && colEnd === full.width && rowEnd === full.allRows) return null;
  return { row0, rows: rowEnd - row0, col0, cols: colEnd - col0 };
}

// Runs of set flags: [first cell, count].
export function cellRuns(flags) {
  const runs = [];
  for (let c = 0; c < flags.length; c++) {
    if (!flags[c]) continue;
    const last = runs[runs.length - 1];
    if (last && last[0] + last[1] === c) last[1] += 1;
    else runs.push([c, 1]);
  }
  return runs;
}

// ---- one tensor's cells -----------------------------------------------------------------------

// The tensor folded `width` elements a row (a matrix: its own rows) and binned into cells; per
// cell the first program (in launch order) that drew it, the first with a masked-off lane there,
// the first with a stray lane there, and its coverage flag (1: never written, 2: stored by more
// than one program).
export function tensorView(tensor, width, area = null) {
  const cols = tensor.oneD ? Math.min(width, Math.max(1, tensor.extent)) : tensor.shape[tensor.shape.length - 1] || 1;
  const full = makeLayout(Math.max(1, tensor.extent), cols, TENSOR_CELL_BUDGET);
  const layout = area ? makeLayout(full.length, full.width, TENSOR_CELL_BUDGET, area) : full;
  const cells = cellCount(layout);
  const owner = new Int32Array(cells).fill(-1);
  const ghostOwner = new Int32Array(cells).fill(-1);
  const strayOwner = new Int32Array(cells).fill(-1);
  const claim = (owners, program) => (c) => { if (owners[c] < 0) owners[c] = program; };
  for (const access of tensor.accesses) {
    if (isDrawnOp(tensor, access.op)) {
      for (const [s, n] of access.offsets) forEachCell(layout, s, n, claim(owner, access.program));
    }
    for (const [s, n] of access.masked) forEachCell(layout, s, n, claim(ghostOwner, access.program));
    for (const [s, n] of access.strays) forEachCell(layout, s, n, claim(strayOwner, access.program));
  }
  const coverage = new Uint8Array(cells);
  for (const [s, n] of tensor.coverage?.unwrittenRuns ?? []) forEachCell(layout, s, n, (c) => { coverage[c] = 1; });
  for (const [s, n] of tensor.coverage?.multiRuns ?? []) forEachCell(layout, s, n, (c) => { coverage[c] = 2; });
  return { tensor, full, layout, owner, ghostOwner, strayOwner, coverage };
}

// A program whose elements would be a sliver of the whole drawing (a row or two of a tall tensor,
// e.g. 4 px rows for the default vector add) gets a window of FOCUS_ROWS rows around its rows,
// all columns; null: its rows already show (or it touches nothing of this tensor).
const FOCUS_ROWS = 9;

// [first, last] row of the whole drawing that the program touches (masked and stray lanes included); null: none.
export function programRows(view, program) {
  const { full } = view;
  let first = Infinity;
  let last = -Infinity;
  for (const access of view.tensor.accesses) {
    if (access.program !== program) continue;
    for (const [s, n] of [...access.offsets, ...access.masked, ...access.strays]) {
      const begin = Math.max(0, s);
      const end = Math.min(s + n, full.length);
      if (begin >= end) continue;
      first = Math.min(first, Math.floor(begin / full.width));
      last = Math.max(last, Math.floor((end - 1) / full.width));
    }
  }
  return first > last ? null : [first, last];
}

export function programWindow(view, program) {
  const { full } = view;
  const rows = full.allRows > FOCUS_ROWS * 2 ? programRows(view, program) : null;
  if (!rows || rows[1] - rows[0] + 1 > full.allRows / 4) return null;
  const [first, last] = rows;
  const count = Math.max(FOCUS_ROWS, last - first + 1 + 4);
  const row0 = Math.max(0, Math.min(full.allRows - count, Math.floor((first + last + 1 - count) / 2)));
  return { row0, rows: count, col0: 0, cols: full.width };
}

// The program a click on `cell` follows: its owner, else the program with a stray lane there, else
// the one with a masked lane there; -1: none.
export function programAtCell(view, cell) {
  return [view.owner[cell], view.strayOwner[cell], view.ghostOwner[cell]].find((program) => program >= 0) ?? -1;
}

// A cell drawn in the error's colour: a stray lane there, and no element of the tensor.
function isStrayCell(view, cell) {
  return view.strayOwner[cell] >= 0 && view.owner[cell] < 0;
}

// Flags of the cells drawn as stray lanes.
export function strayCells(view) {
  return Uint8Array.from(view.strayOwner, (_, c) => (isStrayCell(view, c) ? 1 : 0));
}

// The cells the selected program (an index, or null) touched and those where its lanes were masked off.
export function selectionMarks(view, program) {
  const cells = cellCount(view.layout);
  const touched = new Uint8Array(cells);
  const masked = new Uint8Array(cells);
  if (program === null) return { touched, masked };
  for (const access of view.tensor.accesses) {
    if (access.program !== program) continue;
    for (const [s, n] of access.offsets) forEachCell(view.layout, s, n, (c) => { touched[c] = 1; });
    for (const [s, n] of access.masked) forEachCell(view.layout, s, n, (c) => { masked[c] = 1; });
  }
  return { touched, masked };
}

// Each cell's colour class; NaN past the tensor's end where nothing is drawn.
export function tensorClasses(view, marks, selected, programs) {
  const { layout, owner, ghostOwner } = view;
  const classes = new Float32Array(cellCount(layout));
  for (let c = 0; c < classes.length; c++) {
    const own = owner[c] >= 0 ? programs[owner[c]].linear : -1;
    const ghost = ghostOwner[c] >= 0 ? programs[ghostOwner[c]].linear : -1;
    const inTensor = firstIndexOfCell(layout, c) < view.tensor.numel;
    let value = inTensor ? UNTOUCHED : NaN;
    if (selected === null) {
      if (own >= 0) value = vividClass(own);
      else if (ghost >= 0) value = ghostClass(ghost);
    } else if (marks.touched[c]) value = vividClass(programs[selected].linear);
    else if (marks.masked[c] && own < 0) value = ghostClass(programs[selected].linear);
    else if (own >= 0) value = dimClass(own);
    else if (ghost >= 0) value = GHOST_DIM;
    classes[c] = isStrayCell(view, c) ? STRAY : value; // the error shows whichever program is selected
  }
  return classes;
}

// Cells hatched as masked-off lanes: the selected program's, or every unowned one; never a stray lane's.
export function hatchedCells(view, marks, selected) {
  const cells = [];
  for (let c = 0; c < view.owner.length; c++) {
    const hatched = selected === null ? view.owner[c] < 0 && view.ghostOwner[c] >= 0 : marks.masked[c] === 1;
    if (hatched && !isStrayCell(view, c)) cells.push(c);
  }
  return cells;
}

// ---- the program grid -------------------------------------------------------------------------

// A 1-D grid of many programs is folded into rows: a power of two near twice its square root.
function foldWidth(count) {
  return Math.min(256, Math.max(16, 2 ** Math.round(Math.log2(Math.sqrt(count * 4)))));
}

// One z slice of the launch grid as cells: each cell's colour class and traced program (-1: none
// traced there; the selected program wins its cell).
export function gridCells(model, slice, selected) {
  const { grid, programs } = model;
  const [gx, gy] = grid;
  const cols = gy === 1 && gx > 16 ? foldWidth(gx) : gx;
  const layout = makeLayout(gx * gy, cols, GRID_CELL_BUDGET);
  const classes = new Float32Array(cellCount(layout)).fill(UNTOUCHED);
  const sliceStart = slice * gx * gy;
  const selectedLinear = selected === null ? -1 : programs[selected].linear;
  for (let c = 0; c < classes.length; c++) if (firstIndexOfCell(layout, c) >= gx * gy) classes[c] = NaN;
  const cellProgram = new Int32Array(classes.length).fill(-1);
  for (const [index, program] of programs.entries()) {
    const local = program.linear - sliceStart;
    if (local < 0 || local >= gx * gy) continue;
    forEachCell(layout, local, 1, (c) => {
      if (program.linear === selectedLinear || cellProgram[c] < 0) cellProgram[c] = index;
    });
  }
  for (let c = 0; c < classes.length; c++) {
    const index = cellProgram[c];
    if (index < 0) continue;
    const linear = programs[index].linear;
    classes[c] = selectedLinear < 0 || linear === selectedLinear ? vividClass(linear) : dimClass(linear);
  }
  const selectedCells = [];
  if (selectedLinear >= sliceStart && selectedLinear < sliceStart + gx * gy) {
    forEachCell(layout, selectedLinear - sliceStart, 1, (c) => selectedCells.push(c));
  }
  return { layout, classes, cellProgram, selectedCells, folded: cols !== gx, cols, twoD: gy > 1, slice, programsInSlice: gx * gy };
}

// The program id of a grid cell's first program (whether traced or not).
export function pidOfGridCell(model, grid, cell) {
  const local = firstIndexOfCell(grid.layout, cell);
  const [gx, gy] = model.grid;
  return [local % gx, Math.floor(local / gx) % gy, grid.slice];
}
