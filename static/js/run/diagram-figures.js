// The diagram's drawing: plotly figures (data, layout, config) for the program grid and each
// tensor, from the cells of trace-cells.js (the elements around them: diagram-cards.js). Nothing
// here keeps state or listens to events.
import { formatCount } from "../shared/format.js";
import { CLASS_COUNT, PROGRAM_COLOURS, cellCount, firstIndexOfCell } from "./trace-cells.js";
import { gridAxes, programLabel, tensorAxes } from "./trace-words.js";

export const PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
  "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#17becf"];
console.assert(PALETTE.length === PROGRAM_COLOURS);

const OVERLAY_LIMIT = 3000; // cells drawn with vector marks (hatching, X); past that, tinted cells
const LABEL_LIMIT = 600; // cells small and few enough to print their element offset
const MIN_LABEL_PX = 8; // a label smaller than this is not printed
const MAX_CELL_PX = 44;
const MAX_PLOT_PX = 560;
const MIN_PLOT_PX = 240; // narrowest plot area: long thin tensors get wide cells instead
const MIN_ROW_PX = 4; // shortest row: wide flat tensors get tall cells instead
const MIN_PLOT_HEIGHT_PX = 130; // a plot of several rows is at least this tall, if rows allow
const SMALL_CELL_PX = 10; // smaller cells get outlines around regions instead of marks in each cell
const MIN_FIGURE_PX = 230; // room for the axis titles
const MIN_MARK_PX = 12; // the selected region's outline is never thinner than this
const MARGIN = { l: 64, r: 12, t: 8, b: 40 };

// ---- colours ----------------------------------------------------------------------------------

function parseColour(colour) {
  const hex = colour.match(/^#([0-9a-f]{6})$/i);
  if (hex) return [0, 2, 4].map((i) => parseInt(hex[1].slice(i, i + 2), 16));
  const rgb = colour.match(/\d+(\.\d+)?/g);
  return rgb ? rgb.slice(0, 3).map(Number) : [0, 0, 0];
}

function mix(colour, towards, amount) {
  const a = parseColour(colour);
  const b = parseColour(towards);
  return `rgb(${a.map((v, i) => Math.round(v + (b[i] - v) * amount)).join(",")})`;
}

function luminance(colour) {
  const [r, g, b] = parseColour(colour);
  return (0.299 * r + 0.587 * g + 0.114 * b) / 255;
}

// Colours that suit the page: a light text colour means a dark page.
export function readTheme(container) {
  const style = getComputedStyle(container);
  const textColour = style.color || "#1f2328";
  const dark = luminance(textColour) > 0.5;
  const paper = dark ? "#15181e" : "#ffffff";
  const untouched = dark ? "#2b303a" : "#e9ecf0";
  // Stray lanes: a deep crimson on a light page, a hot pink-red on a dark one; both far enough from
  // the palette's coral (#e15759) and from the never-written cross to read as the run's error.
  const stray = dark ? "#ff3d71" : "#a50026";
  return {
    paper, untouched, text: textColour,
    font: style.fontFamily || "system-ui, sans-serif",
    axis: dark ? "#8b93a1" : "#59606b",
    colours: [ // by colour class: untouched, vivid, dim, ghost, dim ghost, stray
      untouched,
      ...PALETTE,
      ...PALETTE.map((c) => mix(c, paper, 0.78)),
      ...PALETTE.map((c) => mix(c, paper, 0.5)),
      dark ? "#1f232b" : "#f4f5f7",
      stray,
    ],
    stray,
    unwritten: dark ? "#ff6b6b" : "#d7191c",
    multi: "#ff8c00",
    hatch: dark ? "#c9d1d9" : "#4a505a",
  };
}

// ---- plot geometry ----------------------------------------------------------------------------

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
    type: "heatmap", z: matrixRows(layout, classes), ...cellPlacement(layout),
    zmin: -0.5, zmax: n - 0.5, zsmooth: false, showscale: false, hoverinfo: "none",
    xgap: cellPx >= 8 ? 1 : 0, ygap: cellPx >= 8 ? 1 : 0,
    colorscale: theme.colours.flatMap((colour, i) => [[i / n, colour], [(i + 1) / n, colour]]),
  };
  if (labels) Object.assign(trace, { text: labels, texttemplate: "%{text}", textfont: { size: labelFontPx(labels, cellPx) } });
  return trace;
}

