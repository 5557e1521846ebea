// The Timings tab: kernel vs. the PyTorch reference, compile time, memory bandwidth against the
// measured copy bandwidth, TFLOP/s against the datasheet peak, a roofline, the autotuner's configs
// and notes. Interpreter runs get their wall-clock times and byte counts, labelled, with no rate claims.
import { on } from "../shared/hub.js";
import { h, replaceChildren, notesList } from "../shared/dom.js";
import { loadPlotly } from "../shared/plotly.js";
import { formatBytes, formatCount, formatMs, formatPercent, formatRate, formatRatio, formatScaled } from "../shared/format.js";

function metric(label, value, detail, cls = "") {
  return h("div", { class: `metric ${cls}` }, h("div", { class: "label" }, label),
    h("div", { class: "value" }, value), detail ? h("div", { class: "detail" }, detail) : null);
}

// "p20 14.9 µs · p80 15.4 µs · 100 runs": each part kept on one line, so a narrow card breaks
// between the parts, never inside one.
function spread(stats) {
  if (!stats) return null;
  const parts = stats.n > 1 ? [`p20 ${formatMs(stats.p20)}`, `p80 ${formatMs(stats.p80)}`, `${formatCount(stats.n)} runs`] : ["one run"];
  return parts.flatMap((part, i) => [i ? " · " : null, h("span", { class: "part" }, part)]);
}

// Kernel and reference medians as bars on one scale, the p20–p80 range shaded on each.
function comparisonBars(kernel, reference) {
  const rows = [["kernel", kernel, ""], ["reference", reference, "reference"]].filter(([, s]) => s);
  const scale = Math.max(...rows.map(([, s]) => s.p80 || s.median));
  return h("div", { class: "card" },
    h("div", { class: "card-head" }, "Time per launch", h("span", { class: "muted" }, "median, p20–p80 shaded; shorter is faster")),
    h("div", { class: "card-body bars" }, rows.map(([label, s, cls]) => h("div", { class: "bar-row" },
      h("span", { class: "bar-label" }, label),
      h("div", { class: "bar-track" },
        h("div", { class: `bar-fill ${cls}`, style: `width: ${(100 * s.median) / scale}%` }),
        s.n > 1 ? h("div", { class: "bar-fill range", style: `left: ${(100 * s.p20) / scale}%; width: ${(100 * (s.p80 - s.p20)) / scale}%` }) : null),
      h("span", { class: "bar-value" }, formatMs(s.median))))));
}

const BYTES_SOURCE = {
  trace: "unique elements loaded and stored, from the trace",
  tensors: "sizes of all tensors (no complete trace)",
};

// An achieved rate as a bar against its ceiling (or alone when the ceiling is unknown).
function ceilingCard({ title, achieved, peak, unit, peakName, peakNote, caption }) {
  const share = peak ? achieved / peak : null;
  const value = (x) => formatRate(x, unit, "\u00a0");  // no break before the unit
  return h("div", { class: "card ceiling" },
    h("div", { class: "card-head" }, title,
      h("span", { class: "muted" }, share !== null ? `${formatPercent(share)} of the ${peakName}` : "")),
    h("div", { class: "card-body" },
      h("div", { class: "bar-row" },
        h("span", { class: "bar-label" }, "achieved"),
        h("div", { class: "bar-track", title: share !== null ? `${value(achieved)} of ${value(peak)}` : "" },
          h("div", { class: "bar-fill", style: `width: ${Math.min(100, 100 * (share ?? 1))}%` })),
        h("span", { class: "bar-value" }, value(achieved))),
      h("p", { class: "caption" }, caption, peak ? ` · ${peakName} ${value(peak)}${peakNote ? `: ${peakNote}` : ""}` : "")));
}

// peak_gbps is a device-to-device copy measured on this GPU: a practical ceiling, not the datasheet's.
function bandwidthCard(t) {
  if (!t.gbps) return null;
  return ceilingCard({
    title: "Memory bandwidth", achieved: t.gbps, peak: t.peak_gbps, unit: "GB/s", peakName: "measured copy bandwidth",
    caption: `${formatBytes(t.bytes)} moved in ${formatMs(t.kernel_ms.median)}: ${BYTES_SOURCE[t.bytes_source] || t.bytes_source}`,
  });
}

