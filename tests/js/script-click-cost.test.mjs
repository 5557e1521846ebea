// static/js/run/script.js: what a click on a script's launch costs, said before it costs it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { clickCost } from "../../static/js/run/script.js";

const launch = (index, ms) => ({ index, ms });
const listing = (replay) => ({ program_ms: 5400, replay });

test("a launch whose run was kept is shown as the program ran it", () => {
  const cost = clickCost(listing({ kept: [0, 1], as_ran: [1], why: null }), launch(1, 2900), false);
  assert.equal(cost.replay, true);
  assert.equal(cost.words, "shows it as the program ran it (its trace and time, kept from that run): neither the "
                           + "program nor the launch runs again");
});

test("a launch whose inputs alone were kept is replayed, in about its time in the program", () => {
  const cost = clickCost(listing({ kept: [0, 1], as_ran: [1], why: null }), launch(0, 12.5), false);
  assert.equal(cost.short, "replay");
  assert.equal(cost.words, "replays this launch alone (it took 12.5 ms in the program), from the inputs it received: "
                           + "the program does not run again");
  // a listing from before runs were kept says nothing of them; a click without a trace launches it
  assert.equal(clickCost(listing({ kept: [0], why: null }), launch(0, 12.5), false).short, "replay");
  assert.match(clickCost(listing({ kept: [1], as_ran: [1], why: null }), launch(1, 2900), false, false).words,
    /^replays this launch alone \(it took 2\.90 s in the program\)/);
});

test("a launch not kept, or a program edited since, runs the whole program again", () => {
  const kept = listing({ kept: [1], as_ran: [1], why: "its arguments share memory, which a replay would not" });
  assert.deepEqual(clickCost(kept, launch(0, 3), false),
    { replay: false, short: "re-run · 5.4 s",
      words: "re-runs the whole program (took 5.4 s): its arguments share memory, which a replay would not" });
  assert.equal(clickCost(kept, launch(1, 3), true).words,
    "re-runs the whole program (took 5.4 s): the program changed since its launches were listed");
});