// The most characters a row's label takes: the last row's is not always the longest (a folded grid's
// last row may hold one program, "96", where the row before says "80–95"). Labels grow with the row,
// so a sample of rows, the last one's neighbours among them, finds it.
function longestLabel(layout, rowLabel) {
  const step = Math.max(1, Math.floor(layout.rows / 64));
  let longest = 1;
  for (let r = layout.rows - 1; r >= 0; r -= step) longest = Math.max(longest, rowLabel(layout.row0 + r).length, rowLabel(layout.row0 + Math.max(0, r - 1)).length);
  return longest;
}

// Square elements where they fit in the width and in maxHeight; long thin shapes get stretched
// cells rather than vanishing.
function plotSize(layout, availableWidth, rowLabel, maxHeight = MAX_PLOT_PX) {
  const left = 30 + 7 * longestLabel(layout, rowLabel); // room for the row tick labels and the title
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

function plotLayout(layout, size, theme, { x, y, rowLabel, zoomable, shapes, annotations = [] }) {
  const axis = { showgrid: false, zeroline: false, ticks: "outside", ticklen: 3, color: theme.axis, fixedrange: !zoomable };
  const colTicks = integerTicks(layout.col0, layout.cols, size.plotWidth / 44);
  const rowTicks = integerTicks(layout.row0, layout.rows, size.plotHeight / 18);
  return {
    width: size.width, height: size.height, margin: size.margin,
    paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "rgba(0,0,0,0)",
    font: { family: theme.font, size: 11, color: theme.text },
    xaxis: { ...axis, title: { text: x, standoff: 4 }, range: [layout.col0 - 0.5, layout.col0 + layout.cols - 0.5], side: "bottom",
      tickmode: "array", tickvals: colTicks, ticktext: colTicks.map(String) },
    yaxis: { ...axis, title: { text: y ?? "", standoff: 4 }, range: [layout.row0 + layout.rows - 0.5, layout.row0 - 0.5],
      tickmode: "array", tickvals: rowTicks, ticktext: rowTicks.map(rowLabel), visible: y !== null },
    shapes, annotations, dragmode: zoomable ? "zoom" : false, hovermode: "closest",
  };
}

// plotly's mode bar offers its "Share chart…" (an upload to Plotly's cloud) by default: off, with
// its link to plotly.com, so nothing on the page offers to send a kernel's data off-site.
const PLOT_PRIVACY = { showSendToCloud: false, showEditInChartStudio: false, showLink: false, displaylogo: false };

function plotConfig(layout) {
  const big = cellCount(layout) > 4096;
  return { ...PLOT_PRIVACY, displayModeBar: big ? "hover" : false, scrollZoom: false,
    modeBarButtonsToRemove: ["select2d", "lasso2d", "toImage", "autoScale2d", "sendChartToCloud"] };
}

function cellBox(layout, cell) {
  const row = Math.floor(cell / layout.cellCols);
  const col = cell % layout.cellCols;
  return { x0: layout.col0 + col * layout.bx - 0.5, x1: layout.col0 + Math.min((col + 1) * layout.bx, layout.cols) - 0.5,
    y0: layout.row0 + row * layout.by - 0.5, y1: layout.row0 + Math.min((row + 1) * layout.by, layout.rows) - 0.5 };
}

function cellOutline(layout, cell, colour) {
  return { type: "rect", ...cellBox(layout, cell), line: { color: colour, width: 3 }, layer: "above" };
}

// ---- marks over the cells ---------------------------------------------------------------------

function crossPath(b, inset, x, y) {
  x.push(b.x0 + inset, b.x1 - inset, null, b.x0 + inset, b.x1 - inset, null);
  y.push(b.y0 + inset, b.y1 - inset, null, b.y1 - inset, b.y0 + inset, null);
}

function boxPath(b, inset, x, y) {
  const i = inset / 2;
  x.push(b.x0 + i, b.x1 - i, b.x1 - i, b.x0 + i, b.x0 + i, null);
  y.push(b.y0 + i, b.y0 + i, b.y1 - i, b.y1 - i, b.y0 + i, null);
}

// Masked-off lanes: a dotted outline and diagonal hatching per cell, as two plain line traces
// (cheap to draw), in data coordinates so they follow zoom. Too small to see: the tint alone.
// `labelled`: the cells print their element offset, so the hatching keeps clear of their centre.
function hatchTraces(layout, cells, cellPx, theme, labelled = false) {
  if (!cells.length || cells.length > OVERLAY_LIMIT || cellPx < SMALL_CELL_PX) return [];
  const outline = { x: [], y: [] };
  const hatch = { x: [], y: [] };
  for (const cell of cells) {
    const b = cellBox(layout, cell);
    const inset = 0.06 * layout.bx;
    boxPath(b, 2 * inset, outline.x, outline.y);
    const [x0, y0, w, ht] = [b.x0 + inset, b.y0 + inset, b.x1 - b.x0 - 2 * inset, b.y1 - b.y0 - 2 * inset];
    for (const k of labelled ? [0.3, 1.7] : [0.5, 1, 1.5]) { // lines u + v = k across the unit cell, v measured up from the bottom
      const [u0, v0, u1, v1] = k <= 1 ? [k, 0, 0, k] : [1, k - 1, k - 1, 1];
      hatch.x.push(x0 + u0 * w, x0 + u1 * w, null);
      hatch.y.push(y0 + (1 - v0) * ht, y0 + (1 - v1) * ht, null);
    }
  }
  const lines = (points, dash) => ({ type: "scatter", mode: "lines", ...points, hoverinfo: "skip", showlegend: false,
    name: "masked lanes", line: { color: theme.hatch, width: 1, dash } });
  return [lines(outline, "dot"), lines(hatch, "solid")];
}

function markTrace(layout, cells, colour, path) {
  if (cells.length > OVERLAY_LIMIT) {
    const z = new Float32Array(cellCount(layout)).fill(NaN);
    for (const cell of cells) z[cell] = 1;
    return { type: "heatmap", z: matrixRows(layout, z), ...cellPlacement(layout),
      colorscale: [[0, colour], [1, colour]], showscale: false, opacity: 0.6, hoverinfo: "skip", zsmooth: false };
  }
  const x = [];
  const y = [];
  for (const cell of cells) path(cellBox(layout, cell), 0.18 * layout.bx, x, y);
  return { type: "scatter", mode: "lines", x, y, hoverinfo: "skip", showlegend: false, line: { color: colour, width: 2 } };
}

// Never written: a red X per cell; stored by more than one program: an orange box. Tinted cells past the limit.
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
  return [{ type: "path", path: segments.join(" "), line: { color: theme.text, width: 2, dash: "dash" }, layer: "above" }];
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
  return { type: "rect", x0: box.x0, x1: box.x1, ysizemode: "pixel", yanchor: (box.y0 + box.y1) / 2,
    y0: -half, y1: half, line, layer: "above" };
}

