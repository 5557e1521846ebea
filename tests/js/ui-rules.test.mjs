// static/js/shared/ui-rules.js with the server's own schema (app/web/share.py schema, as GET /api/spec serves
// it): the page keeps no copy of the rules of a program id, the IR stages or the row width.
import { test } from "node:test";
import assert from "node:assert/strict";
import { uiRules } from "../../static/js/shared/ui-rules.js";
import { serverSpec } from "./server-spec.mjs";

const served = serverSpec();
const rules = uiRules(served.ui);

test("the IR stages and the row width are the server's", () => {
  assert.deepEqual(rules.irStages, ["ttir", "ttgir", "llir", "ptx", "sass"]);
  assert.equal(rules.validIrStage("ptx"), "ptx");
  assert.equal(rules.validIrStage("asm"), null);
  assert.equal(rules.maxRowWidth, served.ui.row_width.max);
  assert.equal(rules.validRowWidth(rules.maxRowWidth), rules.maxRowWidth);
  assert.equal(rules.validRowWidth(rules.maxRowWidth + 1), null);
  assert.equal(rules.validRowWidth(0), null);
  assert.equal(rules.validRowWidth(2.5), null);
});

test("a program id is 1 to 3 non-negative integers within a grid's extent", () => {
  assert.deepEqual(rules.validPid([2]), [2]);
  assert.deepEqual(rules.validPid([2, 0, 1]), [2, 0, 1]);
  for (const bad of [[], [1, 2, 3, 4], [-1], [1.5], ["1"], [2 ** 31], null, 3]) assert.equal(rules.validPid(bad), null, String(bad));
  assert.deepEqual(served.ui.pid, served.program_id);   // one rule for a link's program and a spec's trace_pid
});
