// Following a live run's media (shared/media/live.js): which states are live, what changed between two reads of
// the runs' tags, and the poll (its timer and the page's visibility passed in: no real time).
import assert from "node:assert/strict";
import { test } from "node:test";
import { POLL_MS, createPoller, isLive, mediaChanges } from "../shared/media/live.js";

test("pending and running runs are live; any other state is terminal", () => {
  assert.equal(isLive({ state: "running" }), true);
  assert.equal(isLive({ state: " Pending " }), true);
  for (const state of ["succeeded", "failed", "cancelled", "completed", "", undefined]) {
    assert.equal(isLive({ state }), false, String(state));
  }
  assert.equal(isLive(undefined), false);
});

const tag = (kind, name, lo, hi) => ({ kind, tag: name, count: hi - lo + 1, step_min: lo, step_max: hi });

test("the changes between two reads: new tags, ranges that grew, tags a run gained", () => {
  const before = new Map([["a", [tag("images", "x", 0, 10), tag("text", "t", 0, 5)]], ["b", [tag("images", "x", 0, 4)]]]);
  const after = new Map([
    ["a", [tag("images", "x", 0, 20), tag("text", "t", 0, 5), tag("histograms", "w", 3, 3)]],
    ["b", [tag("images", "x", 0, 4), tag("text", "t", 0, 1)]],
  ]);
  const { added, grown, runsChanged } = mediaChanges(before, after);
  assert.deepEqual(added, ["histograms/w"]);
  assert.deepEqual([...grown], [["images/x", { step_min: 0, step_max: 20 }]]);
  assert.deepEqual(runsChanged, ["text/t"]); // run b gained it: the card needs its panel
  const same = mediaChanges(after, new Map(after));
  assert.deepEqual([same.added, [...same.grown], same.runsChanged], [[], [], []]);
});

/** A timer whose callbacks run when the test says. */
function fakeTimer() {
  const pending = new Map();
  let next = 1;
  return {
    pending,
    schedule: (fn, ms) => { pending.set(next, { fn, ms }); return next++; },
    cancel: (handle) => pending.delete(handle),
    async fire() {
      const [[handle, { fn }]] = [...pending];
      pending.delete(handle);
      await fn();
    },
  };
}

test("the poll ticks every interval while visible, waits while hidden, and ends when a tick says so", async () => {
  const timer = fakeTimer();
  let visible = true;
  const answers = [true, true, false];
  let ticks = 0;
  const poller = createPoller({ tick: async () => answers[ticks++], visible: () => visible, ...timer });
  poller.start();
  assert.equal(timer.pending.size, 1);
  assert.equal([...timer.pending.values()][0].ms, POLL_MS);
  await timer.fire();
  assert.equal(ticks, 1);
  assert.equal(timer.pending.size, 1); // the next one planned
  visible = false;
  await timer.fire(); // the page was hidden: no read
  assert.equal(ticks, 1);
  assert.equal(timer.pending.size, 0);
  poller.wake(); // still hidden
  assert.equal(timer.pending.size, 0);
  visible = true;
  poller.wake();
  poller.wake(); // one tick planned, not two
  assert.equal(timer.pending.size, 1);
  await timer.fire();
  await timer.fire(); // the run ended: this tick answers false
  assert.equal(ticks, 3);
  assert.equal(timer.pending.size, 0);
  assert.equal(poller.running(), false);
  poller.wake();
  assert.equal(timer.pending.size, 0); // ended for good
});

test("a tick that fails is tried again at the next interval; stop() cancels the planned one", async () => {
  const timer = fakeTimer();
  let ticks = 0;
  const poller = createPoller({ tick: async () => { ticks += 1; throw new Error("503"); }, ...timer });
  poller.start();
  await timer.fire();
  assert.equal(ticks, 1);
  assert.equal(timer.pending.size, 1);
  poller.stop();
  assert.equal(timer.pending.size, 0);
});
