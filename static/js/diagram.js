// The block-assignment diagram: for every tensor, which program loaded or stored each element,
// and which lanes a mask switched off. Drawn with plotly.js (the page loads the global `Plotly`).
//
// Every drawn cell holds a colour class (a small integer) and one stepped colour scale maps the
// classes to colours, so a selection only recomputes a typed array of classes. Large tensors
// are binned: one cell stands for a bx x by block of elements.
import { emit } from './hub.js';

const PALETTE = ['#4e79a7', '#f28e2b', '#59a14f', '#e15759', '#76b7b2',
  '#edc948', '#b07aa1', '#ff9da7', '#9c755f', '#17becf'];
const K = PALETTE.length;
const UNTOUCHED = 0;
const vividClass = (linear) => 1 + (linear % K);
const dimClass = (linear) => 1 + K + (linear % K);
const ghostClass = (linear) => 1 + 2 * K + (linear % K);
const GHOST_DIM = 1 + 3 * K;
const CLASS_COUNT = GHOST_DIM + 1;

const TENSOR_CELL_BUDGET = 65536; // drawn cells per tensor; more elements are binned
const GRID_CELL_BUDGET = 16384; // drawn cells of the program grid
const OVERLAY_LIMIT = 3000; // cells drawn with vector marks (hatching, X); past that, tinted cells
const LABEL_LIMIT = 600; // cells small and few enough to print their element offset
const MAX_CELL_PX = 44;
const MAX_PLOT_PX = 560;
const MIN_PLOT_PX = 240; // narrowest plot area: long thin tensors get wide cells instead
const MIN_ROW_PX = 4; // shortest row: wide flat tensors get tall cells instead
const MIN_PLOT_HEIGHT_PX = 130; // a plot of several rows is at least this tall, if rows allow
const SMALL_CELL_PX = 10; // smaller cells get outlines around regions instead of marks in each cell
const MIN_FIGURE_PX = 230; // room for the axis titles
const CARD_CHROME_PX = 48; // the view's and a tensor card's padding and border
const MIN_MARK_PX = 12; // the selected region's outline is never thinner than this
const MARGIN = { l: 64, r: 12, t: 8, b: 40 };
const PLAY_STEP_MS = 900;
const HOVER_LIMIT = 4; // accesses listed in a tooltip

let current = null; // the diagram rendered last: selectProgram() acts on it

export function renderDiagram(container, trace, { selectedPid = null } = {}) {
  current?.dispose();
  container.replaceChildren();
  container.classList.add('diagram');
  if (!trace || !trace.programs?.length) {
    container.append(el('p', 'diagram-empty', 'No trace: run the kernel with the trace option on to see which program touches which element.'));
    current = null;
    return Promise.resolve();
  }
  current = new Diagram(container, buildModel(trace));
  const restored = current.indexOfPid(selectedPid);
  return restored === null ? current.drawAll() : current.select(restored);
}

export function selectProgram(pid) {
  if (!current) return Promise.resolve();
  return current.select(current.indexOfPid(pid));
}

// ---- the trace, indexed --------------------------------------------------------------------

function buildModel(trace) {
  const [gx, gy, gz] = [0, 1, 2].map((axis) => trace.grid?.[axis] ?? 1);
  const programs = trace.programs.map((program) => {
    const pid = [0, 1, 2].map((axis) => program.pid[axis] ?? 0);
    return { pid, linear: pid[0] + gx * (pid[1] + gy * pid[2]), accesses: program.accesses, truncated: Boolean(program.truncated) };
  }).sort((a, b) => a.linear - b.linear);
  // Outputs first: what each program stored is the picture a learner came for; inputs follow, in order.
  const stored = (info) => (info.role === 'output' || info.role === 'inout' ? 0 : 1);
  const tensors = Object.entries(trace.tensors ?? {}).sort(([, a], [, b]) => stored(a) - stored(b))
    .map(([name, info]) => makeTensor(name, info, trace.coverage?.[name]));
  const byName = new Map(tensors.map((tensor) => [tensor.name, tensor]));
  programs.forEach((program, index) => {
    for (const access of program.accesses) byName.get(access.tensor)?.accesses.push({ ...access, program: index });
  });
  tensors.forEach(measureExtent);
  tensors.forEach((tensor) => { tensor.rowWidth = defaultRowWidth(tensor); });
  return {
    grid: [gx, gy, gz], programs, tensors,
    programsTotal: trace.programs_total ?? programs.length,
    sampled: Boolean(trace.sampled),
    sample: trace.sample ?? null,
  };
}

function makeTensor(name, info, coverage) {
  const shape = info.shape ?? [];
  return {
    name, shape, dtype: info.dtype, role: info.role, coverage,
    numel: shape.reduce((a, b) => a * b, 1),
    oneD: shape.length <= 1,
    writes: info.role !== 'input',
    accesses: [],
    extent: 0,
    rowWidth: 1, // elements per drawn row of a 1-D tensor, unless the user picks another
    lanesNotDrawn: 0, // masked-off lanes that point before the start or far past the end
  };
}

// Outputs are coloured by who stored them, inputs by who loaded them.
function isDrawnOp(tensor, op) {
  return tensor.writes ? op !== 'load' : op === 'load';
}

// The drawing reaches past the tensor's end where masked-off lanes point, up to as far again as
// the tensor is long (at least 4096 elements): a masked lane may hold any address at all.
function measureExtent(tensor) {
  const reach = tensor.numel + Math.max(tensor.numel, 4096);
  let extent = tensor.numel;
  for (const access of tensor.accesses) {
    for (const [start, length] of [...access.offsets, ...access.masked]) {
      extent = Math.max(extent, Math.min(start + length, reach));
      tensor.lanesNotDrawn += Math.max(0, Math.min(length, -start)) + Math.max(0, Math.min(length, start + length - reach));
    }
  }
  tensor.extent = extent;
}

// A 1-D tensor is folded into rows one block wide: its largest access, lanes masked or not.
// Accesses of one lane (one element per program) fold into a single row or a square instead.
function defaultRowWidth(tensor) {
  let lanes = 1;
  for (const access of tensor.accesses) lanes = Math.max(lanes, runsLength(access.offsets) + runsLength(access.masked));
  if (lanes > 1) return Math.min(4096, 2 ** Math.ceil(Math.log2(lanes)));
  return tensor.extent <= 64 ? Math.max(1, tensor.extent) : 2 ** Math.ceil(Math.log2(Math.sqrt(tensor.extent)));
}

function runsLength(runs) {
  return runs.reduce((sum, [, length]) => sum + length, 0);
}

function mergeRuns(runs) {
  const sorted = runs.filter(([, length]) => length > 0).sort((a, b) => a[0] - b[0]);
  const merged = [];
  for (const [start, length] of sorted) {
    const last = merged[merged.length - 1];
    if (last && start <= last[0] + last[1]) last[1] = Math.max(last[1], start + length - last[0]);
    else merged.push([start, length]);
  }
  return merged;
}

// ---- folding and binning -------------------------------------------------------------------

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

