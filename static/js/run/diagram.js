// The Diagram tab: for every tensor, which program loaded or stored each element, and which lanes
// a mask switched off. This is the view: it keeps the selection, wires the controls and plotly's
// events, and redraws. What is drawn comes from trace-model.js, the sentences from trace-words.js,
// the figures from diagram-figures.js. Drawn with plotly.js (the global `Plotly`, which renderDiagram's callers load first: plotly.js).
import { emit } from "../shared/hub.js";
import { h } from "../shared/dom.js";
import { indexOfPid, sourceLines, traceModel, withProgram } from "./trace-model.js";
import {
  cellRuns, gridCells, hatchedCells, pidOfGridCell, programAtCell, programRows, programWindow, selectionMarks, strayCells,
  tensorClasses, tensorView, windowOf,
} from "./trace-cells.js";
import {
  NO_TRACE, IDLE_CAPTION, summaryText, selectionCount, programCaption, tensorNote, tensorHoverLines, gridHoverLines,
  fetchingCaption, fetchFailedCaption,
} from "./trace-words.js";
import { readTheme, tensorPlot, gridPlot } from "./diagram-figures.js";
import { legend, coverageList, tensorCard, tooltipLines } from "./diagram-cards.js";

const PLAY_STEP_MS = 900;
const CARD_CHROME_PX = 48; // the view's and a tensor card's padding and border

let current = null; // the diagram rendered last: selectProgram() acts on it

// rowWidth: elements per row of 1-D tensors (null: each tensor's block size), as a link saved it.
// fetchProgram(pid): resolves with a program the trace left out (its accesses, as in
// trace.programs), or rejects with the reason; without it, untraced programs stay grey. A fetched
// program joins the trace (a "trace-extended" event gives the new one) and is drawn selected.
// maxRowWidth: the largest row width a link may keep (the server's schema, initial.spec_schema.ui).
export function renderDiagram(container, trace, { selectedPid = null, rowWidth = null, maxRowWidth = Infinity,
                                                  fetchProgram = null } = {}) {
  current?.dispose();
  container.replaceChildren();
  container.classList.add("diagram");
  delete container.dataset.fetching;
  if (!trace || !trace.programs?.length) {
    container.append(h("p", { class: "diagram-empty" }, NO_TRACE));
    current = null;
    return Promise.resolve();
  }
  current = new Diagram(container, trace, rowWidth, fetchProgram, maxRowWidth);
  const restored = indexOfPid(current.model, selectedPid);
  return restored === null ? current.drawAll() : current.select(restored);
}

export function selectProgram(pid) {
  if (!current) return Promise.resolve();
  return current.select(indexOfPid(current.model, pid));
}

function isZoomed(layout) {
  return layout.rows < layout.allRows || layout.cols < layout.width;
}

function showsRows(layout, rows) {
  return rows !== null && layout.row0 <= rows[0] && rows[1] < layout.row0 + layout.rows;
}

// The cell of a heatmap point.
function cellOf(point, layout) {
  return point.pointNumber[0] * layout.cellCols + point.pointNumber[1];
}

class Diagram {
  constructor(container, trace, rowWidth = null, fetchProgram = null, maxRowWidth = Infinity) {
    this.container = container;
    this.trace = trace;
    this.model = traceModel(trace);
    this.fetchProgram = fetchProgram;
    this.fetching = null; // the program id being fetched
    this.selected = null; // index into model.programs
    this.rowWidth = rowWidth; // the user's row width for 1-D tensors; null: each tensor's block size
    this.maxRowWidth = maxRowWidth;
    this.slice = 0; // the z of the program grid shown
    this.theme = readTheme(container);
    this.playTimer = null;
    this.views = new Map(); // tensor name -> its cells (trace-model.js tensorView), zoomed or not
    this.grid = null; // the program grid's cells as drawn last
    this.build();
    this.lastWidth = container.clientWidth;
    this.resizeObserver = new ResizeObserver(() => this.onResize());
    this.resizeObserver.observe(container);
  }

