// The timeline in the Timings tab (result.timeline, docs/result.md): one lane per SM with the
// programs it ran as bars in time (coloured by launch order, so waves show), the warps of a chosen
// program with their regions (coloured by source line; a click highlights the region's lines in the
// editor), and a summary: overhead, resolution, share per region, the slowest program, SM imbalance.
import { emit, on } from "../shared/hub.js";
import { h, notesList, replaceChildren } from "../shared/dom.js";
import { formatCount, formatNs, formatPercent, formatPid } from "../shared/format.js";
import {
  detailedPrograms, imbalanceWords, laneGeometry, laneSlots, lineColour, orderColour, overheadWords, regionLines,
  resolutionWords, slowestWords, ticks, warpLayout,
} from "./timeline-model.js";

const SVG = "http://www.w3.org/2000/svg";
const LABEL_WIDTH = 56;  // px left of the lanes for their labels
const TOP = 6;           // px above the first lane, for its label

function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
  node.append(...children.filter(Boolean));
  return node;
}

// ---- lanes per SM, on a canvas: thousands of bars draw in a few ms ----

function drawLanes(canvas, t, selected) {
  const { slotOf, slots } = laneSlots(t.bars);
  const { unit, lane } = laneGeometry(t.sm_count, slots);
  const width = Math.max(320, canvas.parentElement.clientWidth || 640);
  const height = lane * t.sm_count + 22 + TOP;
  const ratio = window.devicePixelRatio || 1;
  Object.assign(canvas, { width: width * ratio, height: height * ratio });
  Object.assign(canvas.style, { width: `${width}px`, height: `${height}px` });
  const ctx = canvas.getContext("2d");
  ctx.scale(ratio, ratio);
  ctx.translate(0, TOP);
  const scale = (width - LABEL_WIDTH - 8) / Math.max(1, t.total_ns);
  const x = (ns) => LABEL_WIDTH + ns * scale;
  const style = getComputedStyle(document.documentElement);
  ctx.fillStyle = style.getPropertyValue("--panel-sunken").trim() || "#0f1218";
  ctx.fillRect(LABEL_WIDTH, 0, width - LABEL_WIDTH - 8, lane * t.sm_count);
  for (const [block, sm, start, end] of t.bars) {
    ctx.fillStyle = orderColour(block, t.programs_total);
    ctx.fillRect(x(start), sm * lane + slotOf.get(block) * unit, Math.max(1, (end - start) * scale),
      Math.max(1, unit - (unit > 3 ? 1 : 0)));
  }
  const muted = style.getPropertyValue("--muted").trim() || "#8792a4";
  ctx.fillStyle = muted;
  ctx.font = "10px sans-serif";
  ctx.textBaseline = "middle";
  const every = Math.ceil(12 / lane);  // a label every few lanes, where they fit
  for (let sm = 0; sm < t.sm_count; sm += every) ctx.fillText(`SM ${sm}`, 4, sm * lane + lane / 2);
  ctx.textBaseline = "top";
  for (const tick of ticks(t.total_ns)) {
    ctx.fillRect(x(tick), lane * t.sm_count, 1, 4);
    ctx.fillText(formatNs(tick), Math.min(x(tick) + 2, width - 50), lane * t.sm_count + 6);
  }
  if (selected) {
    ctx.strokeStyle = style.getPropertyValue("--text-strong").trim() || "#fff";
    ctx.lineWidth = 2;
    ctx.strokeRect(x(selected.start_ns) - 1, selected.sm * lane + (slotOf.get(selected.block) ?? 0) * unit - 1,
      Math.max(3, (selected.end_ns - selected.start_ns) * scale) + 2, unit + 2);
  }
  canvas.dataset.drawn = String(t.bars.length);
  return { lane, unit, slotOf, scale };
}

// The program under a point of the lanes, or null.
function barAt(t, geometry, offsetX, offsetY) {
  const y = offsetY - TOP;
  const sm = Math.floor(y / geometry.lane);
  const slot = Math.floor((y % geometry.lane) / geometry.unit);
  const ns = (offsetX - LABEL_WIDTH) / geometry.scale;
  const slack = 2 / geometry.scale;
  return t.bars.find(([block, s, start, end]) => s === sm && geometry.slotOf.get(block) === slot
    && start - slack <= ns && ns <= end + slack) || null;
}

// ---- the warps of one program ----