function cellCount(layout) {
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

function firstIndexOfCell(layout, cell) {
  const row = layout.row0 + Math.floor(cell / layout.cellCols) * layout.by;
  return row * layout.width + layout.col0 + (cell % layout.cellCols) * layout.bx;
}

// The zoomed window of a plotly axis range change, snapped to whole elements; null for everything.
function windowOf(full, xRange, yRange) {
  const clamp = (v, low, high) => Math.min(high, Math.max(low, v));
  const col0 = clamp(Math.floor(Math.min(...xRange) + 0.5), 0, full.width - 1);
  const colEnd = clamp(Math.ceil(Math.max(...xRange) + 0.5), col0 + 1, full.width);
  const row0 = clamp(Math.floor(Math.min(...yRange) + 0.5), 0, full.allRows - 1);
  const rowEnd = clamp(Math.ceil(Math.max(...yRange) + 0.5), row0 + 1, full.allRows);
  if (col0 === 0 && row0 === 0 && colEnd === full.width && rowEnd === full.allRows) return null;
  return { row0, rows: rowEnd - row0, col0, cols: colEnd - col0 };
}

// ---- one tensor's cells --------------------------------------------------------------------

function buildTensorView(tensor, width, area = null) {
  const cols = tensor.oneD ? Math.min(width, Math.max(1, tensor.extent)) : tensor.shape[tensor.shape.length - 1] || 1;
  const full = makeLayout(Math.max(1, tensor.extent), cols, TENSOR_CELL_BUDGET);
  const layout = area ? makeLayout(full.length, full.width, TENSOR_CELL_BUDGET, area) : full;
  const cells = cellCount(layout);
  const owner = new Int32Array(cells).fill(-1); // first program (trace order) that drew the cell
  const ghostOwner = new Int32Array(cells).fill(-1); // first program with a masked lane there
  for (const access of tensor.accesses) {
    if (isDrawnOp(tensor, access.op)) {
      for (const [s, n] of access.offsets) forEachCell(layout, s, n, (c) => { if (owner[c] < 0) owner[c] = access.program; });
    }
    for (const [s, n] of access.masked) forEachCell(layout, s, n, (c) => { if (ghostOwner[c] < 0) ghostOwner[c] = access.program; });
  }
  const coverage = new Uint8Array(cells); // 1: never written, 2: written more than once
  for (const [s, n] of tensor.coverage?.unwritten_runs ?? []) forEachCell(layout, s, n, (c) => { coverage[c] = 1; });
  for (const [s, n] of tensor.coverage?.multi_runs ?? []) forEachCell(layout, s, n, (c) => { coverage[c] = 2; });
  return { tensor, full, layout, owner, ghostOwner, coverage };
}

function selectionMarks(view, program) {
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

function tensorClasses(view, marks, selected, programs) {
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
    classes[c] = value;
  }
  return classes;
}

// Cells hatched as masked-off lanes: the selected program's, or every unowned one.
function hatchedCells(view, marks, selected) {
  const cells = [];
  for (let c = 0; c < view.owner.length; c++) {
    const hatched = selected === null ? view.owner[c] < 0 && view.ghostOwner[c] >= 0 : marks.masked[c] === 1;
    if (hatched) cells.push(c);
  }
  return cells;
}

function cellRuns(flags) {
  const runs = [];
  for (let c = 0; c < flags.length; c++) {
    if (!flags[c]) continue;
    const last = runs[runs.length - 1];
    if (last && last[0] + last[1] === c) last[1] += 1;
    else runs.push([c, 1]);
  }
  return runs;
}

// ---- the diagram ---------------------------------------------------------------------------

class Diagram {
  constructor(container, model) {
    this.container = container;
    this.model = model;
    this.selected = null; // index into model.programs
    this.rowWidth = null; // the user's row width for 1-D tensors; null: each tensor's block size
    this.slice = 0; // the z of the program grid shown
    this.theme = readTheme(container);
    this.playTimer = null;
    this.views = new Map();
    this.build();
    this.lastWidth = container.clientWidth;
    this.resizeObserver = new ResizeObserver(() => this.onResize());
    this.resizeObserver.observe(container);
  }

  dispose() {
    this.stop();
    this.resizeObserver.disconnect();
    for (const plot of this.container.querySelectorAll('.js-plotly-plot')) Plotly.purge(plot);
  }

  indexOfPid(pid) {
    if (!Array.isArray(pid)) return null;
    const index = this.model.programs.findIndex((p) => p.pid.every((v, axis) => v === (pid[axis] ?? 0)));
    return index >= 0 ? index : null;
  }

  build() {
    const { model } = this;
    const root = el('div', 'diagram-view');
    root.append(el('p', 'diagram-summary', summaryText(model)));
    const programs = el('div', 'diagram-programs');
    this.gridPlot = el('div', 'diagram-grid-plot');
    const side = el('div', 'diagram-side');
    side.append(this.buildControls(), this.caption = el('p', 'diagram-caption'), this.buildLegend());
    programs.append(this.gridPlot, side);
    root.append(programs, this.buildCoverageNotes());
    const tensors = el('div', 'diagram-tensors');
    for (const tensor of model.tensors) tensors.append(this.buildTensorFigure(tensor));
    this.tooltip = el('div', 'diagram-tooltip');
    this.tooltip.hidden = true;
    root.append(tensors, this.tooltip);
    this.container.append(root);
  }

  buildControls() {
    const { model } = this;
    const bar = el('div', 'diagram-controls');
    const button = (label, title, action) => {
      const b = el('button', 'diagram-button', label);
      b.type = 'button';
      b.title = title;
      b.addEventListener('click', action);
      return b;
    };
    this.prevButton = button('‹ Prev', 'Previous program', () => this.step(-1));
    this.playButton = button('▶ Play', 'Step through the programs one by one', () => this.togglePlay());
    this.nextButton = button('Next ›', 'Next program', () => this.step(1));
    this.slider = el('input', 'diagram-slider');
    Object.assign(this.slider, { type: 'range', min: 0, max: model.programs.length - 1, step: 1, value: 0 });
    this.slider.setAttribute('aria-label', 'Program');
    this.slider.addEventListener('input', () => this.select(Number(this.slider.value)));
    this.pidLabel = el('span', 'diagram-pid-label');
    const all = button('Show all', 'Colour every element by its program again', () => this.select(null));
    bar.append(this.prevButton, this.playButton, this.nextButton, this.slider, this.pidLabel, all);
    if (model.grid[2] > 1) bar.append(this.buildSliceControl());
    if (model.tensors.some((t) => t.oneD)) bar.append(this.buildWidthControl());
    return bar;
  }

  buildSliceControl() {
    const label = el('label', 'diagram-field', 'grid z ');
    this.sliceInput = el('input');
    Object.assign(this.sliceInput, { type: 'range', min: 0, max: this.model.grid[2] - 1, step: 1, value: 0 });
    this.sliceLabel = el('span', null, '0');
    this.sliceInput.addEventListener('input', () => {
      this.slice = Number(this.sliceInput.value);
      this.sliceLabel.textContent = String(this.slice);
      this.drawGrid();
    });
    label.append(this.sliceInput, this.sliceLabel);
    return label;
  }

  buildWidthControl() {
    const label = el('label', 'diagram-field', 'row width ');
    label.title = 'Elements per row for 1-D tensors; empty: the block size';
    const input = el('input', 'diagram-width');
    Object.assign(input, { type: 'number', min: 1, max: 65536, placeholder: 'block' });
    input.addEventListener('change', () => {
      const width = Math.round(Number(input.value));
      this.rowWidth = input.value !== '' && width >= 1 ? width : null;
      this.views.clear();
      this.drawTensors();
    });
    label.append(input);
    return label;
  }

  buildLegend() {
    const { programs } = this.model;
    const legend = el('div', 'diagram-legend');
    if (programs.length <= 12) {
      for (const [index, program] of programs.entries()) {
        const chip = swatchItem(`program ${pidText(program.pid)}`, PALETTE[program.linear % K]);
        chip.classList.add('diagram-legend-program');
        chip.addEventListener('click', () => this.select(index));
        legend.append(chip);
      }
    } else {
      const strip = el('span', 'diagram-legend-item');
      strip.append(...PALETTE.map((colour) => swatch(colour)), text(' program colours (repeat every 10 programs)'));
      legend.append(strip);
    }
    const { tensors } = this.model;
    if (tensors.some((t) => t.accesses.some((a) => a.masked.length))) {
      legend.append(swatchItem('masked-off lane (address computed, not read or written)', null, 'diagram-swatch-masked'));
    }
    legend.append(swatchItem('not touched', this.theme.untouched));
    if (tensors.some((t) => t.coverage?.unwritten)) legend.append(swatchItem('never written', null, 'diagram-swatch-unwritten'));
    if (tensors.some((t) => t.coverage?.multiply_written)) {
      legend.append(swatchItem('stored by more than one program', null, 'diagram-swatch-multi'));
    }
    return legend;
  }

  buildCoverageNotes() {
    const list = el('ul', 'diagram-coverage');
    for (const tensor of this.model.tensors) {
      const sentence = coverageText(tensor);
      if (!sentence) continue;
      const item = el('li', sentence.ok ? 'diagram-ok' : 'diagram-warn', sentence.text);
      item.dataset.tensor = tensor.name;
      list.append(item);
    }
    return list;
  }

  buildTensorFigure(tensor) {
    const figure = el('figure', 'diagram-tensor');
    figure.dataset.tensor = tensor.name;
    const head = el('figcaption');
    head.append(el('strong', 'diagram-tensor-name', tensor.name), text(' '), el('span', 'diagram-tensor-meta', tensorMeta(tensor)),
      el('div', 'diagram-tensor-colouring', colouringText(tensor)));
    const plot = el('div', 'diagram-plot');
    const note = el('p', 'diagram-note');
    figure.append(head, plot, note);
    return figure;
  }

  availableWidth() {
    return (this.container.clientWidth || 800) - CARD_CHROME_PX;
  }

  figureOf(tensor) {
    return this.container.querySelector(`.diagram-tensor[data-tensor="${CSS.escape(tensor.name)}"]`);
  }

  viewOf(tensor) {
    if (!this.views.has(tensor.name)) this.views.set(tensor.name, buildTensorView(tensor, this.rowWidth ?? tensor.rowWidth));
    return this.views.get(tensor.name);
  }

  // ---- drawing ----

  drawAll() {
    this.updateSelectionText();
    return Promise.all([this.drawGrid(), this.drawTensors()]);
  }

  drawTensors() {
    return Promise.all(this.model.tensors.map((tensor) => this.drawTensor(tensor)));
  }

  drawTensor(tensor) {
    const figure = this.figureOf(tensor);
    const plot = figure.querySelector('.diagram-plot');
    const view = this.viewOf(tensor);
    const marks = selectionMarks(view, this.selected);
    const classes = tensorClasses(view, marks, this.selected, this.model.programs);
    const hatched = hatchedCells(view, marks, this.selected);
    figure.dataset.cellElements = String(view.layout.bx * view.layout.by);
    figure.dataset.highlightedCells = JSON.stringify(this.selected === null ? [] : cellRuns(marks.touched));
    figure.dataset.maskedCells = JSON.stringify(this.selected === null ? [] : cellRuns(marks.masked));
    figure.querySelector('.diagram-note').textContent = tensorNote(view);
    const rowLabel = tensor.oneD ? (row) => formatCount(row * view.layout.width) : String;
    const size = plotSize(view.full, this.availableWidth(), rowLabel);
    const cellPx = cellPxOf(size, view.layout);
    const traces = [heatmapTrace(view.layout, classes, this.theme, cellPx, labelsFor(view, classes, cellPx))];
    traces.push(...hatchTraces(view.layout, hatched, cellPx, this.theme));
    traces.push(...coverageTraces(view.layout, view.coverage, this.theme));
    const layout = plotLayout(view.layout, size, this.theme, {
      x: tensor.oneD ? 'offset within the row' : 'column',
      y: view.full.allRows === 1 ? null : tensor.oneD ? 'row starts at offset' : 'row',
      rowLabel,
      zoomable: cellPxOf(size, view.full) < 8,
      shapes: [...endOfTensorShapes(view, this.theme), ...selectionOutlines(view.layout, marks, size, this.theme)],
      annotations: selectionLabel(view.layout, marks, size, this.selected === null ? null : this.model.programs[this.selected], this.theme),
    });
    return Plotly.react(plot, traces, layout, plotConfig(view.layout)).then(() => this.wireTensorPlot(plot, tensor));
  }

  drawGrid() {
    const { grid, programs } = this.model;
    const [gx, gy] = grid;
    const cols = gy === 1 && gx > 16 ? foldWidth(gx) : gx;
    const layout = makeLayout(gx * gy, cols, GRID_CELL_BUDGET);
    const classes = new Float32Array(cellCount(layout)).fill(UNTOUCHED);
    const sliceStart = this.slice * gx * gy;
    const selectedLinear = this.selected === null ? -1 : programs[this.selected].linear;
    for (let c = 0; c < classes.length; c++) if (firstIndexOfCell(layout, c) >= gx * gy) classes[c] = NaN;
    this.gridCellProgram = new Int32Array(classes.length).fill(-1);
    for (const [index, program] of programs.entries()) {
      const local = program.linear - sliceStart;
      if (local < 0 || local >= gx * gy) continue;
      forEachCell(layout, local, 1, (c) => {
        if (program.linear === selectedLinear) this.gridCellProgram[c] = index;
        else if (this.gridCellProgram[c] < 0) this.gridCellProgram[c] = index;
      });
    }
    for (let c = 0; c < classes.length; c++) {
      const index = this.gridCellProgram[c];
      if (index < 0) continue;
      const linear = programs[index].linear;
      classes[c] = selectedLinear < 0 || linear === selectedLinear ? vividClass(linear) : dimClass(linear);
    }
    const folded = cols !== gx;
    const rowLabel = folded ? (row) => formatCount(row * cols) : String;
    const size = plotSize(layout, Math.min(this.availableWidth() * 0.45, 520), rowLabel, 240);
    const cellPx = cellPxOf(size, layout);
    const labels = cellPx >= 26 && layout.bx * layout.by === 1 && classes.length <= 256
      ? gridLabels(layout, classes, gy > 1) : null;
    const shapes = [];
    if (selectedLinear >= 0 && selectedLinear >= sliceStart && selectedLinear < sliceStart + gx * gy) {
      forEachCell(layout, selectedLinear - sliceStart, 1, (c) => shapes.push(cellOutline(layout, c, this.theme.text)));
    }
    const plotLayoutObj = plotLayout(layout, size, this.theme, {
      x: folded ? `program_id(0) mod ${cols}` : 'program_id(0)',
      y: folded ? 'row start' : gy > 1 ? 'program_id(1)' : null,
      rowLabel,
      zoomable: false,
      shapes,
    });
    const trace = heatmapTrace(layout, classes, this.theme, cellPx, labels);
    this.gridLayout = layout;
    return Plotly.react(this.gridPlot, [trace], plotLayoutObj, plotConfig(layout)).then(() => this.wireGridPlot());
  }

  wireTensorPlot(plot, tensor) {
    if (plot.dataset.wired) return;
    plot.dataset.wired = '1';
    plot.on('plotly_hover', (event) => this.showTooltip(event, tensorHoverText(this.viewOf(tensor), event.points[0], this.model.programs)));
    plot.on('plotly_unhover', () => { this.tooltip.hidden = true; });
    plot.on('plotly_click', (event) => {
      const point = event.points[0];
      if (point.curveNumber !== 0) return;
      const view = this.viewOf(tensor);
      const cell = point.pointNumber[0] * view.layout.cellCols + point.pointNumber[1];
      const program = view.owner[cell] >= 0 ? view.owner[cell] : view.ghostOwner[cell];
      if (program >= 0) this.select(program);
    });
    plot.on('plotly_relayout', (change) => this.zoom(tensor, change));
  }

  // Zooming draws the window again from the trace, binned afresh: single elements come back.
  zoom(tensor, change) {
    const view = this.viewOf(tensor);
    const x = change['xaxis.range'] ?? (change['xaxis.range[0]'] !== undefined ? [change['xaxis.range[0]'], change['xaxis.range[1]']] : null);
    const y = change['yaxis.range'] ?? (change['yaxis.range[0]'] !== undefined ? [change['yaxis.range[0]'], change['yaxis.range[1]']] : null);
    const reset = change['xaxis.autorange'] || change['yaxis.autorange'];
    if (!x && !y && !reset) return;
    const { layout } = view;
    const area = reset ? null : windowOf(view.full, x ?? [layout.col0 - 0.5, layout.col0 + layout.cols - 0.5],
      y ?? [layout.row0 - 0.5, layout.row0 + layout.rows - 0.5]);
    this.views.set(tensor.name, buildTensorView(tensor, this.rowWidth ?? tensor.rowWidth, area));
    this.tooltip.hidden = true;
    this.drawTensor(tensor);
  }

  wireGridPlot() {
    if (this.gridPlot.dataset.wired) return;
    this.gridPlot.dataset.wired = '1';
    const programAt = (point) => this.gridCellProgram[point.pointNumber[0] * this.gridLayout.cellCols + point.pointNumber[1]];
    this.gridPlot.on('plotly_click', (event) => {
      const index = programAt(event.points[0]);
      if (index >= 0) this.select(index);
    });
    this.gridPlot.on('plotly_hover', (event) => this.showTooltip(event, gridHoverText(this, event.points[0], programAt(event.points[0]))));
    this.gridPlot.on('plotly_unhover', () => { this.tooltip.hidden = true; });
  }

  showTooltip(event, lines) {
    const mouse = event.event;
    if (!mouse) return;
    this.tooltip.replaceChildren(...lines.map((line, i) => el('div', i === 0 ? 'diagram-tooltip-head' : null, line)));
    this.tooltip.hidden = false;
    const x = Math.min(mouse.clientX + 14, window.innerWidth - this.tooltip.offsetWidth - 8);
    const y = Math.min(mouse.clientY + 14, window.innerHeight - this.tooltip.offsetHeight - 8);
    this.tooltip.style.left = `${x}px`;
    this.tooltip.style.top = `${y}px`;
  }

  onResize() {
    const width = this.container.clientWidth;
    if (width === this.lastWidth || width === 0) return;
    this.lastWidth = width;
    cancelAnimationFrame(this.resizeFrame);
    this.resizeFrame = requestAnimationFrame(() => this.drawAll());
  }

  // ---- selection ----

  select(index) {
    this.selected = index;
    const program = index === null ? null : this.model.programs[index];
    if (program && this.model.grid[2] > 1 && program.pid[2] !== this.slice) {
      this.slice = program.pid[2];
      this.sliceInput.value = String(this.slice);
      this.sliceLabel.textContent = String(this.slice);
    }
    const drawn = this.drawAll();
    emit('program-selected', program ? { pid: program.pid, lines: sourceLines(program) } : { pid: null, lines: [] });
    return drawn;
  }

  step(delta) {
    const count = this.model.programs.length;
    const from = this.selected === null ? (delta > 0 ? -1 : count) : this.selected;
    return this.select(Math.min(count - 1, Math.max(0, from + delta)));
  }

  togglePlay() {
    if (this.playTimer) {
      this.stop();
      return;
    }
    if (this.selected === null || this.selected === this.model.programs.length - 1) this.select(0);
    this.playButton.textContent = '❚❚ Pause';
    this.playTimer = setInterval(() => {
      if (this.selected >= this.model.programs.length - 1) this.stop();
      else this.step(1);
    }, PLAY_STEP_MS);
  }

  stop() {
    clearInterval(this.playTimer);
    this.playTimer = null;
    if (this.playButton) this.playButton.textContent = '▶ Play';
  }

  updateSelectionText() {
    const { programs } = this.model;
    const program = this.selected === null ? null : programs[this.selected];
    this.container.dataset.selectedPid = program ? program.pid.join(',') : '';
    this.slider.value = String(this.selected ?? 0);
    this.slider.classList.toggle('diagram-slider-idle', program === null);
    this.pidLabel.textContent = program ? `${formatCount(this.selected + 1)} / ${formatCount(programs.length)}` : `${formatCount(programs.length)} programs`;
    this.prevButton.disabled = this.selected === 0;
    this.nextButton.disabled = this.selected === programs.length - 1;
    this.caption.textContent = program ? programCaption(program, this.model.tensors)
      : 'Each colour is one program, a copy of the kernel running with its own program_id. '
        + 'Every element shows the program that loaded it (inputs) or stored it (outputs). '
        + 'Click a program, or press Play, to follow one.';
  }
}

// ---- words ---------------------------------------------------------------------------------

function summaryText(model) {
  const [gx, gy, gz] = model.grid;
  const total = model.programsTotal;
  let words = `Launch grid (${gx}, ${gy}, ${gz}): ${formatCount(total)} program${total === 1 ? '' : 's'}.`;
  if (model.sampled || model.programs.length < total) {
    const { sample } = model;
    const which = sample ? `the first ${formatCount(sample.first)}, every ${ordinal(sample.every)} in between and the last ${formatCount(sample.last)}`
      : 'a sample';
    words += ` Showing ${formatCount(model.programs.length)} of ${formatCount(total)} programs (${which}); the others are drawn grey.`;
  }
  return words;
}

function ordinal(n) {
  const tens = n % 100;
  const suffix = tens >= 11 && tens <= 13 ? 'th' : { 1: 'st', 2: 'nd', 3: 'rd' }[n % 10] ?? 'th';
  return `${formatCount(n)}${suffix}`;
}

function tensorMeta(tensor) {
  const role = { input: 'input', output: 'output', inout: 'input and output' }[tensor.role] ?? tensor.role;
  return `${role} · ${tensor.dtype ?? ''} · shape (${tensor.shape.join(', ')}${tensor.shape.length === 1 ? ',' : ''})`;
}

function colouringText(tensor) {
  return tensor.writes ? 'colour: the program that stored each element' : 'colour: the program that loaded each element';
}

function tensorNote(view) {
  const { tensor, layout } = view;
  const notes = [];
  if (tensor.oneD && layout.allRows > 1) notes.push(`1-D, drawn in rows of ${formatCount(layout.width)} elements`);
  if (!tensor.oneD && tensor.shape.length > 2) notes.push(`leading dimensions flattened into rows of ${formatCount(layout.width)}`);
  const perCell = layout.bx * layout.by;
  if (perCell > 1) {
    const block = layout.by > 1 ? ` (${layout.by} rows × ${layout.bx} columns)` : '';
    notes.push(`each cell = ${formatCount(perCell)} elements${block}, coloured by the first program among them; drag a box to zoom in`);
  }
  if (view.layout !== view.full) notes.push('zoomed in: double-click to see all of it');
  if (tensor.extent > tensor.numel) notes.push(`drawn past its end (${formatCount(tensor.numel)} elements) where masked-off lanes point`);
  if (tensor.lanesNotDrawn) notes.push(`${formatCount(tensor.lanesNotDrawn)} masked-off lanes point far outside it (not drawn)`);
  if (!tensor.accesses.length) notes.push('no program accessed it');
  return notes.join('; ');
}

function coverageText(tensor) {
  const coverage = tensor.coverage;
  if (!coverage || !tensor.writes) return null;
  const parts = [];
  if (coverage.unwritten) {
    const where = coverage.unwritten_runs?.length && coverage.unwritten_runs.length <= 3
      ? ` (${coverage.unwritten_runs.map(runText).join(', ')})` : '';
    parts.push(`${formatCount(coverage.unwritten)} element${coverage.unwritten === 1 ? '' : 's'} of ${tensor.name} ${coverage.unwritten === 1 ? 'was' : 'were'} never written${where}`);
  }
  if (coverage.multiply_written) {
    const many = coverage.multiply_written !== 1;
    parts.push(`${formatCount(coverage.multiply_written)} element${many ? 's' : ''} of ${tensor.name} ${many ? 'were' : 'was'} stored by more than one program (the last store wins, in no fixed order)`);
  }
  if (!parts.length) return { ok: true, text: `Every element of ${tensor.name} was written exactly once.` };
  const drawn = coverage.truncated ? ' Only the first ranges of them are drawn.' : '';
  return { ok: false, text: `${parts.join('; ')}.${drawn}` };
}

// How a caption words one access: "loads x[..]", "stores out[..]", "updates out[..] with tl.atomic_add".
function phraseOf(access) {
  if (access.op !== 'atomic') return { key: access.op, verb: `${access.op}s`, tail: '' };
  if (!access.atomic) return { key: 'atomic', verb: 'atomically updates', tail: '' };
  return { key: `atomic_${access.atomic}`, verb: 'updates', tail: ` with tl.atomic_${access.atomic}` };
}

function programCaption(program, tensors) {
  const byTensor = new Map(tensors.map((t) => [t.name, t]));
  const phrases = new Map(); // phrase key -> {verb, tail, runs: tensor name -> runs}, in the kernel's order
  const maskedBy = new Map(); // tensor name -> runs
  for (const access of program.accesses) {
    const phrase = phraseOf(access);
    if (!phrases.has(phrase.key)) phrases.set(phrase.key, { ...phrase, runs: new Map() });
    const { runs } = phrases.get(phrase.key);
    runs.set(access.tensor, [...(runs.get(access.tensor) ?? []), ...access.offsets]);
    if (access.masked.length) maskedBy.set(access.tensor, [...(maskedBy.get(access.tensor) ?? []), ...access.masked]);
  }
  const clauses = [];
  for (const { verb, tail, runs } of phrases.values()) {
    const parts = [...runs].filter(([, r]) => r.length).map(([name, r]) => regionText(byTensor.get(name), name, r));
    if (parts.length) clauses.push(`${verb} ${parts.join(', ')}${tail}`);
  }
  let words = `program ${pidText(program.pid)} ${clauses.join(', ') || 'touches no element'}`;
  words += `; ${maskedText(maskedBy, byTensor)}`;
  if (program.truncated) words += ' (only its first accesses were recorded)';
  const lines = sourceLines(program);
  if (lines.length) words += ` · source line${lines.length === 1 ? '' : 's'} ${lines.join(', ')}`;
  return words;
}

// "2 lanes masked off (offsets 10..11)" when the accesses of 1-D tensors mask the same offsets,
// else per tensor, with rows and columns for a matrix: "x: 56 lanes masked off (x[18, 0..55])".
function maskedText(maskedBy, byTensor) {
  if (!maskedBy.size) return 'no lanes masked off';
  const entries = [...maskedBy].map(([name, runs]) => [name, mergeRuns(runs)]);
  const lanes = (runs) => {
    const count = runsLength(runs);
    return `${formatCount(count)} lane${count === 1 ? '' : 's'} masked off`;
  };
  const offsets = (runs) => (runs.length <= 3 ? ` (offset${runsLength(runs) === 1 ? '' : 's'} ${runs.map(runText).join(', ')})` : '');
  const [, firstRuns] = entries[0];
  const same = entries.every(([name, runs]) => byTensor.get(name)?.oneD && JSON.stringify(runs) === JSON.stringify(firstRuns));
  if (same) return lanes(firstRuns) + offsets(firstRuns);
  return entries.map(([name, runs]) => {
    const tensor = byTensor.get(name);
    const rect = tensor && tensor.shape.length === 2 ? asRectangle(runs, tensor.shape[1]) : null;
    const where = rect ? ` (${name}[${rangeText(rect.rows)}, ${rangeText(rect.cols)}])` : offsets(runs);
    return `${name}: ${lanes(runs)}${where}`;
  }).join(', ');
}

function regionText(tensor, name, runs) {
  const merged = mergeRuns(runs);
  const count = runsLength(merged);
  if (tensor && !tensor.oneD && tensor.shape.length === 2) {
    const rect = asRectangle(merged, tensor.shape[1]);
    if (rect) return `${name}[${rangeText(rect.rows)}, ${rangeText(rect.cols)}]`;
  }
  if (merged.length <= 3) return `${name}[${merged.map(runText).join(', ')}]`;
  const first = merged[0][0];
  const last = merged[merged.length - 1];
  return `${name} (${formatCount(count)} elements in ${merged.length} pieces, offsets ${first}..${last[0] + last[1] - 1})`;
}

// Runs that form rows r0..r1 x columns c0..c1 of a row-major matrix with `cols` columns.
function asRectangle(runs, cols) {
  if (runs.length === 1 && runs[0][0] % cols === 0 && runs[0][1] % cols === 0) {
    const r0 = runs[0][0] / cols;
    return { rows: [r0, r0 + runs[0][1] / cols - 1], cols: [0, cols - 1] };
  }
  const [start, length] = runs[0];
  const c0 = start % cols;
  if (c0 + length > cols) return null;
  const r0 = Math.floor(start / cols);
  const same = runs.every(([s, n], i) => n === length && s === start + i * cols);
  return same ? { rows: [r0, r0 + runs.length - 1], cols: [c0, c0 + length - 1] } : null;
}

function rangeText([a, b]) {
  return a === b ? String(a) : `${a}..${b}`;
}

function runText([start, length]) {
  return rangeText([start, start + length - 1]);
}

function pidText(pid) {
  return `(${pid.join(', ')})`;
}

function sourceLines(program) {
  return [...new Set(program.accesses.map((a) => a.line).filter((line) => line != null))].sort((a, b) => a - b);
}

function formatCount(n) {
  return n.toLocaleString('en-US');
}

function elementText(tensor, offset) {
  if (tensor.oneD || tensor.shape.length < 2 || offset >= tensor.numel || offset < 0) return `${tensor.name}[${offset}]`;
  const cols = tensor.shape[tensor.shape.length - 1];
  return `${tensor.name}[${Math.floor(offset / cols)}, ${offset % cols}] (offset ${offset})`;
}

function tensorHoverText(view, point, programs) {
  const { tensor, layout } = view;
  const cell = point.pointNumber[0] * layout.cellCols + point.pointNumber[1];
  const first = firstIndexOfCell(layout, cell);
  const perCell = layout.bx * layout.by;
  const lines = [perCell > 1 ? `cell of ${formatCount(perCell)} elements from ${elementText(tensor, first)}` : elementText(tensor, first)];
  if (first >= tensor.numel) lines.push(`past the end of ${tensor.name} (${formatCount(tensor.numel)} elements)`);
  if (perCell > 1) {
    const owner = view.owner[cell] >= 0 ? view.owner[cell] : view.ghostOwner[cell];
    lines.push(owner >= 0 ? `first program here: ${pidText(programs[owner].pid)}` : 'no program touched these elements');
    return lines;
  }
  const touches = accessesAt(tensor, first);
  for (const { access, masked } of touches.slice(0, HOVER_LIMIT)) {
    const who = `program ${pidText(programs[access.program].pid)}`;
    const where = access.line == null ? '' : ` on line ${access.line}`;
    lines.push(masked ? `${who}: masked-off lane of the ${access.op}${where}, not ${access.op === 'load' ? 'read' : 'written'}`
      : `${who}: ${access.op}${where}`);
  }
  if (touches.length > HOVER_LIMIT) lines.push(`and ${touches.length - HOVER_LIMIT} more accesses`);
  if (!touches.length) lines.push('no program touched this element');
  return lines;
}

function accessesAt(tensor, offset) {
  const hits = [];
  const inside = (runs) => runs.some(([s, n]) => offset >= s && offset < s + n);
  for (const access of tensor.accesses) {
    if (inside(access.offsets)) hits.push({ access, masked: false });
    else if (inside(access.masked)) hits.push({ access, masked: true });
  }
  return hits;
}

function gridHoverText(diagram, point, index) {
  const { grid, programs } = diagram.model;
  const layout = diagram.gridLayout;
  const cell = point.pointNumber[0] * layout.cellCols + point.pointNumber[1];
  const local = firstIndexOfCell(layout, cell);
  const [gx, gy] = grid;
  const pid = [local % gx, Math.floor(local / gx) % gy, diagram.slice];
  if (layout.bx * layout.by > 1) {
    return [`programs from ${pidText(pid)}, ${layout.bx * layout.by} per cell`, index >= 0 ? `first traced: ${pidText(programs[index].pid)}` : 'none traced'];
  }
  return [`program ${pidText(pid)}`, index >= 0 ? 'click to follow it' : 'not traced (sampled)'];
}

// ---- plotly figures ------------------------------------------------------------------------

// Colours that suit the page: a light text colour means a dark page.
function readTheme(container) {
  const style = getComputedStyle(container);
  const textColour = style.color || '#1f2328';
  const dark = luminance(textColour) > 0.5;
  const paper = dark ? '#15181e' : '#ffffff';
  const untouched = dark ? '#2b303a' : '#e9ecf0';
  return {
    paper, untouched, text: textColour,
    font: style.fontFamily || 'system-ui, sans-serif',
    axis: dark ? '#8b93a1' : '#59606b',
    colours: [ // by colour class: untouched, vivid, dim, ghost, dim ghost
      untouched,
      ...PALETTE,
      ...PALETTE.map((c) => mix(c, paper, 0.78)),
      ...PALETTE.map((c) => mix(c, paper, 0.5)),
      dark ? '#1f232b' : '#f4f5f7',
    ],
    unwritten: dark ? '#ff6b6b' : '#d7191c',
    multi: '#ff8c00',
    hatch: dark ? '#c9d1d9' : '#4a505a',
  };
}

// Where a heatmap's cells sit, in element columns and rows.
function cellPlacement(layout) {
  return { x0: layout.col0 + (layout.bx - 1) / 2, dx: layout.bx, y0: layout.row0 + (layout.by - 1) / 2, dy: layout.by };
}

function matrixRows(layout, values) {
  const rows = [];
  for (let r = 0; r < layout.cellRows; r++) rows.push(values.subarray(r * layout.cellCols, (r + 1) * layout.cellCols));
  return rows;
}

function heatmapTrace(layout, classes, theme, cellPx, labels) {
  const n = CLASS_COUNT;
  const trace = {
    type: 'heatmap', z: matrixRows(layout, classes), ...cellPlacement(layout),
    zmin: -0.5, zmax: n - 0.5, zsmooth: false, showscale: false, hoverinfo: 'none',
    xgap: cellPx >= 8 ? 1 : 0, ygap: cellPx >= 8 ? 1 : 0,
    colorscale: theme.colours.flatMap((colour, i) => [[i / n, colour], [(i + 1) / n, colour]]),
  };
  if (labels) Object.assign(trace, { text: labels, texttemplate: '%{text}', textfont: { size: 11 } });
  return trace;
}

// Square elements where they fit in the width and in maxHeight; long thin shapes get stretched
// cells rather than vanishing.
function plotSize(layout, availableWidth, rowLabel, maxHeight = MAX_PLOT_PX) {
  const left = 30 + 7 * rowLabel(layout.rows - 1).length; // room for the row tick labels and the title
  const width = Math.max(120, availableWidth - left - MARGIN.r);
  const px = Math.min(MAX_CELL_PX, width / layout.cols, maxHeight / layout.rows);
  const pxX = Math.max(px, Math.min(MAX_CELL_PX, width / layout.cols, MIN_PLOT_PX / layout.cols));
  const shortest = layout.rows > 1 ? Math.max(MIN_ROW_PX, MIN_PLOT_HEIGHT_PX / layout.rows) : 0;
  const pxY = Math.max(px, Math.min(MAX_CELL_PX, maxHeight / layout.rows, shortest));
  const plotWidth = Math.round(pxX * layout.cols);
  const plotHeight = Math.round(Math.max(pxY * layout.rows, 24));
  const spare = Math.max(0, MIN_FIGURE_PX - plotWidth - left - MARGIN.r); // centre a narrow plot under its axis title
  const margin = { ...MARGIN, l: left + Math.floor(spare / 2), r: MARGIN.r + Math.ceil(spare / 2) };
  return { width: plotWidth + margin.l + margin.r, height: plotHeight + margin.t + margin.b, margin, plotWidth, plotHeight };
}

// On-screen size of one cell of `layout` (the whole drawing or a zoomed window) in a plot of `size`.
function cellPxOf(size, layout) {
  return Math.min((size.plotWidth / layout.cols) * layout.bx, (size.plotHeight / layout.rows) * layout.by);
}

function plotLayout(layout, size, theme, { x, y, rowLabel, zoomable, shapes, annotations = [] }) {
  const axis = { showgrid: false, zeroline: false, ticks: 'outside', ticklen: 3, color: theme.axis, fixedrange: !zoomable };
  const colTicks = integerTicks(layout.col0, layout.cols, size.plotWidth / 44);
  const rowTicks = integerTicks(layout.row0, layout.rows, size.plotHeight / 18);
  return {
    width: size.width, height: size.height, margin: size.margin,
    paper_bgcolor: 'rgba(0,0,0,0)', plot_bgcolor: 'rgba(0,0,0,0)',
    font: { family: theme.font, size: 11, color: theme.text },
    xaxis: { ...axis, title: { text: x, standoff: 4 }, range: [layout.col0 - 0.5, layout.col0 + layout.cols - 0.5], side: 'bottom',
      tickmode: 'array', tickvals: colTicks, ticktext: colTicks.map(String) },
    yaxis: { ...axis, title: { text: y ?? '', standoff: 4 }, range: [layout.row0 + layout.rows - 0.5, layout.row0 - 0.5],
      tickmode: 'array', tickvals: rowTicks, ticktext: rowTicks.map(rowLabel), visible: y !== null },
    shapes, annotations, dragmode: zoomable ? 'zoom' : false, hovermode: 'closest',
  };
}

function plotConfig(layout) {
  const big = cellCount(layout) > 4096;
  return { displayModeBar: big ? 'hover' : false, displaylogo: false, scrollZoom: false,
    modeBarButtonsToRemove: ['select2d', 'lasso2d', 'toImage', 'autoScale2d'] };
}

// At most `room` ticks (at least one) over [start, start + count), on multiples of 1, 2 or 5 times
// a power of ten.
function integerTicks(start, count, room) {
  const raw = Math.max(1, count / Math.max(1, Math.floor(room)));
  const base = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * base).find((s) => s >= raw);
  const ticks = [];
  for (let v = Math.ceil(start / step) * step; v < start + count; v += step) ticks.push(v);
  return ticks;
}