function computeCard(t) {
  if (!t.tflops) return null;
  return ceilingCard({
    title: "Compute", achieved: t.tflops, peak: t.peak_tflops, unit: "TFLOP/s", peakName: "peak", peakNote: t.peak_tflops_kind,
    caption: `${formatScaled(t.flops, "FLOP")} (options.flops) in ${formatMs(t.kernel_ms.median)}`,
  });
}

// ---- the roofline ----

// Plotly is heavy and cannot measure a hidden tab: the plots are drawn once the tab is visible.
let tabVisible = false;
let pendingRoofline = null;   // {host, t, facts}: a roofline waiting for the tab to be shown
let pendingCharts = [];       // [{host, traces, layout}]: a script's benchmark plots, waiting likewise
let rooflineObserver = null;  // resizes the drawn plots with their pane (splitters, window)

// What the roofline says about the kernel: its intensity, the roof above it and the share it reaches.
function rooflineFacts(t) {
  const intensity = t.flops / t.bytes;                          // FLOP per byte moved
  const memoryRoof = (intensity * t.peak_gbps) / 1000;          // GB/s × FLOP/B → TFLOP/s
  const roof = t.peak_tflops ? Math.min(memoryRoof, t.peak_tflops) : memoryRoof;
  const ridge = t.peak_tflops ? (1000 * t.peak_tflops) / t.peak_gbps : null;
  return { intensity, roof, ridge, share: t.tflops / roof, bound: ridge && intensity >= ridge ? "compute" : "memory" };
}

function rooflineCaption(t, facts) {
  const where = facts.ridge
    ? `${facts.intensity >= facts.ridge ? "right" : "left"} of the ridge at ${formatRate(facts.ridge, "FLOP/B")}, so ${facts.bound}-bound`
    : "memory roof only: no compute peak is known for this GPU and dtype";
  return `${formatRate(facts.intensity, "FLOP/B")} (${formatScaled(t.flops, "FLOP")} over ${formatBytes(t.bytes)}): `
    + `${where}; ${formatPercent(facts.share)} of the roof at this intensity.`;
}

function rooflineCard(t) {
  if (!t.bytes || !t.peak_gbps) return null;
  if (!t.flops || !t.tflops) {
    return h("p", { class: "roofline-hint" }, "No roofline without a FLOP count: set FLOPs in the Options row (e.g. ",
      h("code", {}, "2 * M * N * K"), ") and run again.");
  }
  const facts = rooflineFacts(t);
  const host = h("div", { class: "roofline-plot" });
  pendingRoofline = { host, t, facts };
  return h("div", { class: "card roofline" },
    h("div", { class: "card-head" }, "Roofline", h("span", { class: "muted" },
      facts.ridge ? "log–log; the kernel under the lower of its two ceilings" : "log–log; the kernel under the memory ceiling")),
    h("div", { class: "card-body" }, host, h("p", { class: "caption" }, rooflineCaption(t, facts))));
}

function cssVar(name) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
}

// The memory roof rises to the ridge point, the compute roof is flat after it; they span two decades
// left of the kernel (or the ridge) and one to the right, so both roofs and the point show.
function rooflineTraces(t, facts) {
  const lo = Math.min(facts.intensity, facts.ridge ?? Infinity) / 100;
  const hi = Math.max(facts.intensity, facts.ridge ?? 0) * 10;
  const memoryEnd = facts.ridge ?? hi;
  const line = (colour) => ({ color: colour, width: 2 });
  const traces = [{
    type: "scatter", mode: "lines", name: `memory roof: ${formatRate(t.peak_gbps, "GB/s")} (measured copy)`,
    x: [lo, memoryEnd], y: [(lo * t.peak_gbps) / 1000, (memoryEnd * t.peak_gbps) / 1000],
    line: line(cssVar("--accent")), hovertemplate: "%{x:.3~s} FLOP/B → %{y:.3~s} TFLOP/s<extra>memory roof</extra>",
  }];
  if (facts.ridge) {
    traces.push({
      type: "scatter", mode: "lines", name: `compute roof: ${formatRate(t.peak_tflops, "TFLOP/s")}${t.peak_tflops_kind ? ` (${t.peak_tflops_kind})` : ""}`,
      x: [facts.ridge, hi], y: [t.peak_tflops, t.peak_tflops],
      line: line(cssVar("--warn")), hovertemplate: "%{y:.4~s} TFLOP/s<extra>compute roof</extra>",
    });
  }
  traces.push({
    type: "scatter", mode: "markers", name: "this kernel", x: [facts.intensity], y: [t.tflops],
    marker: { size: 11, color: cssVar("--ok"), line: { color: cssVar("--text-strong"), width: 1.5 } },
    hovertemplate: `this kernel<br>${formatRate(facts.intensity, "FLOP/B")} · ${formatRate(t.tflops, "TFLOP/s")}`
      + `<br>${formatPercent(facts.share)} of the ${facts.bound} roof<extra></extra>`,
  });
  return traces;
}

