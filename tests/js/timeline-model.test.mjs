// static/js/run/timeline-model.js: the timeline's layout and words, from a recorded part.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { blockPid, laneGeometry, laneSlots, lineColour, overheadWords, slowestWords, ticks, warpLayout }
  from "../../static/js/run/timeline-model.js";
import { formatNs } from "../../static/js/shared/format.js";

const recorded = JSON.parse(readFileSync(new URL("../data/timeline/layer_norm.json", import.meta.url))).timeline;

test("programs resident on one SM at once get a row each, and never share one while they overlap", () => {
  const { slotOf, slots } = laneSlots(recorded.bars);
  assert.equal(slots, 2);  // 264 programs on 132 SMs, two at once on each
  const rows = new Map();
  for (const [block, sm, start, end] of recorded.bars) {
    const key = `${sm}/${slotOf.get(block)}`;
    for (const [otherStart, otherEnd] of rows.get(key) || []) assert.ok(end <= otherStart || start >= otherEnd);
    rows.set(key, [...(rows.get(key) || []), [start, end]]);
  }
  assert.deepEqual(laneSlots([[0, 0, 0, 10], [1, 0, 10, 20], [2, 1, 0, 5]]).slots, 1);  // one after another: one row
  const crowded = laneSlots(Array.from({ length: 20 }, (_, i) => [i, 0, 0, 100]), 8);
  assert.equal(crowded.slots, 8);  // past the most rows, programs share them
  assert.deepEqual(laneGeometry(132, 2), { unit: 2, lane: 4, slots: 2 });
});

test("a program's warps laid out over its own span, each span's cycles kept", () => {
  const program = recorded.programs[0];
  const layout = warpLayout(program);
  assert.equal(layout.warps.length, recorded.num_warps);
  const xs = layout.warps.flat().flatMap((s) => [s.x0, s.x1]);
  assert.equal(Math.min(...xs), 0);
  assert.equal(Math.max(...xs), 1);
  assert.deepEqual(layout.warps[0].map((s) => s.region), program.warps[0].map((s) => s[0]));
  assert.equal(layout.warps[0][1].cycles, program.warps[0][1][2] - program.warps[0][1][1]);
});

test("words: the overhead always, its sign explained, and the slowest program's worst region", () => {
  assert.match(overheadWords(recorded), /^Instrumented launch 3\.81 µs .* 7\.01 µs uninstrumented .*: −46%\. CUDA events/);
  assert.match(overheadWords({ ...recorded, kernel_ns: null, overhead: null }), /not timed \(tick bench\)/);
  assert.match(overheadWords({ ...recorded, total_ns: 1688000, kernel_ns: 1680400, overhead: 0.0045 }), /\+0%\.$/);
  const words = slowestWords(recorded);
  assert.match(words, /^Slowest program \(248, 0, 0\) on SM 2: 3\.81 µs/);
  assert.match(words, /region “scale and store”/);
  assert.deepEqual(blockPid(7, [3, 2, 2]), [1, 0, 1]);
});

test("ticks on 1, 2, 5 steps; a line keeps its colour; ns as people read them", () => {
  assert.deepEqual(ticks(3808), [0, 1000, 2000, 3000]);
  assert.deepEqual(ticks(1688000, 5), [0, 500000, 1000000, 1500000]);
  assert.equal(lineColour(42), lineColour(42));
  assert.notEqual(lineColour(42), lineColour(43));
  assert.equal(formatNs(55.4), "55 ns");
  assert.equal(formatNs(1840), "1.84 µs");
  assert.equal(formatNs(null), "–");
});
