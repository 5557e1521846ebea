// What the Timings tab's timeline shows, from a result's `timeline` part (docs/result.md), as plain
// data and words: no DOM here (timeline.js draws it).
import { formatCount, formatNs, formatNumber, formatPercent, formatPid } from "../shared/format.js";

// A region's colour from its first source line: the same line keeps its colour from run to run.
export function lineColour(line) {
  const hue = Math.round((line * 137.508) % 360);
  return `hsl(${hue}, 62%, 58%)`;
}

// A program's bar colour from its launch order (blue first, then green, yellow, red): waves show
// as bands of one colour across the SMs.
export function orderColour(block, total) {
  const hue = 220 - Math.round(220 * (total > 1 ? block / (total - 1) : 0));
  return `hsl(${hue}, 55%, 52%)`;
}

export function regionLines([first, last]) {
  return first === last ? `line ${first}` : `lines ${first}–${last}`;
}

// The programs that have per-warp detail, slowest first as the one to show first.
export function detailedPrograms(timeline) {
  const span = (p) => p.end_ns - p.start_ns;
  return [...timeline.programs].sort((a, b) => span(b) - span(a));
}

// Nice tick steps over [0, total] ns: about `count` of them, on 1, 2, 5 × 10^k.
export function ticks(total, count = 6) {
  if (!(total > 0)) return [0];
  const raw = total / count;
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw);
  const found = [];
  for (let t = 0; t <= total + 1e-9; t += step) found.push(t);
  return found;
}

// The instrumented launch against the uninstrumented one, in words (always shown).
export function overheadWords(t) {
  const instrumented = `Instrumented launch ${formatNs(t.total_ns)} (its first program's start to its last program's end)`;
  if (t.kernel_ns === null || t.overhead === null) {
    return `${instrumented}; the kernel was not timed (tick bench), so no overhead can be given.`;
  }
  const sign = t.overhead >= 0 ? "+" : "−";
  const words = `${instrumented} against ${formatNs(t.kernel_ns)} uninstrumented (median of the timed launches): `
    + `${sign}${formatPercent(Math.abs(t.overhead))}.`;
  return t.overhead < 0
    ? `${words} CUDA events also time the launch's start and end on the GPU (a few µs), which the record does not.`
    : words;
}

export function resolutionWords(t) {
  const clock = t.clock.source === "measured" ? "measured over this launch" : "the device's nominal clock";
  return `Regions are timed to one cycle of their SM (${formatNumber(t.resolution.ns_per_cycle)} ns at `
    + `${formatNumber(t.clock.ghz)} GHz, ${clock}); program starts to the globaltimer's ${t.resolution.globaltimer_ns} ns.`;
}

// The slowest program and why: the region where it lost most against the median program.
export function slowestWords(t) {
  const { slowest, median } = t.summary;
  const pid = (block) => formatPid(blockPid(block, t.grid));
  const extra = median.ns ? slowest.ns / median.ns - 1 : 0;
  let words = `Slowest program ${pid(slowest.block)} on SM ${slowest.sm}: ${formatNs(slowest.ns)}, `
    + `${formatPercent(extra)} over the median program ${pid(median.block)} (${formatNs(median.ns)}).`;
  const gaps = slowest.regions_ns.map((ns, i) => [ns - (median.regions_ns[i] ?? 0), i]).sort((a, b) => b[0] - a[0]);
  if (gaps.length && gaps[0][0] > 0) {
    const [gap, i] = gaps[0];
    words += ` Its region “${t.regions[i].name}” took ${formatNs(slowest.regions_ns[i])} against `
      + `${formatNs(median.regions_ns[i])}: ${formatNs(gap)} more, the largest difference.`;
  }
  return words;
}

export function imbalanceWords(t) {
  const s = t.summary;
  return `${formatCount(s.sms_used)} of ${formatCount(t.sm_count)} SMs ran programs; the busiest was busy `
    + `${formatNs(s.sm_busy_ns.max)}, the mean ${formatNs(s.sm_busy_ns.mean)}, the least ${formatNs(s.sm_busy_ns.min)} `
    + `(imbalance ${formatPercent(s.imbalance)}).`;
}

export function blockPid(block, grid) {
  return [block % grid[0], Math.floor(block / grid[0]) % grid[1], Math.floor(block / (grid[0] * grid[1]))];
}

// A warp's spans laid out: [{region, x0, x1, startNs, endNs, cycles}], x in [0, 1] of the program's span.
export function warpLayout(program) {
  const spans = program.warps.flat();
  const from = Math.min(...spans.map((s) => s[3]));
  const to = Math.max(...spans.map((s) => s[4]));
  const width = Math.max(1, to - from);
  return {
    from, to,
    warps: program.warps.map((warp) => warp.map(([region, start, end, startNs, endNs]) => ({
      region, x0: (startNs - from) / width, x1: (endNs - from) / width, startNs, endNs, cycles: end - start,
    }))),
  };
}

// Programs resident on one SM at once (an SM runs several when registers and shared memory allow)
// each get a slot of its lane: {slotOf: Map(block → slot), slots}, the first free slot at each
// program's start; at most `most` slots (past them, programs share a slot and overlap).
export function laneSlots(bars, most = 8) {
  const free = new Map();  // sm → [end ns of each slot's last program]
  const slotOf = new Map();
  let slots = 1;
  for (const [block, sm, start, end] of [...bars].sort((a, b) => a[2] - b[2])) {
    const ends = free.get(sm) || [];
    let slot = ends.findIndex((busyUntil) => busyUntil <= start);
    if (slot < 0) slot = ends.length < most ? ends.length : ends.indexOf(Math.min(...ends));
    ends[slot] = end;
    free.set(sm, ends);
    slotOf.set(block, slot);
    slots = Math.max(slots, slot + 1);
  }
  return { slotOf, slots };
}

// The lanes' geometry: px per slot, per SM lane, and the slots, for `smCount` lanes.
export function laneGeometry(smCount, slots) {
  const unit = Math.max(1, Math.min(12, Math.floor(640 / (smCount * slots))));
  return { unit, lane: unit * slots, slots };
}