  dispose() {
    this.stop();
    this.resizeObserver.disconnect();
    for (const plot of this.container.querySelectorAll(".js-plotly-plot")) Plotly.purge(plot);
  }

  build() {
    const { model } = this;
    this.gridPlot = h("div", { class: "diagram-grid-plot" });
    this.caption = h("p", { class: "diagram-caption" });
    this.tooltip = h("div", { class: "diagram-tooltip", hidden: true });
    this.container.append(h("div", { class: "diagram-view" },
      h("p", { class: "diagram-summary" }, summaryText(model)),
      h("div", { class: "diagram-programs" }, this.gridPlot,
        h("div", { class: "diagram-side" }, this.buildControls(), this.caption, legend(model, this.theme, (index) => this.select(index)))),
      coverageList(model),
      h("div", { class: "diagram-tensors" }, model.tensors.map(tensorCard)),
      this.tooltip));
  }

  buildControls() {
    const { model } = this;
    const button = (label, title, onclick) => h("button", { type: "button", class: "diagram-button", title, onclick }, label);
    this.prevButton = button("‹ Prev", "Previous program", () => this.step(-1));
    this.playButton = button("▶ Play", "Step through the programs one by one", () => this.togglePlay());
    this.nextButton = button("Next ›", "Next program", () => this.step(1));
    this.slider = h("input", { class: "diagram-slider", type: "range", min: 0, max: model.programs.length - 1, step: 1, value: 0,
      "aria-label": "Program", oninput: () => this.select(Number(this.slider.value)) });
    this.pidLabel = h("span", { class: "diagram-pid-label" });
    return h("div", { class: "diagram-controls" }, this.prevButton, this.playButton, this.nextButton, this.slider, this.pidLabel,
      button("Show all", "Colour every element by its program again", () => this.select(null)),
      // Only where the page has a Step tab to replay it in (an embed has none).
      document.querySelector('[data-tab="step"]') ? button("Step through", "Replay the selected program line by line, with its values (the Step tab)",
        () => emit("step-requested", { pid: this.selected === null ? [0, 0, 0] : model.programs[this.selected].pid })) : null,
      model.grid[2] > 1 ? this.buildSliceControl() : null,
      model.tensors.some((t) => t.oneD) ? this.buildWidthControl() : null);
  }

  buildSliceControl() {
    this.sliceLabel = h("span", {}, "0");
    this.sliceInput = h("input", { type: "range", min: 0, max: this.model.grid[2] - 1, step: 1, value: 0,
      oninput: () => {
        this.showSlice(Number(this.sliceInput.value));
        this.drawGrid();
      } });
    return h("label", { class: "diagram-field" }, "grid z ", this.sliceInput, this.sliceLabel);
  }

  showSlice(slice) {
    this.slice = slice;
    this.sliceInput.value = String(slice);
    this.sliceLabel.textContent = String(slice);
  }

  buildWidthControl() {
    const input = h("input", { class: "diagram-width", type: "number", min: 1,
      max: Number.isFinite(this.maxRowWidth) ? this.maxRowWidth : null, placeholder: "block",
      value: this.rowWidth ?? "",
      onchange: () => {
        const width = Math.round(Number(input.value));
        this.rowWidth = input.value !== "" && width >= 1 ? Math.min(width, this.maxRowWidth) : null;
        this.views.clear();
        this.focus(this.selected);
        this.drawTensors();
        emit("row-width-changed", { width: this.rowWidth });
      } });
    return h("label", { class: "diagram-field", title: "Elements per row for 1-D tensors; empty: the block size" }, "row width ", input);
  }

  availableWidth() {
    return (this.container.clientWidth || 800) - CARD_CHROME_PX;
  }

  figureOf(tensor) {
    return this.container.querySelector(`.diagram-tensor[data-tensor="${CSS.escape(tensor.name)}"]`);
  }

