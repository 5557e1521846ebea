// static/js/run/trace-model.js: a trace in, programs, regions and coverage verdicts out (the diagram's model).
import { test } from "node:test";
import assert from "node:assert/strict";
import { coverageVerdicts, mergeRuns, regionsOf, runsLength, traceModel, writeCounts } from "../../static/js/run/trace-model.js";
import { cellRuns } from "../../static/js/run/trace-cells.js";

// out = x + y, n = 10, BLOCK 4: three programs, the last with two lanes masked off.
function vectorAdd(n = 10, block = 4) {
  const programs = [];
  for (let pid = 0; pid * block < n; pid++) {
    const start = pid * block;
    const offsets = [[start, Math.min(block, n - start)]];
    const masked = start + block > n ? [[n, start + block - n]] : [];
    programs.push({ pid: [pid, 0, 0], accesses: ["x", "y", "out"].map((tensor, i) => (
      { op: i < 2 ? "load" : "store", tensor, line: 14 + i, offsets, masked })) });
  }
  const tensor = (role) => ({ shape: [n], dtype: "float32", role });
  return { grid: [programs.length, 1, 1], programs_total: programs.length, programs_traced: programs.length,
           sampled: false, sample: null, tensors: { x: tensor("input"), y: tensor("input"), out: tensor("output") },
           programs, coverage: {}, tracer: "interpreter", bytes_touched: null };
}

test("runs merge, count and come from flags", () => {
  assert.deepEqual(mergeRuns([[4, 2], [0, 4], [10, 0], [5, 3]]), [[0, 8]]);
  assert.equal(runsLength([[0, 4], [8, 2]]), 6);
  assert.deepEqual(cellRuns([0, 1, 1, 0, 1]), [[1, 2], [4, 1]]);
});

test("writes counted once per program and element", () => {
  assert.deepEqual(writeCounts(8, [[[0, 4]], [[2, 4]]], []), [[0, 2, 1, 0], [2, 2, 2, 0], [4, 2, 1, 0], [6, 2, 0, 0]]);
});

test("a vector add's programs, the last storing two elements with two lanes masked", () => {
  const model = traceModel(vectorAdd());
  assert.deepEqual(model.grid, [3, 1, 1]);
  assert.deepEqual(model.programs.map((p) => p.pid), [[0, 0, 0], [1, 0, 0], [2, 0, 0]]);
  const store = regionsOf(model.programs[2]).find((r) => r.kind === "store" && r.tensor === "out");
  assert.deepEqual(store.offsets, [[8, 2]]);
  assert.deepEqual(store.masked, [[10, 2]]);
});

test("coverage: every element written once, or the tail left unwritten", () => {
  assert.equal(coverageVerdicts(vectorAdd()).get("out").ok, true);
  const short = vectorAdd();
  short.programs.pop();
  short.programs_total = short.programs_traced = 2;
  short.grid = [2, 1, 1];
  const out = coverageVerdicts(short).get("out");
  assert.equal(out.ok, false);
  assert.equal(out.unwritten, 2);
});