function cellBox(layout, cell) {
  const row = Math.floor(cell / layout.cellCols);
  const col = cell % layout.cellCols;
  return { x0: layout.col0 + col * layout.bx - 0.5, x1: layout.col0 + Math.min((col + 1) * layout.bx, layout.cols) - 0.5,
    y0: layout.row0 + row * layout.by - 0.5, y1: layout.row0 + Math.min((row + 1) * layout.by, layout.rows) - 0.5 };
}

function cellOutline(layout, cell, colour) {
  return { type: 'rect', ...cellBox(layout, cell), line: { color: colour, width: 3 }, layer: 'above' };
}

// Masked-off lanes: a dotted outline and diagonal hatching per cell, as two plain line traces
// (cheap to draw), in data coordinates so they follow zoom. Too small to see: the tint alone.
function hatchTraces(layout, cells, cellPx, theme) {
  if (!cells.length || cells.length > OVERLAY_LIMIT || cellPx < SMALL_CELL_PX) return [];
  const outline = { x: [], y: [] };
  const hatch = { x: [], y: [] };
  for (const cell of cells) {
    const b = cellBox(layout, cell);
    const inset = 0.06 * layout.bx;
    boxPath(b, 2 * inset, outline.x, outline.y);
    const [x0, y0, w, h] = [b.x0 + inset, b.y0 + inset, b.x1 - b.x0 - 2 * inset, b.y1 - b.y0 - 2 * inset];
    for (const k of [0.5, 1, 1.5]) { // lines u + v = k across the unit cell, v measured up from the bottom
      const [u0, v0, u1, v1] = k <= 1 ? [k, 0, 0, k] : [1, k - 1, k - 1, 1];
      hatch.x.push(x0 + u0 * w, x0 + u1 * w, null);
      hatch.y.push(y0 + (1 - v0) * h, y0 + (1 - v1) * h, null);
    }
  }
  const lines = (points, dash) => ({ type: 'scatter', mode: 'lines', ...points, hoverinfo: 'skip', showlegend: false,
    name: 'masked lanes', line: { color: theme.hatch, width: 1, dash } });
  return [lines(outline, 'dot'), lines(hatch, 'solid')];
}

