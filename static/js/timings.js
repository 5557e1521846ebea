// The Timings tab: kernel vs. the PyTorch reference, compile time, memory bandwidth against the
// measured copy bandwidth, TFLOP/s against the datasheet peak, the autotuner's configs and notes.
// Interpreter runs get their wall-clock times and byte counts, labelled, with no rate claims.
import { on } from "./hub.js";
import { h, replaceChildren, notesList } from "./dom.js";

export function formatMs(ms) {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return "–";
  if (ms < 1) return `${(ms * 1000).toPrecision(3)} µs`;
  if (ms < 1000) return `${ms.toPrecision(3)} ms`;
  return `${(ms / 1000).toFixed(2)} s`;
}

// 1.18 MB, 137 GFLOP: decimal units, three digits.
function formatScaled(value, unit, prefixes = ["", "K", "M", "G", "T"]) {
  let scaled = value, step = 0;
  while (scaled >= 1000 && step < prefixes.length - 1) { scaled /= 1000; step += 1; }
  return `${step ? scaled.toPrecision(3) : scaled} ${prefixes[step]}${unit}`;
}

function formatBytes(bytes) {
  return formatScaled(bytes, "B");
}

function metric(label, value, detail, cls = "") {
  return h("div", { class: `metric ${cls}` }, h("div", { class: "label" }, label),
    h("div", { class: "value" }, value), detail ? h("div", { class: "detail" }, detail) : null);
}

// "p20 14.9 µs · p80 15.4 µs · 100 runs": each part kept on one line, so a narrow card breaks
// between the parts, never inside one.
function spread(stats) {
  if (!stats) return null;
  const parts = stats.n > 1 ? [`p20 ${formatMs(stats.p20)}`, `p80 ${formatMs(stats.p80)}`, `${stats.n.toLocaleString("en-US")} runs`] : ["one run"];
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
  const value = (x) => `${x >= 100 ? Math.round(x).toLocaleString("en-US") : x.toPrecision(3)}\u00a0${unit}`;  // no break before the unit
  return h("div", { class: "card ceiling" },
    h("div", { class: "card-head" }, title,
      h("span", { class: "muted" }, share !== null ? `${(100 * share).toFixed(0)}% of the ${peakName}` : "")),
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
      speedup ? metric("Speedup", h("span", {}, speedup.toFixed(2), h("small", {}, "×")),
        speedup >= 1 ? "faster than the reference" : "slower than the reference", speedup >= 1 ? "good" : "slow") : null,
      t.compile_ms !== null && t.compile_ms !== undefined ? metric("First launch", formatMs(t.compile_ms), "includes compiling the kernel") : null),
    comparisonBars(t.kernel_ms, t.reference_ms),
    bandwidthCard(t),
    computeCard(t),
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

function render(container, result) {
  const t = result.timings;
  if (!t) {
    const why = result.status === "error" ? "No timings: the run stopped with an error."
      : "No timings for this run: tick bench in the Options row to time the kernel.";
    replaceChildren(container, emptyState(why));
    return;
  }
  const interpreted = t.interpreter || (result.device && result.device.kind === "interpreter");
  replaceChildren(container, interpreted ? interpreterTimings(t) : gpuTimings(t));
}

export function initTimings(container) {
  if (!container) return;
  const waiting = () => replaceChildren(container, emptyState("Run the kernel to time it against its PyTorch reference."));
  waiting();
  on("spec-loaded", waiting);
  on("run-result", ({ result }) => render(container, result));
}
