// A metric as the x axis: the join by step (carry the last x forward, as W&B's step_sync), points without x,
// x that goes down, alignment for bands, and zoom windows.
import assert from "node:assert/strict";
import { test } from "node:test";
import { axisMetric, axisTitle, isAxis, loadAxis, saveAxis } from "../shared/time_axis.js";
import { alignOnX, joinX, missingNote, nonDecreasing, stepsForX, xCandidates } from "../shared/x_metric.js";

test("a point takes the x metric's value at its own step when both were logged there", () => {
  const { x, missing } = joinX([0, 10, 20], [0, 10, 20], [0, 4096, 8192]);
  assert.deepEqual(x, [0, 4096, 8192]);
  assert.equal(missing, 0);
});

test("a step without an x value carries the last x value forward (W&B's step_sync)", () => {
  // tokens logged every 10 steps, loss every 5
  const { x, missing } = joinX([0, 5, 10, 15, 25], [0, 10, 20], [100, 200, 300]);
  assert.deepEqual(x, [100, 100, 200, 200, 300]);
  assert.equal(missing, 0);
});

test("points before the x metric's first value have no x, and are counted", () => {
  const { x, missing } = joinX([1, 2, 3, 4], [3], [7]);
  assert.deepEqual(x, [null, null, 7, 7]);
  assert.equal(missing, 2);
  assert.equal(missingNote("tokens", missing), "2 points without tokens not drawn (logged before its first value)");
  assert.equal(missingNote("tokens", 1), "1 point without tokens not drawn (logged before its first value)");
  assert.equal(missingNote("tokens", 0), "");
});

test("a run without the x metric has no point drawn, all counted", () => {
  const { x, missing } = joinX([1, 2], [], []);
  assert.deepEqual(x, [null, null]);
  assert.equal(missing, 2);
});

test("non-finite x values are skipped: the finite value before them carries on", () => {
  const { x, missing } = joinX([0, 1, 2, 3], [0, 1, 2, 3], [5, NaN, Infinity, 8]);
  assert.deepEqual(x, [5, 5, 5, 8]);
  assert.equal(missing, 0);
  assert.deepEqual(joinX([0, 1], [0, 1], [NaN, 3]), { x: [null, 3], missing: 1 });
});

test("steps at the int64 edges keep their order (steps as JS numbers)", () => {
  const big = 2 ** 53;
  const { x } = joinX([0, big - 2, big], [0, big - 1], [1, 2]);
  assert.deepEqual(x, [1, 1, 2]);
});

test("an x that goes down keeps the points in step order (the line goes back across the axis)", () => {
  // an epoch-like counter that restarts
  const { x } = joinX([0, 1, 2, 3, 4], [0, 1, 2, 3, 4], [0, 1, 2, 0, 1]);
  assert.deepEqual(x, [0, 1, 2, 0, 1]);
  assert.equal(nonDecreasing(x), false);
  assert.equal(nonDecreasing([null, 1, 1, 2]), true);
});

test("for a band, points without x are left out and points sharing an x keep the last", () => {
  assert.deepEqual(alignOnX([null, 1, 1, 2, 3], [9, 10, 11, 12, 13]), { steps: [1, 2, 3], values: [11, 12, 13] });
  assert.equal(alignOnX([1, 2, 1], [1, 2, 3]), null);
});

test("a zoom on a metric axis reads the steps whose x lies in the window, one step either side", () => {
  const steps = [0, 10, 20, 30, 40, 50];
  const x = [0, 100, 200, 300, 400, 500];
  assert.deepEqual(stepsForX(steps, x, 150, 320), [10, 40]);
  assert.deepEqual(stepsForX(steps, x, 320, 150), [10, 40]);
  assert.equal(stepsForX(steps, x, 1000, 2000), null);
  // x that goes down enters the window twice: the window covers both
  assert.deepEqual(stepsForX(steps, [0, 5, 9, 0, 5, 9], 4, 6), [0, 50]);
  assert.deepEqual(stepsForX([1, 2], [null, 3], 0, 10), [1, 2]);
});

test("the axis names a metric as metric:<name>, kept across reloads like the others", () => {
  const items = new Map();
  const storage = { getItem: (k) => (items.has(k) ? items.get(k) : null), setItem: (k, v) => items.set(k, String(v)) };
  assert.equal(isAxis("metric:tokens"), true);
  assert.equal(isAxis("metric:"), false);
  assert.equal(axisMetric("metric:train/tokens"), "train/tokens");
  assert.equal(axisMetric("step"), null);
  assert.equal(axisTitle("metric:tokens"), "tokens");
  saveAxis("metric:tokens", storage);
  assert.equal(loadAxis(storage), "metric:tokens");
  assert.throws(() => saveAxis("metric:", storage), /or metric:<name>/);
});

test("the menu offers progress-like metrics first, without tau/ markers, capped", () => {
  const { names, more } = xCandidates(["loss", "train/tokens", "epoch", "acc", "tau/run_status", "samples_seen"], 3);
  assert.deepEqual(names, ["epoch", "samples_seen", "train/tokens"]);
  assert.equal(more, 2);
});