function warpsFigure(t, program, width, onRegion) {
  const layout = warpLayout(program);
  const rows = t.regions.length;
  const sub = rows > 4 ? 6 : 10;
  const warpHeight = rows * sub + 6;
  const height = program.warps.length * warpHeight + 18;
  const figure = svg("svg", { viewBox: `0 0 ${width} ${height}`, width, height, class: "timeline-warps", role: "img",
                             "aria-label": `regions of program ${formatPid(program.pid)} per warp` });
  const left = 64;
  const span = width - left - 8;
  program.warps.forEach((_, w) => {
    figure.append(svg("text", { x: 4, y: w * warpHeight + warpHeight / 2 + 3, class: "warp-label" }, `warp ${w}`));
    layout.warps[w].forEach((s) => {
      const region = t.regions[s.region];
      if (!region) return;
      const rect = svg("rect", {
        x: left + s.x0 * span, y: w * warpHeight + s.region * sub + 3, width: Math.max(1.5, (s.x1 - s.x0) * span),
        height: sub - 1, fill: lineColour(region.lines[0]), class: "region", "data-region": s.region, tabindex: -1,
      }, svg("title", {}, `${region.name} (${regionLines(region.lines)}) · warp ${w}: ${formatCount(s.cycles)} cycles, `
        + `${formatNs(s.endNs - s.startNs)}`));
      rect.addEventListener("click", () => onRegion(s.region));
      figure.append(rect);
    });
  });
  for (const tick of ticks(layout.to - layout.from, 5)) {
    const x = left + (tick / Math.max(1, layout.to - layout.from)) * span;
    figure.append(svg("text", { x, y: height - 4, class: "tick" }, `+${formatNs(tick)}`));
  }
  return figure;
}

function legend(t, onRegion) {
  return h("div", { class: "timeline-legend" }, t.regions.map((region, i) => h("button", {
    type: "button", class: "region-key", dataset: { region: String(i) }, onclick: () => onRegion(i),
    title: `highlight ${regionLines(region.lines)} in the editor`,
  }, h("span", { class: "swatch", style: `background: ${lineColour(region.lines[0])}` }), region.name,
  h("span", { class: "muted" }, ` ${regionLines(region.lines)}${region.marked ? "" : " (derived)"}`))));
}

function summaryTable(t) {
  return h("table", { class: "outputs timeline-shares" },
    h("thead", {}, h("tr", {}, h("th", {}, "region"), h("th", {}, "lines"), h("th", {}, "share of the programs' time"),
      h("th", {}, "per program (mean)"))),
    h("tbody", {}, t.summary.regions.map(({ region, share, mean_ns: mean }) => h("tr", { dataset: { region: String(region) } },
      h("td", {}, t.regions[region].name), h("td", {}, regionLines(t.regions[region].lines)),
      h("td", {}, formatPercent(share)), h("td", {}, formatNs(mean))))));
}

// ---- the card ----

class TimelineCard {
  constructor(t) {
    this.t = t;
    this.programs = detailedPrograms(t);
    this.selected = this.programs[0] || null;
    this.region = null;
    this.canvas = h("canvas", { class: "timeline-lanes", "aria-label": "programs on their SMs over time" });
    this.canvas.addEventListener("click", (event) => this.clickLanes(event));
    this.detail = h("div", { class: "timeline-detail" });
    this.status = h("p", { class: "caption timeline-pick" });
    this.picker = h("select", { class: "timeline-program", "aria-label": "program to show per warp",
                                onchange: () => this.select(this.programs[Number(this.picker.value)]) },
      this.programs.map((p, i) => h("option", { value: String(i) },
        `${formatPid(p.pid)} · SM ${p.sm} · ${formatNs(p.end_ns - p.start_ns)}`)));
  }

  render() {
    const t = this.t;
    const sampled = t.sampled ? ` · ${formatCount(t.bars.length)} drawn, ${formatCount(t.programs.length)} with their warps` : "";
    this.node = h("div", { class: "card timeline-card" },
      h("div", { class: "card-head" }, "Timeline", h("span", { class: "muted" },
        `${formatCount(t.programs_total)} programs on ${formatCount(t.sm_count)} SMs${sampled} · Proton's instrumentation`)),
      h("div", { class: "card-body" },
        h("p", { class: "timeline-overhead" }, overheadWords(t)),
        h("p", { class: "caption" }, resolutionWords(t)),
        h("h4", {}, "Programs on their SMs"),
        h("div", { class: "timeline-lanes-host" }, this.canvas),
        h("p", { class: "caption" }, "One lane per SM, a row of it per program resident at once; each bar a program, from "
          + "its start to its end, coloured by launch order (blue first, red last): bands of one colour are the waves of "
          + "the grid. Click a bar to see its warps."),
        h("h4", {}, "Warps of a program ", this.picker), this.status, this.detail,
        legend(t, (i) => this.pickRegion(i)),
        h("h4", {}, "Where the time goes"), summaryTable(t),
        h("p", { class: "timeline-slowest" }, slowestWords(t)),
        h("p", { class: "timeline-imbalance" }, imbalanceWords(t)),
        notesList(t.notes)));
    return this.node;
  }

