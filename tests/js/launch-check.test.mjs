// static/js/editor/launch-check.js: what the launch form says is wrong before a run, each on its field.
import { test } from "node:test";
import assert from "node:assert/strict";
import { initDtypeProblem, launchProblems, namesIn, sourceNames } from "../../static/js/editor/launch-check.js";
import { serverSpec } from "./server-spec.mjs";

const NAMES = serverSpec().expression_names;   // what the server lets an expression read

const PARAMS = [{ name: "x_ptr" }, { name: "out_ptr" }, { name: "n" }, { name: "BLOCK", constexpr: true }];
const input = (name, fields = {}) => ({ name, init: "randn", dtype: "float32", mode: "init", reference: "", ...fields });

test("the names an expression reads", () => {
  assert.deepEqual(namesIn("triton.cdiv(n, meta['BLOCK'])"), ["triton", "n", "meta"]);
  assert.deepEqual(namesIn("x.numel()"), ["x"]);
  assert.deepEqual(namesIn("torch.full((4,), 1e-5, dtype=torch.float32)"), ["torch", "torch"]);
});

test("the names a source defines", () => {
  const names = sourceNames("import math\nfrom torch import nn as network\nSCALE = 2\ndef f():\n    pass\n");
  assert.deepEqual([...names].sort(), ["SCALE", "f", "math", "network"]);
});

test("a good launch has no problem", () => {
  const launch = { args: { x_ptr: "x", out_ptr: "out", n: "x.numel()", BLOCK: "1024" },
                   grid: "(triton.cdiv(n, meta['BLOCK']),)", inputs: [input("x"), input("out", { reference: "x * 2" })] };
  assert.deepEqual(launchProblems(launch, PARAMS, "", NAMES), []);
});

test("every problem at once, each on its field", () => {
  const launch = { args: { x_ptr: "y", out_ptr: "out", n: "", BLOCK: "1024" }, grid: "(cdiv(m, 4),)",
                   inputs: [input("out", { dtype: "int32" }), input("out", { reference: "z + 1" })] };
  const fields = launchProblems(launch, PARAMS, "", NAMES).map((p) => p.field);
  assert.deepEqual(fields, ["args.x_ptr", "args.n", "grid", "inputs.out", "inputs.out", "reference.out"]);
});

test("a dtype its init cannot make", () => {
  assert.match(initDtypeProblem("randn", "int32"), /randn draws floating-point numbers, not int32/);
  assert.match(initDtypeProblem("rand", "float8_e4m3fn"), /float8_e4m3fn/);
  assert.equal(initDtypeProblem("zeros", "float8_e4m3fn"), null);
  assert.equal(initDtypeProblem("randint", "int8"), null);
});

test("an expression may read the modules, builtins and keywords the server gives it, and no more", () => {
  const launch = (grid) => ({ args: { x_ptr: "x", out_ptr: "out", n: "x.numel()", BLOCK: "1024" }, grid,
                              inputs: [input("x"), input("out")] });
  for (const grid of ["(triton.cdiv(n, meta['BLOCK']),)", "(math.ceil(n / 1024),)", "lambda meta: (divmod(n, 8)[0] if n else 1,)",
                      "(hex(n).count('f') + 1,)", "(tl.cdiv(n, 4),)"]) {
    assert.deepEqual(launchProblems(launch(grid), PARAMS, "", NAMES), [], grid);
  }
  assert.deepEqual(launchProblems(launch("(numpy.ceil(n),)"), PARAMS, "", NAMES).map((p) => p.field), ["grid"]);
});