  viewOf(tensor) {
    if (!this.views.has(tensor.name)) this.views.set(tensor.name, tensorView(tensor, this.rowWidth ?? tensor.rowWidth));
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
    const { programs } = this.model;
    const figure = this.figureOf(tensor);
    const view = this.viewOf(tensor);
    const marks = selectionMarks(view, this.selected);
    figure.dataset.cellElements = String(view.layout.bx * view.layout.by);
    figure.dataset.rows = JSON.stringify([view.layout.row0, view.layout.rows]);
    figure.dataset.highlightedCells = JSON.stringify(this.selected === null ? [] : cellRuns(marks.touched));
    figure.dataset.maskedCells = JSON.stringify(this.selected === null ? [] : cellRuns(marks.masked));
    figure.dataset.strayCells = JSON.stringify(cellRuns(strayCells(view)));
    figure.querySelector(".diagram-note").textContent = tensorNote(view);
    const plot = tensorPlot({
      view, marks, theme: this.theme, availableWidth: this.availableWidth(),
      classes: tensorClasses(view, marks, this.selected, programs),
      hatched: hatchedCells(view, marks, this.selected),
      program: this.selected === null ? null : programs[this.selected],
    });
    const host = figure.querySelector(".diagram-plot");
    return Plotly.react(host, plot.data, plot.layout, plot.config).then(() => this.wireTensorPlot(host, tensor));
  }

  drawGrid() {
    this.grid = gridCells(this.model, this.slice, this.selected);
    const plot = gridPlot({ grid: this.grid, availableWidth: this.availableWidth(), theme: this.theme });
    return Plotly.react(this.gridPlot, plot.data, plot.layout, plot.config).then(() => this.wireGridPlot());
  }

  wireTensorPlot(plot, tensor) {
    if (plot.dataset.wired) return;
    plot.dataset.wired = "1";
    plot.on("plotly_hover", (event) => {
      const view = this.viewOf(tensor);
      this.showTooltip(event, tensorHoverLines(view, cellOf(event.points[0], view.layout), this.model.programs));
    });
    plot.on("plotly_unhover", () => { this.tooltip.hidden = true; });
    plot.on("plotly_click", (event) => {
      const point = event.points[0];
      if (point.curveNumber !== 0) return;
      const view = this.viewOf(tensor);
      const program = programAtCell(view, cellOf(point, view.layout));
      if (program >= 0) this.select(program);
    });
    plot.on("plotly_relayout", (change) => this.zoom(tensor, change));
  }

  // Zooming draws the window again from the trace, binned afresh: single elements come back.
  zoom(tensor, change) {
    const view = this.viewOf(tensor);
    const range = (axis) => change[`${axis}.range`]
      ?? (change[`${axis}.range[0]`] !== undefined ? [change[`${axis}.range[0]`], change[`${axis}.range[1]`]] : null);
    const [x, y] = [range("xaxis"), range("yaxis")];
    const reset = change["xaxis.autorange"] || change["yaxis.autorange"];
    if (!x && !y && !reset) return;
    const { layout } = view;
    const area = reset ? null : windowOf(view.full, x ?? [layout.col0 - 0.5, layout.col0 + layout.cols - 0.5],
      y ?? [layout.row0 - 0.5, layout.row0 + layout.rows - 0.5]);
    this.views.set(tensor.name, tensorView(tensor, this.rowWidth ?? tensor.rowWidth, area));
    this.tooltip.hidden = true;
    this.drawTensor(tensor);
  }