// Where cells are too small to tell apart, an outline around the selected program's cells (and a
// dotted one around its masked-off lanes) shows where they are.
function selectionOutlines(layout, marks, size, theme) {
  if (cellPxOf(size, layout) >= SMALL_CELL_PX) return [];
  return [outlineOf(layout, marks.touched, size, { color: theme.text, width: 2 }),
    outlineOf(layout, marks.masked, size, { color: theme.hatch, width: 2, dash: "dot" })].filter(Boolean);
}

// Names the selected program next to its outline when its region is too thin to catch the eye.
function selectionLabel(layout, marks, size, program, theme) {
  const box = program && cellPxOf(size, layout) < SMALL_CELL_PX ? boundsOf(layout, marks.touched) : null;
  const thin = (b) => Math.min(((b.x1 - b.x0) * size.plotWidth) / layout.cols, ((b.y1 - b.y0) * size.plotHeight) / layout.rows) < 24;
  if (!box || !thin(box)) return [];
  const below = (box.y0 + box.y1) / 2 < layout.row0 + layout.rows / 2;
  return [{ x: (box.x0 + box.x1) / 2, y: below ? box.y1 : box.y0, text: programLabel(program.pid),
    showarrow: true, arrowcolor: theme.text, ax: 0, ay: below ? 26 : -26, bgcolor: theme.paper,
    bordercolor: theme.text, borderpad: 3, font: { color: theme.text, size: 11 } }];
}