// Ticks on whole decades only (0.1, 1, 10, 100, 1k): a log plot's in-between digits are noise here.
// The y range leaves room above the highest roof or point, so the compute roof is not on the frame.
function rooflineLayout(traces) {
  const ys = traces.flatMap((trace) => trace.y);
  const yRange = [Math.log10(Math.min(...ys)) - 0.1, Math.log10(Math.max(...ys)) + 0.3];
  const axis = { type: "log", dtick: 1, tickformat: "~s", gridcolor: cssVar("--border"), zeroline: false,
                 color: cssVar("--muted"), ticks: "outside", ticklen: 3 };
  return {
    height: 320, margin: { l: 56, r: 16, t: 8, b: 40 },
    paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "rgba(0,0,0,0)",
    font: { family: getComputedStyle(document.body).fontFamily, size: 11, color: cssVar("--text") },
    xaxis: { ...axis, title: { text: "arithmetic intensity (FLOP/byte)", standoff: 6 } },
    yaxis: { ...axis, range: yRange, title: { text: "TFLOP/s", standoff: 6 } },
    legend: { orientation: "h", x: 0, y: -0.2, xanchor: "left", yanchor: "top" },
    hoverlabel: { bgcolor: cssVar("--panel"), bordercolor: cssVar("--border-strong"), font: { color: cssVar("--text") } },
    hovermode: "closest",
  };
}

async function drawRoofline() {
  if (!tabVisible || !(pendingRoofline || pendingCharts.length)) return;
  const plots = pendingCharts.map(({ host, traces, layout }) => [host, traces, layout]);
  if (pendingRoofline) {
    const { host, t, facts } = pendingRoofline;
    const traces = rooflineTraces(t, facts);
    plots.push([host, traces, rooflineLayout(traces)]);
  }
  pendingRoofline = null;
  pendingCharts = [];
  const Plotly = await loadPlotly();
  rooflineObserver?.disconnect();
  rooflineObserver = new ResizeObserver((entries) => {
    for (const { target } of entries) if (target.offsetWidth) Plotly.Plots.resize(target);
  });
  for (const [host, traces, layout] of plots) {
    if (!host.isConnected) continue;   // replaced while plotly loaded
    Plotly.newPlot(host, traces, layout, { displaylogo: false, displayModeBar: false });
    rooflineObserver.observe(host);
  }
}

// ---- a script's perf_report benchmarks (result.benchmarks): the plot the program would draw ----

// An axis of the values it shows: SI prefixes for large numbers (4k, 134M), never for small ones
// (0.04 GB/s, not "40m"); a chart of one or two points ticks at its points (size 4096, not 4095.8).
function chartAxis(title, log, values, atPoints) {
  const axis = { type: log ? "log" : "linear", title: { text: title, standoff: 6 },
                 tickformat: values.every((v) => Math.abs(v) >= 1 || v === 0) ? "~s" : "~r",
                 ...(log ? { dtick: 1 } : {}),   // a log axis ticks whole decades only
                 gridcolor: cssVar("--border"), zeroline: false, color: cssVar("--muted") };
  if (!atPoints || !values.length) return axis;
  const [lo, hi] = [Math.min(...values), Math.max(...values)];
  const range = log ? [Math.log10(lo) - 0.5, Math.log10(hi) + 0.5] : [lo - Math.max(1, lo * 0.5), hi + Math.max(1, hi * 0.5)];
  const ticks = [...new Set(values)];
  return { ...axis, range, tickmode: "array", tickvals: ticks, ticktext: ticks.map(formatCount), dtick: undefined };
}

