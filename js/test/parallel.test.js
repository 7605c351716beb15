// The parallel-coordinates view's data: an axis per varying hyperparameter and one for the metric, text as
// categories, decades on a log axis, runs that cannot be placed said so, and what brushing keeps.
import assert from "node:assert/strict";
import { test } from "node:test";
import { bestDirection, brushedRuns, metricValue, parallelData } from "../stellar/parallel.js";

function run(id, config, latest, min = latest, max = latest) {
  const metrics = latest === undefined ? {} : { loss: { latest_value: latest, min_value: min, max_value: max } };
  return { run_id: id, config, metrics };
}

const RUNS = [
  run("a", { lr: 0.1, opt: "adam" }, 0.5, 0.4, 2.0),
  run("b", { lr: 0.001, opt: "sgd" }, 0.3, 0.2, 2.1),
  run("c", { lr: 0.01, opt: "adam" }, 0.9, 0.8, 1.9),
];

test("lower is better for losses and errors, higher for the rest", () => {
  assert.equal(bestDirection("train/loss"), "min");
  assert.equal(bestDirection("val_error"), "min");
  assert.equal(bestDirection("eval/acc"), "max");
  assert.equal(bestDirection("reward"), "max");
});

test("a run's final value is its latest, its best the min or the max", () => {
  assert.equal(metricValue(RUNS[0], "loss"), 0.5);
  assert.equal(metricValue(RUNS[0], "loss", "best"), 0.4);
  assert.equal(metricValue(RUNS[0], "loss", "best", "max"), 2.0);
  assert.equal(metricValue(RUNS[0], "acc"), undefined);
});

test("one axis per varying key and one for the metric; text keys are categories", () => {
  const data = parallelData(RUNS, ["lr", "opt"], "loss");
  assert.deepEqual(data.axes.map((a) => [a.label, a.kind]),
    [["lr (log)", "log"], ["opt", "category"], ["loss (final)", "number"]]);
  const opt = data.axes[1];
  assert.deepEqual(opt.ticktext, ["adam", "sgd"]);
  assert.deepEqual(opt.values, [0, 1, 0]);
  assert.deepEqual(data.axes[2].values, [0.5, 0.3, 0.9]);
  assert.deepEqual(data.axes[2].range, [0.3, 0.9]);
});

test("values spanning decades go on a log axis ticked at each decade", () => {
  const lr = parallelData(RUNS, ["lr"], "loss").axes[0];
  assert.deepEqual(lr.values.map((v) => Math.round(v * 1e9) / 1e9), [-1, -3, -2]);
  assert.deepEqual(lr.tickvals, [-3, -2, -1]);
  assert.deepEqual(lr.ticktext, ["0.001", "0.01", "0.1"]);
  const narrow = parallelData([run("a", { x: 1 }, 1), run("b", { x: 50 }, 2)], ["x"], "loss").axes[0];
  assert.equal(narrow.kind, "number");
});

test("the best value axis says which way is best", () => {
  const data = parallelData(RUNS, ["lr"], "loss", { which: "best" });
  assert.equal(data.axes[1].label, "loss (min)");
  assert.deepEqual(data.axes[1].values, [0.4, 0.2, 0.8]);
});

test("runs without the metric or without a numeric key are left out, with the reason", () => {
  const runs = [...RUNS, run("d", { opt: "adam" }, 0.1), run("e", { lr: 0.5, opt: "sgd" }, undefined)];
  const data = parallelData(runs, ["lr", "opt"], "loss");
  assert.deepEqual(data.runs.map((r) => r.run_id), ["a", "b", "c"]);
  assert.deepEqual(data.left, [{ run_id: "d", reason: "no value of lr" }, { run_id: "e", reason: "no final value of loss" }]);
});

test("a text key some runs lack gets a dash category instead of dropping them", () => {
  const runs = [run("a", { opt: "adam" }, 1), run("b", {}, 2)];
  const axis = parallelData(runs, ["opt"], "loss").axes[0];
  assert.deepEqual(axis.ticktext, ["–", "adam"]);
  assert.deepEqual(axis.values, [1, 0]);
});

test("a single value still has a usable axis range", () => {
  const axis = parallelData([run("a", { x: 3 }, 1), run("b", { x: 3 }, 2)], ["x"], "loss").axes[0];
  assert.deepEqual(axis.range, [2, 4]);
});

test("brushing keeps the runs inside every brushed range; nothing brushed keeps none in particular", () => {
  const data = parallelData(RUNS, ["lr", "opt"], "loss");
  assert.equal(brushedRuns(data, [null, null, null]), null);
  assert.deepEqual([...brushedRuns(data, [null, null, [0.2, 0.6]])].sort(), ["a", "b"]);
  assert.deepEqual([...brushedRuns(data, [null, [-0.2, 0.2], [0.2, 0.6]])], ["a"]);
  assert.deepEqual([...brushedRuns(data, [[[-3.1, -2.9], [-1.1, -0.9]], null, null])].sort(), ["a", "b"]);
  assert.deepEqual([...brushedRuns(data, [null, null, [5, 6]])], []);
});