// Cell labels: each element's offset, where cells are single elements, few and large enough for
// the longest of them at a readable size.
function offsetLabels(layout, classes, cellPx) {
  if (layout.bx * layout.by !== 1 || classes.length > LABEL_LIMIT || cellPx < 20) return null;
  const labels = cellLabels(layout, classes, (cell) => String(firstIndexOfCell(layout, cell)));
  return labelFontPx(labels, cellPx) >= MIN_LABEL_PX ? labels : null;
}

// The font size at which the longest label fits its cell with room to spare (11 px at most).
function labelFontPx(labels, cellPx) {
  const longest = Math.max(1, ...labels.flat().map((text) => text.length));
  return Math.min(11, Math.floor((cellPx - 6) / (0.62 * longest)));
}

function cellLabels(layout, classes, label) {
  const rows = [];
  for (let r = 0; r < layout.cellRows; r++) {
    const row = [];
    for (let c = 0; c < layout.cellCols; c++) {
      const cell = r * layout.cellCols + c;
      row.push(Number.isNaN(classes[cell]) ? "" : label(cell, r, c));
    }
    rows.push(row);
  }
  return rows;
}

// ---- the figures ------------------------------------------------------------------------------

// One tensor: its cells' classes, masked lanes hatched, coverage marks, where it ends, and the
// selected program outlined and named where its cells are small. {data, layout, config}.
export function tensorPlot({ view, classes, hatched, marks, program, availableWidth, theme }) {
  const { tensor, layout } = view;
  const rowLabel = tensor.oneD ? (row) => formatCount(row * layout.width) : String;
  const size = plotSize(view.full, availableWidth, rowLabel);
  const cellPx = cellPxOf(size, layout);
  const labels = offsetLabels(layout, classes, cellPx);
  const data = [heatmapTrace(layout, classes, theme, cellPx, labels),
    ...hatchTraces(layout, hatched, cellPx, theme, Boolean(labels)), ...coverageTraces(layout, view.coverage, theme)];
  return {
    data,
    layout: plotLayout(layout, size, theme, {
      ...tensorAxes(tensor, view), rowLabel,
      zoomable: cellPxOf(size, view.full) < 8,
      shapes: [...endOfTensorShapes(view, theme), ...selectionOutlines(layout, marks, size, theme)],
      annotations: selectionLabel(layout, marks, size, program, theme),
    }),
    config: plotConfig(layout),
  };
}

// The program grid (one z slice): a cell per program, the selected one outlined. {data, layout, config}.
export function gridPlot({ grid, availableWidth, theme }) {
  const { layout, classes } = grid;
  // A folded 1-D grid's rows say which programs they hold ("16–31"), so that it reads as one
  // line of programs wrapped, not as a second axis.
  const last = grid.programsInSlice - 1;
  const rowRange = (first, end) => (first === end ? formatCount(first) : `${formatCount(first)}–${formatCount(end)}`);
  const rowLabel = grid.folded ? (row) => rowRange(row * grid.cols, Math.min(last, (row + 1) * grid.cols - 1)) : String;
  const size = plotSize(layout, Math.min(availableWidth * 0.45, 520), rowLabel, 240);
  const cellPx = cellPxOf(size, layout);
  const labels = cellPx >= 26 && layout.bx * layout.by === 1 && classes.length <= 256
    ? cellLabels(layout, classes, (cell, r, c) => (grid.twoD ? `${c},${r}` : String(cell))) : null;
  return {
    data: [heatmapTrace(layout, classes, theme, cellPx, labels)],
    layout: plotLayout(layout, size, theme, {
      ...gridAxes(grid), rowLabel, zoomable: false,
      shapes: grid.selectedCells.map((cell) => cellOutline(layout, cell, theme.text)),
    }),
    config: plotConfig(layout),
  };
}
