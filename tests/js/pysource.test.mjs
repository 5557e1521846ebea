// static/js/editor/pysource.js: the page's reading of a kernel's source and of the inputs' torch expressions.
import { test } from "node:test";
import assert from "node:assert/strict";
import { findJitFunctions, indentationOf, inputExpression, parseInputExpression, parseShape, splitTopLevel }
  from "../../static/js/editor/pysource.js";

test("splits at top-level commas only", () => {
  assert.deepEqual(splitTopLevel("a, f(b, c), 'd,e', [1, 2],"), ["a", "f(b, c)", "'d,e'", "[1, 2]"]);
  assert.deepEqual(splitTopLevel(""), []);
});

test("finds the jitted functions and their parameters", () => {
  const source = [
    "import triton",
    "import triton.language as tl",
    "",
    "@triton.autotune(configs=[",
    "    triton.Config({'BLOCK': 128}),",
    "], key=['n'])",
    "@triton.jit",
    "def add_kernel(x_ptr,  # the first input",
    "               out_ptr, n, BLOCK: tl.constexpr = 64):",
    "    pass",
    "",
    "def helper(a):",
    "    return a",
  ].join("\n");
  const [kernel, ...others] = findJitFunctions(source);
  assert.equal(others.length, 0);
  assert.equal(kernel.name, "add_kernel");
  assert.equal(kernel.line, 8);
  assert.deepEqual(kernel.params.map((p) => p.name), ["x_ptr", "out_ptr", "n", "BLOCK"]);
  const block = kernel.params[3];
  assert.equal(block.constexpr, true);
  assert.equal(block.default, "64");
  assert.equal(block.tuned, "autotune");
  assert.equal(kernel.params[0].tuned, null);
});

test("shapes in the forms a person types", () => {
  assert.deepEqual(parseShape("64, 128"), ["64", "128"]);
  assert.deepEqual(parseShape("(64, 128)"), ["64", "128"]);
  assert.deepEqual(parseShape("64x128"), ["64", "128"]);
  assert.deepEqual(parseShape("N * 2"), ["N * 2"]);
  assert.equal(parseShape("f(x)"), null);
});

test("an input expression reads back into the table and is written again the same", () => {
  for (const expression of ["torch.randn(98432, dtype=torch.float32)", "torch.randint(0, 16, (4, 8), dtype=torch.int32)",
                            "torch.arange(3 * 4, dtype=torch.int64).reshape(3, 4)", "torch.zeros(64, 128, dtype=torch.float16)"]) {
    const parsed = parseInputExpression(expression);
    assert.ok(parsed, expression);
    assert.equal(inputExpression(parsed), expression);
  }
  assert.deepEqual(parseInputExpression("torch.randn(10)"), { init: "randn", dtype: "float32", dims: ["10"] });
  assert.equal(parseInputExpression("torch.randn(10, dtype=torch.complex64)"), null);
  assert.equal(parseInputExpression("x * 2"), null);
});

test("reads the indentation a source's blocks use", () => {
  const kernel = (unit) => ["@triton.jit", "def k(x_ptr,  # the input", "      n):", `${unit}pid = tl.program_id(0)`,
                            `${unit}for i in range(2):  # twice`, `${unit}${unit}pid += 1`].join("\n");
  assert.equal(indentationOf(kernel("    ")), "    ");
  assert.equal(indentationOf(kernel("  ")), "  ");
  assert.equal(indentationOf(kernel("\t")), "\t");
  assert.equal(indentationOf('"""A docstring:\nTry: this."""\nimport triton\n'), "    ");   // nothing indented: Python's four
  assert.equal(indentationOf("def f(a,\n      b):\n   return a\n"), "   ");   // the continuation line is no block
});