// The values' axis of a chart of one point (or of values all one): from zero (a decade either side
// on a log axis), so that a measurement reads as a size, not as a zoomed window around itself.
function valueAxis(title, log, values, fromZero) {
  const axis = chartAxis(title, log, values, false);
  if (!fromZero || !values.length) return axis;
  const [lo, hi] = [Math.min(...values), Math.max(...values)];
  if (log) return lo > 0 ? { ...axis, range: [Math.log10(lo) - 1, Math.log10(hi) + 1] } : axis;
  return { ...axis, range: lo === 0 && hi === 0 ? [-1, 1] : [Math.min(0, lo * 1.25), Math.max(0, hi * 1.25)] };
}

function chartLayout(chart) {
  const xs = chart.points.map(([x]) => x);
  const ys = chart.points.flatMap(([, values]) => values).filter((v) => typeof v === "number");
  return {
    height: 280, margin: { l: 56, r: 16, t: 8, b: 40 },
    paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "rgba(0,0,0,0)",
    font: { family: getComputedStyle(document.body).fontFamily, size: 11, color: cssVar("--text") },
    xaxis: chartAxis(chart.x, chart.x_log, xs, xs.length < 3),
    yaxis: valueAxis(chart.y, chart.y_log, ys, xs.length === 1 || new Set(ys).size === 1),
    legend: { orientation: "h", x: 0, y: -0.25, xanchor: "left", yanchor: "top" }, hovermode: "closest",
  };
}

// A line's style as the program's Benchmark gave it (result.benchmarks[].styles: a CSS colour and a
// plotly dash, each checked again here, as anything the program wrote), else plotly's own.
const DASHES = new Set(["solid", "dash", "dashdot", "dot"]);
function lineStyle(style) {
  const [color, dash] = Array.isArray(style) ? style : [];
  const line = {};
  if (typeof color === "string" && CSS.supports("color", color)) line.color = color;
  if (DASHES.has(dash)) line.dash = dash;
  return { line, marker: line.color ? { color: line.color } : {} };
}

function chartCard(chart) {
  const host = h("div", { class: "benchmark-plot" });
  const traces = chart.lines.map((name, i) => ({
    type: "scatter", mode: "lines+markers", name, x: chart.points.map(([x]) => x), y: chart.points.map(([, ys]) => ys[i]),
    ...lineStyle(chart.styles?.[i]),
  }));
  pendingCharts.push({ host, traces, layout: chartLayout(chart) });
  const shown = chart.points.length < chart.points_total
    ? `${formatCount(chart.points.length)} of its ${formatCount(chart.points_total)} points: tick every benchmark point to run them all`
    : `${formatCount(chart.points.length)} points`;
  return h("div", { class: "card benchmark-chart", dataset: { benchmark: chart.name } },
    h("div", { class: "card-head" }, chart.name, h("span", { class: "muted" }, `perf_report · ${shown} · the interpreter's wall clock`)),
    h("div", { class: "card-body" }, host));
}

// A new result or spec replaces the tab: free the old plots' listeners and data first.
function clearRoofline(container) {
  pendingRoofline = null;
  pendingCharts = [];
  rooflineObserver?.disconnect();
  rooflineObserver = null;
  for (const plot of container.querySelectorAll(".js-plotly-plot")) window.Plotly.purge(plot);
}

