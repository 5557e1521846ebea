// Numbers, sizes, times and program ids, written the same way in every pane.

const MISSING = "–";

function missing(value) {
  return value === null || value === undefined;
}

// 1,048,576 (and "–" where there is no number).
export function formatCount(n) {
  return missing(n) ? MISSING : n.toLocaleString("en-US");
}

// An integer-valued quantity as a whole number (an offset of 98,431, never 9.84e+4); a mean of
// such values to one decimal: 98,431.5.
export function formatWhole(value) {
  return missing(value) || Number.isInteger(value) ? formatCount(value) : value.toLocaleString("en-US", { maximumFractionDigits: 1 });
}

// A share of a whole as a percentage: 0.424 → "42%".
export function formatPercent(share) {
  return `${(100 * share).toFixed(0)}%`;
}

// How many times one quantity is another: a speedup of 1.37.
export function formatRatio(x) {
  return x.toFixed(2);
}

// An estimated duration in seconds: 3.4 below ten, whole seconds above.
export function formatSeconds(seconds) {
  return seconds < 10 ? seconds.toFixed(1) : String(Math.round(seconds));
}

// A moment of this session (a Date) as the reader's clock shows it: 10:04:31.
export function formatClock(date) {
  return date.toLocaleTimeString();
}

// "3 programs", "1 element": a count and its noun.
export function plural(n, noun, nouns = `${noun}s`) {
  return `${formatCount(n)} ${n === 1 ? noun : nouns}`;
}

// 1st, 2nd, 3rd, 11th, 1,002nd.
export function formatOrdinal(n) {
  const tens = n % 100;
  const suffix = tens >= 11 && tens <= 13 ? "th" : { 1: "st", 2: "nd", 3: "rd" }[n % 10] ?? "th";
  return `${formatCount(n)}${suffix}`;
}

// A grid or a program id as Python writes a tuple: "(2, 0, 0)".
export function formatTuple(values) {
  return `(${values.join(", ")})`;
}

export function formatPid(pid) {
  return Array.isArray(pid) ? formatTuple(pid) : String(pid);
}

// An error or a tolerance: three significant digits, exponent notation when very small or large.
export function formatNumber(value) {
  if (missing(value)) return MISSING;
  if (!Number.isFinite(value)) return String(value);
  if (value === 0) return "0";
  return Math.abs(value) < 1e-3 || Math.abs(value) >= 1e4 ? value.toExponential(2) : value.toPrecision(3);
}

// A measured time: 14.9 µs, 231 µs, 1.23 ms, 2.40 s.
export function formatMs(ms) {
  if (missing(ms) || !Number.isFinite(ms)) return MISSING;
  if (ms < 1) return `${(ms * 1000).toPrecision(3)} µs`;
  if (ms < 1000) return `${ms.toPrecision(3)} ms`;
  return `${(ms / 1000).toFixed(2)} s`;
}

// A duration or an instant in ns (a timeline's): 55 ns, 1.84 µs, 1.69 ms.
export function formatNs(ns) {
  if (missing(ns) || !Number.isFinite(ns)) return MISSING;
  return Math.abs(ns) < 1000 ? `${Math.round(ns)} ns` : formatMs(ns / 1e6);
}

// How long a run took, as a person waits for it: 840 ms, 3.1 s.
export function formatElapsed(ms) {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}

// 1.18 MB, 137 GFLOP: decimal units, three digits.
export function formatScaled(value, unit, prefixes = ["", "K", "M", "G", "T"]) {
  let scaled = value, step = 0;
  while (scaled >= 1000 && step < prefixes.length - 1) { scaled /= 1000; step += 1; }
  return `${step ? scaled.toPrecision(3) : scaled} ${prefixes[step]}${unit}`;
}

export function formatBytes(bytes) {
  return formatScaled(bytes, "B");
}

// A rate: 2,950 GB/s, 0.532 TFLOP/s. `space` goes between number and unit (a no-break space keeps them together).
export function formatRate(x, unit, space = " ") {
  return `${x >= 100 ? formatCount(Math.round(x)) : x.toPrecision(3)}${space}${unit}`;
}

// How a run that failed ended, as its title says it: "compile error", and for the phases that are
// no error of the kernel's, what happened: "stopped" (Stop), "timed out", "over a limit".
export function phaseWords(phase) {
  return { stopped: "stopped", timeout: "timed out", limit: "over a limit" }[phase] ?? `${phase || "run"} error`;
}

// How long ago a moment (ms since the epoch) was, in words: "just now", "5 minutes ago", "3 days ago".
export function timeAgo(then, now = Date.now()) {
  const s = Math.max(0, Math.round((now - then) / 1000));
  if (s < 45) return "just now";
  for (const [unit, size] of [["day", 86400], ["hour", 3600], ["minute", 60]]) {
    if (s >= size) return `${plural(Math.round(s / size), unit)} ago`;
  }
  return `${plural(s, "second")} ago`;
}

// A moment given in seconds since the epoch (the server's times), in the reader's own words for a date and time.
export function formatMoment(seconds) {
  return new Date(seconds * 1000).toLocaleString();
}
