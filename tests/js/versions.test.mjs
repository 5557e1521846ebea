// static/js/run/versions.js: one run's verdict, time and IR sizes as the versions table writes them.
import { test } from "node:test";
import assert from "node:assert/strict";
import { sizeOf, timeOf, verdictOf } from "../../static/js/run/versions.js";

test("a verdict in a few words: ran, differs, or the error's own message", () => {
  assert.deepEqual(verdictOf({ status: "ok", check: { ok: true } }), { kind: "ok", words: "✓ ran, matches the reference" });
  assert.equal(verdictOf({ status: "mismatch" }).kind, "bad");
  const lacking = { status: "error", error: { message: "Triton 3.7.1 has no tl.atomic_load: …" } };
  assert.deepEqual(verdictOf(lacking), { kind: "bad", words: "✗ Triton 3.7.1 has no tl.atomic_load: …" });
  assert.equal(verdictOf({ pending: true }).kind, "pending");
  assert.equal(verdictOf(undefined).words, "—");
});

test("the interpreter's wall clock is no time to compare; a GPU's median is", () => {
  assert.match(timeOf({ device: { kind: "interpreter" }, timings: { kernel_ms: { median: 3 } } }), /^interpreter: no speed/);
  assert.equal(timeOf({ device: { kind: "gpu" }, timings: { kernel_ms: { median: 0.0123 } } }), "12.3 µs");
  assert.equal(timeOf({ device: { kind: "gpu" }, timings: null }), "—");
});

test("an IR stage's size in bytes and lines; none where the IR failed", () => {
  assert.equal(sizeOf({ ir: { ptx: "a\nb\nc" } }, "ptx"), "5 B, 3 lines");
  assert.equal(sizeOf({ ir: { error: "no", ptx: "x" } }, "ptx"), "—");
  assert.equal(sizeOf({ ir: null }, "sass"), "—");
});
