// static/js/shared/format.js: numbers, times and program ids as every pane writes them.
import { test } from "node:test";
import assert from "node:assert/strict";
import { formatBytes, formatCount, formatMs, formatNumber, formatOrdinal, formatPercent, formatPid, formatRate, formatRatio,
  formatSeconds, formatWhole, plural, timeAgo }
  from "../../static/js/shared/format.js";

test("counts and nouns", () => {
  assert.equal(formatCount(1048576), "1,048,576");
  assert.equal(formatCount(null), "–");
  assert.equal(plural(1, "program"), "1 program");
  assert.equal(plural(3, "program"), "3 programs");
  assert.deepEqual([1, 2, 3, 4, 11, 12, 13, 21, 102, 1002].map(formatOrdinal),
    ["1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "102nd", "1,002nd"]);
});

test("program ids as Python tuples", () => {
  assert.equal(formatPid([2, 0, 0]), "(2, 0, 0)");
  assert.equal(formatPid(7), "7");
});

test("numbers, times, sizes and rates", () => {
  assert.equal(formatNumber(0), "0");
  assert.equal(formatNumber(0.5), "0.500");
  assert.equal(formatNumber(1e-5), "1.00e-5");
  assert.equal(formatNumber(Infinity), "Infinity");
  assert.equal(formatMs(0.0149), "14.9 µs");
  assert.equal(formatMs(1.234), "1.23 ms");
  assert.equal(formatMs(2400), "2.40 s");
  assert.equal(formatMs(NaN), "–");
  assert.equal(formatBytes(1180000), "1.18 MB");
  assert.equal(formatBytes(512), "512 B");
  assert.equal(formatRate(2950.4, "GB/s"), "2,950 GB/s");
  assert.equal(formatRate(0.5321, "TFLOP/s"), "0.532 TFLOP/s");
});

test("how long ago", () => {
  const now = 1_000_000_000;
  assert.equal(timeAgo(now - 10_000, now), "just now");
  assert.equal(timeAgo(now - 5 * 60_000, now), "5 minutes ago");
  assert.equal(timeAgo(now - 3 * 86_400_000, now), "3 days ago");
});

test("whole numbers, shares, ratios and estimated seconds", () => {
  assert.equal(formatWhole(98431), "98,431");
  assert.equal(formatWhole(98431.46), "98,431.5");
  assert.equal(formatWhole(null), "–");
  assert.equal(formatPercent(0.424), "42%");
  assert.equal(formatRatio(1.372), "1.37");
  assert.equal(formatSeconds(3.42), "3.4");
  assert.equal(formatSeconds(42.6), "43");
});
