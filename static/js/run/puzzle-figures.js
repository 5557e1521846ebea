// Two runs' writes side by side: for an output, two plotly heatmaps, each element coloured by the
// program that stored it (a puzzle's solution, or the pinned run, on the left; yours on the right),
// yours marked where it missed, added or wrote twice what the left one writes. Pure: traces in,
// figures out. Used by the Puzzle tab and the Compare tab.
import { formatCount } from "../shared/format.js";

const PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
  "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#17becf"];
export const MARKS = {
  missed: { symbol: "x", colour: "#ff4d4d", words: "missed: the solution writes it, yours never does" },
  extra: { symbol: "triangle-up", colour: "#ffb020", words: "extra: yours writes it, the solution does not" },
  twice: { symbol: "circle-open", colour: "#e070ff", words: "written twice: yours stores it more than once" },
};
const MAX_CELLS = 4096; // past this many elements, the figure shows the first MAX_CELLS
const ONE_D_WIDTH = 32;

function linearPid(pid, grid) {
  return pid[0] + grid[0] * (pid[1] + grid[1] * pid[2]);
}

// {element: index of the last program that stored it} for one tensor.
export function owners(trace, tensor) {
  const found = new Map();
  for (const program of trace.programs) {
    const index = linearPid(program.pid, trace.grid);
    for (const access of program.accesses) {
      if (access.tensor !== tensor || (access.op !== "store" && access.op !== "atomic")) continue;
      if (access.out_of_bounds?.length) continue;   // the access that stopped the run wrote nothing
      for (const [start, length] of access.offsets) {
        for (let e = start; e < start + length && e < MAX_CELLS; e++) found.set(e, index);
      }
    }
  }
  return found;
}

// Rows × columns of the picture: a matrix as it is, a vector folded into rows of ONE_D_WIDTH.
export function shapeOf(shape) {
  const numel = Math.min(shape.reduce((a, b) => a * b, 1), MAX_CELLS);
  const cols = shape.length >= 2 ? shape[shape.length - 1] : Math.min(numel, ONE_D_WIDTH);
  return { numel, cols: Math.max(cols, 1), rows: Math.max(Math.ceil(numel / Math.max(cols, 1)), 1) };
}

// What a figure leaves out of a big tensor, in words ("rows 0–31 of 128 shown: the first 4,096
// elements"); null when it shows all of it. Its marks' counts are the whole tensor's.
export function shownPart(shape) {
  const total = shape.reduce((a, b) => a * b, 1);
  const { numel, cols, rows } = shapeOf(shape);
  if (numel >= total) return null;
  return shape.length >= 2 ? `rows 0–${rows - 1} of ${formatCount(total / cols)} shown: the first ${formatCount(numel)} elements`
    : `elements 0–${formatCount(numel - 1)} of ${formatCount(total)} shown`;
}

function grid(owned, layout) {
  const z = [];
  for (let r = 0; r < layout.rows; r++) {
    const row = [];
    for (let c = 0; c < layout.cols; c++) {
      const e = r * layout.cols + c;
      row.push(e < layout.numel && owned.has(e) ? owned.get(e) % PALETTE.length : null);
    }
    z.push(row);
  }
  return z;
}

// A gap between cells only where they are large enough to keep their colour: small ones would
// show mostly the grey behind them.
function heatmap(z, axis, cellPx) {
  const steps = PALETTE.flatMap((colour, i) => [[i / PALETTE.length, colour], [(i + 1) / PALETTE.length, colour]]);
  const gap = cellPx >= 8 ? 1 : 0;
  return { type: "heatmap", z, xaxis: `x${axis}`, yaxis: `y${axis}`, zmin: 0, zmax: PALETTE.length,
           colorscale: steps, showscale: false, xgap: gap, ygap: gap, hoverinfo: "skip" };
}

function marks(kind, runs, layout, axis) {
  const x = [], y = [];
  for (const [start, length] of runs) {
    for (let e = start; e < start + length && e < layout.numel; e++) {
      x.push(e % layout.cols);
      y.push(Math.floor(e / layout.cols));
    }
  }
  const mark = MARKS[kind];
  return { type: "scatter", mode: "markers", x, y, xaxis: `x${axis}`, yaxis: `y${axis}`, name: kind,
           marker: { symbol: mark.symbol, color: mark.colour, size: 9, line: { width: 2, color: mark.colour } },
           hovertemplate: `${kind} (row %{y}, col %{x})<extra></extra>` };
}

// {data, layout, config} for output `name`; diff is result.puzzle.diff[name].
export function comparisonFigure({ name, expected, yours, diff, theme, availableWidth,
                                   titles = ["expected (the solution)", "yours"] }) {
  const shape = (expected.tensors[name] || yours.tensors[name]).shape;
  const layout = shapeOf(shape);
  // Square cells, as large as two copies side by side allow in the available width.
  const cellPx = Math.max(4, Math.min(26, Math.floor((availableWidth - 110) / (2 * layout.cols + 2))));
  const data = [heatmap(grid(owners(expected, name), layout), "", cellPx), heatmap(grid(owners(yours, name), layout), "2", cellPx)];
  for (const kind of Object.keys(MARKS)) {
    if (diff && diff[kind] && diff[kind].count) data.push(marks(kind, diff[kind].runs, layout, "2"));
  }
  const axis = (domain, title) => ({ domain, title: { text: title, font: { size: 12 } }, showgrid: false, zeroline: false,
                                      color: theme.axis, range: [-0.5, layout.cols - 0.5], fixedrange: true });
  const rows = [...Array(layout.rows).keys()].filter((r) => layout.rows <= 16 || r % Math.ceil(layout.rows / 16) === 0);
  const ticktext = rows.map((r) => formatCount(shape.length >= 2 ? r : r * layout.cols));
  const yaxis = { autorange: "reversed", showgrid: false, zeroline: false, color: theme.axis, fixedrange: true,
                  tickvals: rows, ticktext, title: { text: shape.length >= 2 ? "row" : "element", font: { size: 11 }, standoff: 6 } };
  // The right map shares the left one's rows: no labels of its own to run into the left map.
  const left = 34 + 7 * Math.max(...ticktext.map((t) => t.length));
  return {
    data,
    layout: {
      paper_bgcolor: theme.paper, plot_bgcolor: theme.untouched, font: { color: theme.text, size: 11 },
      width: Math.min(2 * layout.cols * cellPx + 2 * cellPx + 60 + left, availableWidth), height: layout.rows * cellPx + 80,
      margin: { l: left, r: 10, t: 10, b: 50 }, showlegend: false,
      xaxis: axis([0, 0.47], titles[0]), yaxis,
      xaxis2: { ...axis([0.53, 1], titles[1]), anchor: "y2" }, yaxis2: { ...yaxis, anchor: "x2", title: null, showticklabels: false },
    },
    config: { displayModeBar: false, responsive: false, staticPlot: false },
  };
}