// One row per config; the one the launch used is marked.
function autotuneCard(table) {
  if (!Array.isArray(table) || !table.length) return null;
  const keys = [...new Set(table.flatMap((row) => Object.keys(row.config)))];
  const timed = table.some((row) => row.ms !== null && row.ms !== undefined);
  return h("div", { class: "card" },
    h("div", { class: "card-head" }, "Autotune configs",
      h("span", { class: "muted" }, timed ? "median of each; the chosen one was launched" : "not timed; the chosen one was launched")),
    h("div", { class: "table-scroll" }, h("table", { class: "outputs autotune" },
      h("thead", {}, h("tr", {}, keys.map((key) => h("th", {}, key)), timed ? h("th", {}, "median") : null, h("th", {}, ""))),
      h("tbody", {}, table.map((row) => h("tr", { class: row.chosen ? "chosen" : "" },
        keys.map((key) => h("td", {}, key in row.config ? String(row.config[key]) : "–")),
        timed ? (row.ms === null || row.ms === undefined ? h("td", { title: "not timed, or it failed to compile or run" }, "–") : h("td", {}, formatMs(row.ms))) : null,
        h("td", {}, row.chosen ? h("span", { class: "badge ok" }, "chosen") : null)))))));
}

function gpuTimings(t) {
  const speedup = t.speedup;
  return [
    h("div", { class: "metrics" },
      metric("Kernel (median)", formatMs(t.kernel_ms.median), spread(t.kernel_ms)),
      t.reference_ms ? metric("PyTorch reference", formatMs(t.reference_ms.median), spread(t.reference_ms)) : null,
      speedup ? metric("Speedup", h("span", {}, formatRatio(speedup), h("small", {}, "×")),
        speedup >= 1 ? "faster than the reference" : "slower than the reference", speedup >= 1 ? "good" : "slow") : null,
      t.compile_ms !== null && t.compile_ms !== undefined ? metric("First launch", formatMs(t.compile_ms), "includes compiling the kernel") : null),
    comparisonBars(t.kernel_ms, t.reference_ms),
    bandwidthCard(t),
    computeCard(t),
    rooflineCard(t),
    autotuneCard(t.autotune),
    notesList(t.notes),
  ];
}

// Counts are facts on any device; rates from the interpreter's wall clock would be fiction.
function interpreterTimings(t) {
  return [
    h("div", { class: "notice" }, h("b", {}, "Interpreter wall-clock — not GPU performance. "),
      "The kernel ran in Triton's interpreter on the CPU, one program after another in Python. "
      + "Use it to check correctness; run on a GPU to measure speed and bandwidth."),
    h("div", { class: "metrics" },
      metric("Kernel, interpreter wall-clock", formatMs(t.kernel_ms.median), spread(t.kernel_ms)),
      t.reference_ms ? metric("PyTorch reference (CPU)", formatMs(t.reference_ms.median), spread(t.reference_ms)) : null,
      t.bytes ? metric("Memory traffic", formatBytes(t.bytes), BYTES_SOURCE[t.bytes_source] || t.bytes_source) : null,
      t.flops ? metric("Floating-point operations", formatScaled(t.flops, "FLOP"), "from options.flops") : null),
    autotuneCard(t.autotune),
    notesList(t.notes),
  ];
}

function emptyState(text) {
  return h("div", { class: "empty-state" }, text);
}

// `content` is built after the old roofline is cleared: building it may queue a new one.
function show(container, content) {
  clearRoofline(container);
  replaceChildren(container, content());
  drawRoofline();
}

function render(result) {
  const charts = (result.benchmarks || []).map(chartCard);
  return charts.length ? h("div", {}, timingsOf(result), charts) : timingsOf(result);
}

function timingsOf(result) {
  const t = result.timings;
  if (!t) {
    const why = result.status === "error" ? "No timings: the run stopped with an error."
      : "No timings for this run: tick bench in the Options row to time the kernel.";
    return emptyState(why);
  }
  const interpreted = t.interpreter || (result.device && result.device.kind === "interpreter");
  return interpreted ? interpreterTimings(t) : gpuTimings(t);
}

export function initTimings(container) {
  if (!container) return;
  const waiting = () => show(container, () => emptyState("Run the kernel to time it against its PyTorch reference."));
  waiting();
  on("spec-loaded", waiting);
  // Until its part arrives, a run that times its kernel says so (the verdict and the diagram come first).
  on("run-started", ({ spec }) => {
    if (spec?.options?.bench !== false) show(container, () => emptyState("measuring…"));
  });
  on("run-partial", ({ part, result }) => { if (part === "timings") show(container, () => render(result)); });
  on("run-result", ({ result }) => show(container, () => render(result)));
  on("tab-shown", ({ tab }) => {
    tabVisible = tab === "timings";
    drawRoofline();
  });
}