// Never written: a red X per cell; written more than once: an orange box. Tinted cells past the limit.
function coverageTraces(layout, coverage, theme) {
  const unwritten = [];
  const multi = [];
  coverage.forEach((flag, cell) => {
    if (flag === 1) unwritten.push(cell);
    else if (flag === 2) multi.push(cell);
  });
  const traces = [];
  if (unwritten.length) traces.push(markTrace(layout, unwritten, theme.unwritten, crossPath));
  if (multi.length) traces.push(markTrace(layout, multi, theme.multi, boxPath));
  return traces;
}

function markTrace(layout, cells, colour, path) {
  if (cells.length > OVERLAY_LIMIT) {
    const z = new Float32Array(cellCount(layout)).fill(NaN);
    for (const cell of cells) z[cell] = 1;
    return { type: 'heatmap', z: matrixRows(layout, z), ...cellPlacement(layout),
      colorscale: [[0, colour], [1, colour]], showscale: false, opacity: 0.6, hoverinfo: 'skip', zsmooth: false };
  }
  const x = [];
  const y = [];
  for (const cell of cells) path(cellBox(layout, cell), 0.18 * layout.bx, x, y);
  return { type: 'scatter', mode: 'lines', x, y, hoverinfo: 'skip', showlegend: false, line: { color: colour, width: 2 } };
}

