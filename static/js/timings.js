// The Timings tab: kernel vs. the PyTorch reference, compile time, and memory bandwidth against
// the GPU's peak. Interpreter runs get their times with a warning and no bandwidth claims.
import { on } from "./hub.js";
import { h, replaceChildren } from "./dom.js";

export function formatMs(ms) {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return "–";
  if (ms < 1) return `${(ms * 1000).toPrecision(3)} µs`;
  if (ms < 1000) return `${ms.toPrecision(3)} ms`;
  return `${(ms / 1000).toFixed(2)} s`;
}

function formatBytes(bytes) {
  const units = ["B", "KB", "MB", "GB"];
  let value = bytes, unit = 0;
  while (value >= 1000 && unit < units.length - 1) { value /= 1000; unit += 1; }
  return `${unit ? value.toPrecision(3) : value} ${units[unit]}`;
}

function metric(label, value, detail, cls = "") {
  return h("div", { class: `metric ${cls}` }, h("div", { class: "label" }, label),
    h("div", { class: "value" }, value), detail ? h("div", { class: "detail" }, detail) : null);
}

function spread(stats) {
  return stats && stats.n > 1 ? `p20 ${formatMs(stats.p20)} · p80 ${formatMs(stats.p80)} · n = ${stats.n}` : stats ? "one run" : null;
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

function bandwidthCard(t) {
  if (!t.gbps) return null;
  const share = t.peak_gbps ? t.gbps / t.peak_gbps : null;
  const source = t.bytes_source === "trace"
    ? "unique elements loaded and stored, counted from the trace"
    : "the sizes of all input tensors (no trace)";
  return h("div", { class: "card bandwidth" },
    h("div", { class: "card-head" }, "Memory bandwidth",
      h("span", { class: "muted" }, share !== null ? `${(100 * share).toFixed(0)}% of the GPU's peak` : "")),
    h("div", { class: "card-body" },
      h("div", { class: "bar-row" },
        h("span", { class: "bar-label" }, "achieved"),
        h("div", { class: "bar-track", title: share !== null ? `${t.gbps.toFixed(0)} of ${t.peak_gbps.toFixed(0)} GB/s` : "" },
          h("div", { class: "bar-fill", style: `width: ${Math.min(100, 100 * (share ?? 1))}%` })),
        h("span", { class: "bar-value" }, `${t.gbps.toFixed(0)} GB/s`)),
      h("p", { class: "caption" }, `${formatBytes(t.bytes)} moved (${source}) in ${formatMs(t.kernel_ms.median)}`,
        t.peak_gbps ? ` · peak ${t.peak_gbps.toFixed(0)} GB/s` : "")));
}

function gpuTimings(t) {
  const speedup = t.speedup;
  return [
    h("div", { class: "metrics" },
      metric("Kernel (median)", formatMs(t.kernel_ms.median), spread(t.kernel_ms)),
      t.reference_ms ? metric("PyTorch reference", formatMs(t.reference_ms.median), spread(t.reference_ms)) : null,
      speedup ? metric("Speedup", h("span", {}, speedup.toFixed(2), h("small", {}, "×")),
        speedup >= 1 ? "faster than the reference" : "slower than the reference", speedup >= 1 ? "good" : "slow") : null,
      t.compile_ms !== null && t.compile_ms !== undefined ? metric("First launch", formatMs(t.compile_ms), "includes compiling the kernel") : null,
      t.tflops ? metric("Compute", h("span", {}, t.tflops.toPrecision(3), h("small", {}, "TFLOP/s"))) : null),
    comparisonBars(t.kernel_ms, t.reference_ms),
    bandwidthCard(t),
  ];
}

function interpreterTimings(t) {
  return [
    h("div", { class: "notice" }, h("b", {}, "Interpreter time — not GPU performance. "),
      "The kernel ran in Triton's interpreter on the CPU, one program after another in Python. "
      + "Use it to check correctness; run on a GPU to measure speed."),
    h("div", { class: "metrics" },
      metric("Kernel, interpreted", formatMs(t.kernel_ms.median), spread(t.kernel_ms)),
      t.reference_ms ? metric("PyTorch reference (CPU)", formatMs(t.reference_ms.median), spread(t.reference_ms)) : null),
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