  draw() {
    this.geometry = drawLanes(this.canvas, this.t, this.selected);
    this.showDetail();
  }

  clickLanes(event) {
    const bar = barAt(this.t, this.geometry, event.offsetX, event.offsetY);
    if (!bar) return;
    const program = this.programs.find((p) => p.block === bar[0]);
    if (program) this.select(program);
    else this.status.textContent = `Program ${bar[0]} ran on SM ${bar[1]} for ${formatNs(bar[3] - bar[2])}; `
      + "its warps were not kept (a sample of the programs is): pick one from the list.";
  }

  select(program) {
    this.selected = program;
    this.picker.value = String(this.programs.indexOf(program));
    this.draw();
  }

  showDetail() {
    const p = this.selected;
    if (!p) {
      replaceChildren(this.detail, h("p", { class: "caption" }, "No program kept its warps' regions."));
      return;
    }
    this.status.textContent = `Program ${formatPid(p.pid)} on SM ${p.sm}, from ${formatNs(p.start_ns)} to ${formatNs(p.end_ns)}`
      + `${p.truncated ? "; its warps recorded more spans than are shown" : ""}. Click a region to see its lines.`;
    const width = Math.max(320, this.detail.clientWidth || 640);  // drawn at its size: its text as the page's
    replaceChildren(this.detail, warpsFigure(this.t, p, width, (i) => this.pickRegion(i)));
    this.markRegion();
  }

  pickRegion(index) {
    this.region = index;
    const [first, last] = this.t.regions[index].lines;
    if (first > 0) emit("timeline-region-selected", { line: first, endLine: last });
    this.markRegion();
  }

  markRegion() {
    for (const node of this.node?.querySelectorAll("[data-region]") || []) {
      node.classList.toggle("selected", this.region !== null && Number(node.dataset.region) === this.region);
    }
  }
}

// ---- the tab's section ----

function offer(result, mode) {
  const refused = (result?.notes || []).find((note) => note.startsWith("No timeline"));
  const script = mode === "script";
  return h("div", { class: "card timeline-card timeline-offer" },
    h("div", { class: "card-head" }, "Timeline", h("span", { class: "muted" }, "where the time goes inside the kernel")),
    h("div", { class: "card-body" },
      refused ? h("p", { class: "timeline-refused" }, refused) : null,
      h("p", { class: "caption" }, "On a GPU, run the kernel once more under Proton's instrumentation: which program ran on "
        + "which SM and when, and per warp the regions of your source. Mark a region with the comments ",
      h("code", {}, "# region: NAME"), " and ", h("code", {}, "# endregion"), "; without them the kernel and its loops are timed."),
      script
        ? h("p", { class: "caption timeline-script" }, "In a program, the launch shown is timed: the one selected in "
          + "the list of launches (replayed alone where its inputs were kept), else the one its run shows.")
        : null,
      h("button", { type: "button", class: "button small timeline-record", onclick: () => emit("timeline-requested", { mode }) },
        script ? "Record the shown launch's timeline" : "Record a timeline")));
}

export function initTimeline(container) {
  if (!container) return;
  let card = null;
  let visible = false;
  let mode = "form";
  const show = (node) => { card = null; replaceChildren(container, node); };
  const draw = (timeline) => {
    card = new TimelineCard(timeline);
    replaceChildren(container, card.render());
    if (visible) card.draw();
  };
  const shown = (result) => (result?.timeline ? draw(result.timeline) : show(offer(result, mode)));
  show(offer(null, mode));
  on("spec-loaded", ({ spec }) => {
    mode = spec?.mode === "script" ? "script" : "form";
    show(offer(null, mode));
  });
  on("run-mode-changed", ({ mode: changed }) => {
    mode = changed;
    if (!card) show(offer(null, mode));
  });
  on("run-started", ({ spec }) => {
    if (spec?.options?.timeline) show(h("div", { class: "empty-state" }, "recording a timeline…"));
  });
  on("run-partial", ({ part, result }) => { if (part === "timeline") shown(result); });
  on("run-result", ({ result }) => shown(result));
  on("tab-shown", ({ tab }) => {
    visible = tab === "timings";
    if (visible && card) card.draw();  // a canvas in a hidden tab has no width to draw to
  });
}