function crossPath(b, inset, x, y) {
  x.push(b.x0 + inset, b.x1 - inset, null, b.x0 + inset, b.x1 - inset, null);
  y.push(b.y0 + inset, b.y1 - inset, null, b.y1 - inset, b.y0 + inset, null);
}

function boxPath(b, inset, x, y) {
  const i = inset / 2;
  x.push(b.x0 + i, b.x1 - i, b.x1 - i, b.x0 + i, b.x0 + i, null);
  y.push(b.y0 + i, b.y0 + i, b.y1 - i, b.y1 - i, b.y0 + i, null);
}

// A staircase line where the tensor ends, when the drawing goes past it.
function endOfTensorShapes(view, theme) {
  const { tensor, layout } = view;
  if (tensor.extent <= tensor.numel) return [];
  const row = Math.floor(tensor.numel / layout.width);
  const col = tensor.numel % layout.width;
  const [left, right, top, bottom] = [-0.5, layout.width - 0.5, row - 0.5, row + 0.5];
  const segments = [];
  if (col === 0) segments.push(`M ${left} ${top} L ${right} ${top}`);
  else {
    segments.push(`M ${col - 0.5} ${top} L ${col - 0.5} ${bottom}`);
    if (row > 0) segments.push(`M ${col - 0.5} ${top} L ${right} ${top}`);
    if (row + 1 < layout.allRows) segments.push(`M ${left} ${bottom} L ${col - 0.5} ${bottom}`);
  }
  return [{ type: 'path', path: segments.join(' '), line: { color: theme.text, width: 2, dash: 'dash' }, layer: 'above' }];
}