  wireGridPlot() {
    if (this.gridPlot.dataset.wired) return;
    this.gridPlot.dataset.wired = "1";
    const programAt = (point) => this.grid.cellProgram[cellOf(point, this.grid.layout)];
    const pidAt = (point) => pidOfGridCell(this.model, this.grid, cellOf(point, this.grid.layout));
    this.gridPlot.on("plotly_click", (event) => {
      const index = programAt(event.points[0]);
      if (index >= 0) this.select(index);
      else if (this.fetchProgram) this.fetch(pidAt(event.points[0]));
    });
    this.gridPlot.on("plotly_hover", (event) => {
      const point = event.points[0];
      this.showTooltip(event, gridHoverLines(pidAt(point), this.grid, programAt(point), this.model.programs, Boolean(this.fetchProgram)));
    });
    this.gridPlot.on("plotly_unhover", () => { this.tooltip.hidden = true; });
  }

  // A program the trace left out, asked of the server, then the diagram drawn again with it selected.
  // Its answer is dropped if another diagram was drawn meanwhile (a new run's).
  async fetch(pid) {
    if (this.fetching) return;
    this.stop();
    this.fetching = pid;
    this.container.dataset.fetching = pid.join(",");
    this.showCaption(fetchingCaption(pid));
    let program;
    try {
      program = await this.fetchProgram(pid);
    } catch (error) {
      if (current !== this) return;
      this.fetching = null;
      delete this.container.dataset.fetching;
      this.showCaption(fetchFailedCaption(pid, error.message), true);
      return;
    }
    if (current !== this) return;
    const trace = withProgram(this.trace, program);
    emit("trace-extended", { from: this.trace, trace });
    await renderDiagram(this.container, trace, { selectedPid: pid, rowWidth: this.rowWidth, maxRowWidth: this.maxRowWidth,
                                                 fetchProgram: this.fetchProgram });
  }

  showCaption(text, failed = false) {
    this.caption.textContent = text;
    this.caption.classList.toggle("diagram-caption-error", failed);
  }

  showTooltip(event, lines) {
    const mouse = event.event;
    if (!mouse) return;
    this.tooltip.replaceChildren(...tooltipLines(lines));
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
    this.tooltip.hidden = true;   // it named the cell under the pointer before the selection moved (keys, Play, a click)
    this.focus(index);
    const program = index === null ? null : this.model.programs[index];
    if (program && this.model.grid[2] > 1 && program.pid[2] !== this.slice) this.showSlice(program.pid[2]);
    const drawn = this.drawAll();
    emit("program-selected", program ? { pid: program.pid, lines: sourceLines(program) } : { pid: null, lines: [] });
    return drawn;
  }

  // Each tensor shows the selected program's rows: zoomed in where they would be a sliver, the
  // whole tensor again where they are not (or when no program is selected). A window the reader
  // zoomed to themselves stays while it shows the program's rows.
  focus(index) {
    for (const tensor of this.model.tensors) {
      const width = this.rowWidth ?? tensor.rowWidth;
      const shown = this.views.get(tensor.name);
      if (index !== null && shown && isZoomed(shown.layout) && showsRows(shown.layout, programRows(shown, index))) continue;
      const full = tensorView(tensor, width);
      const area = index === null ? null : programWindow(full, index);
      this.views.set(tensor.name, area ? tensorView(tensor, width, area) : full);
    }
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
    this.playButton.textContent = "❚❚ Pause";
    this.playTimer = setInterval(() => {
      if (this.selected >= this.model.programs.length - 1) this.stop();
      else this.step(1);
    }, PLAY_STEP_MS);
  }

  stop() {
    clearInterval(this.playTimer);
    this.playTimer = null;
    if (this.playButton) this.playButton.textContent = "▶ Play";
  }

  updateSelectionText() {
    const { programs } = this.model;
    const program = this.selected === null ? null : programs[this.selected];
    this.container.dataset.selectedPid = program ? program.pid.join(",") : "";
    this.slider.value = String(this.selected ?? 0);
    this.slider.classList.toggle("diagram-slider-idle", program === null);
    this.pidLabel.textContent = selectionCount(this.model, this.selected);
    this.prevButton.disabled = this.selected === 0;
    this.nextButton.disabled = this.selected === programs.length - 1;
    this.showCaption(program ? programCaption(program, this.model.tensors) : IDLE_CAPTION);
  }
}