// Where cells are too small to tell apart, an outline around the selected program's cells (and a
// dotted one around its masked-off lanes) shows where they are.
function selectionOutlines(layout, marks, size, theme) {
  if (cellPxOf(size, layout) >= SMALL_CELL_PX) return [];
  return [outlineOf(layout, marks.touched, size, { color: theme.text, width: 2 }),
    outlineOf(layout, marks.masked, size, { color: theme.hatch, width: 2, dash: 'dot' })].filter(Boolean);
}

// Names the selected program next to its outline when its region is too thin to catch the eye.
function selectionLabel(layout, marks, size, program, theme) {
  const box = program && cellPxOf(size, layout) < SMALL_CELL_PX ? boundsOf(layout, marks.touched) : null;
  const thin = (box) => Math.min(((box.x1 - box.x0) * size.plotWidth) / layout.cols, ((box.y1 - box.y0) * size.plotHeight) / layout.rows) < 24;
  if (!box || !thin(box)) return [];
  const below = (box.y0 + box.y1) / 2 < layout.row0 + layout.rows / 2;
  return [{ x: (box.x0 + box.x1) / 2, y: below ? box.y1 : box.y0, text: `program ${pidText(program.pid)}`,
    showarrow: true, arrowcolor: theme.text, ax: 0, ay: below ? 26 : -26, bgcolor: theme.paper,
    bordercolor: theme.text, borderpad: 3, font: { color: theme.text, size: 11 } }];
}

// The data-coordinate box around the flagged cells, or null.
function boundsOf(layout, flags) {
  let [top, bottom, left, right] = [Infinity, -1, Infinity, -1];
  flags.forEach((flag, cell) => {
    if (!flag) return;
    const row = Math.floor(cell / layout.cellCols);
    const col = cell % layout.cellCols;
    [top, bottom, left, right] = [Math.min(top, row), Math.max(bottom, row), Math.min(left, col), Math.max(right, col)];
  });
  if (bottom < 0) return null;
  const first = cellBox(layout, top * layout.cellCols + left);
  const last = cellBox(layout, bottom * layout.cellCols + right);
  return { x0: first.x0, x1: last.x1, y0: first.y0, y1: last.y1 };
}

function outlineOf(layout, flags, size, line) {
  const box = boundsOf(layout, flags);
  if (!box) return null;
  const half = Math.max(MIN_MARK_PX / 2, ((box.y1 - box.y0) * size.plotHeight) / layout.rows / 2);
  return { type: 'rect', x0: box.x0, x1: box.x1, ysizemode: 'pixel', yanchor: (box.y0 + box.y1) / 2,
    y0: -half, y1: half, line, layer: 'above' };
}

function labelsFor(view, classes, cellPx) {
  const { layout } = view;
  if (layout.bx * layout.by !== 1 || classes.length > LABEL_LIMIT || cellPx < 20) return null;
  const rows = [];
  for (let r = 0; r < layout.cellRows; r++) {
    const row = [];
    for (let c = 0; c < layout.cellCols; c++) {
      const cell = r * layout.cellCols + c;
      row.push(Number.isNaN(classes[cell]) ? '' : String(firstIndexOfCell(layout, cell)));
    }
    rows.push(row);
  }
  return rows;
}

function gridLabels(layout, classes, twoD) {
  const rows = [];
  for (let r = 0; r < layout.cellRows; r++) {
    const row = [];
    for (let c = 0; c < layout.cellCols; c++) {
      const cell = r * layout.cellCols + c;
      row.push(Number.isNaN(classes[cell]) ? '' : twoD ? `${c},${r}` : String(cell));
    }
    rows.push(row);
  }
  return rows;
}

// A 1-D grid of many programs is folded into rows: a power of two near twice its square root.
function foldWidth(count) {
  return Math.min(256, Math.max(16, 2 ** Math.round(Math.log2(Math.sqrt(count * 4)))));
}

// ---- small helpers -------------------------------------------------------------------------

function el(tag, className, content) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (content !== undefined) node.textContent = content;
  return node;
}

function text(content) {
  return document.createTextNode(content);
}

function swatch(colour, className = null) {
  const box = el('span', className ? `diagram-swatch ${className}` : 'diagram-swatch');
  if (colour) box.style.background = colour;
  return box;
}

function swatchItem(label, colour, className = null) {
  const item = el('span', 'diagram-legend-item');
  item.append(swatch(colour, className), text(label));
  return item;
}

function parseColour(colour) {
  const hex = colour.match(/^#([0-9a-f]{6})$/i);
  if (hex) return [0, 2, 4].map((i) => parseInt(hex[1].slice(i, i + 2), 16));
  const rgb = colour.match(/\d+(\.\d+)?/g);
  return rgb ? rgb.slice(0, 3).map(Number) : [0, 0, 0];
}

function mix(colour, towards, amount) {
  const a = parseColour(colour);
  const b = parseColour(towards);
  return `rgb(${a.map((v, i) => Math.round(v + (b[i] - v) * amount)).join(',')})`;
}

function luminance(colour) {
  const [r, g, b] = parseColour(colour);
  return (0.299 * r + 0.587 * g + 0.114 * b) / 255;
}
