// What differs between runs, and the names runs get from it: one rule for the pane's legend, the compare
// page and the runs table.
import assert from "node:assert/strict";
import { test } from "node:test";
import { configKeys, constantKeys, differingKeys, runLabels, shortKeys, valueText } from "../shared/differing.js";

const labels = (ids, configs, opts) => Object.fromEntries([...runLabels(ids, configs, opts)].map(([k, v]) => [k, v.label]));

test("runs that differ in one hyperparameter are named by it", () => {
  const configs = { a: { lr: 0.1, batch: 32 }, b: { lr: 0.03, batch: 32 } };
  assert.deepEqual(labels(["a", "b"], configs), { a: "lr=0.1", b: "lr=0.03" });
});

test("several differing keys are listed alphabetically, at most four, then a count", () => {
  const configs = {
    a: { lr: 0.1, wd: 0, seed: 1, depth: 2, act: "relu", batch: 8 },
    b: { lr: 0.2, wd: 1, seed: 2, depth: 4, act: "gelu", batch: 8 },
  };
  assert.deepEqual(labels(["a", "b"], configs), {
    a: "act=relu, depth=2, lr=0.1, seed=1, +1 more",
    b: "act=gelu, depth=4, lr=0.2, seed=2, +1 more",
  });
  assert.equal(labels(["a", "b"], configs, { maxKeys: 2 }).a, "act=relu, depth=2, +3 more");
});

test("nothing differs, or no configs: runs keep their ids", () => {
  assert.deepEqual(labels(["a", "b"], { a: { lr: 0.1 }, b: { lr: 0.1 } }), { a: "a", b: "b" });
  assert.deepEqual(labels(["a", "b"], {}), { a: "a", b: "b" });
  assert.deepEqual(labels(["a"], { a: { lr: 1 } }), { a: "a" });
});

test("a run without a config keeps its id while the others are named by what differs", () => {
  const configs = new Map([["a", { lr: 0.1 }], ["b", { lr: 0.2 }], ["c", null]]);
  assert.deepEqual(labels(["a", "b", "c"], configs), { a: "lr=0.1", b: "lr=0.2", c: "c" });
});

test("a key one run lacks differs, and the run shows a dash for it", () => {
  const configs = { a: { lr: 0.1, warmup: 100 }, b: { lr: 0.1 } };
  assert.deepEqual(differingKeys([configs.a, configs.b]), ["warmup"]);
  assert.deepEqual(labels(["a", "b"], configs), { a: "warmup=100", b: "warmup=–" });
});

test("runs the config does not tell apart get their id added", () => {
  const configs = { s1: { lr: 0.1, seed: 1 }, s2: { lr: 0.1, seed: 1 }, s3: { lr: 0.2, seed: 1 } };
  assert.deepEqual(labels(["s1", "s2", "s3"], configs), { s1: "lr=0.1 (s1)", s2: "lr=0.1 (s2)", s3: "lr=0.2" });
});

test("dotted keys are shown by their shortest unambiguous suffix", () => {
  assert.deepEqual(Object.fromEntries(shortKeys(["optimizer.lr", "model.depth"])),
    { "optimizer.lr": "lr", "model.depth": "depth" });
  assert.deepEqual(Object.fromEntries(shortKeys(["optimizer.lr", "scheduler.lr", "a.b.c"])),
    { "optimizer.lr": "optimizer.lr", "scheduler.lr": "scheduler.lr", "a.b.c": "c" });
  assert.deepEqual(Object.fromEntries(shortKeys(["lr", "optimizer.lr"])), { lr: "lr", "optimizer.lr": "optimizer.lr" });
  const configs = { a: { "optimizer.lr": 0.1 }, b: { "optimizer.lr": 0.01 } };
  assert.deepEqual(labels(["a", "b"], configs), { a: "lr=0.1", b: "lr=0.01" });
});

test("values read the same everywhere: short numbers, exponents for tiny ones, booleans, text", () => {
  assert.equal(valueText(0.1), "0.1");
  assert.equal(valueText(3e-4), "0.0003");
  assert.equal(valueText(1e-7), "1e-7");
  assert.equal(valueText(0.1 + 0.2), "0.3");
  assert.equal(valueText(32), "32");
  assert.equal(valueText(true), "true");
  assert.equal(valueText("adam"), "adam");
  assert.equal(valueText(null), "null");
  assert.equal(valueText(undefined), "–");
  assert.equal(valueText(NaN), "NaN");
  assert.equal(valueText([1, 2]), "[1,2]");
});

test("equal values of different types differ only when their text differs", () => {
  assert.deepEqual(differingKeys([{ x: 1 }, { x: 1.0 }]), []);
  assert.deepEqual(differingKeys([{ x: 1 }, { x: "1" }]), []);
  assert.deepEqual(differingKeys([{ x: true }, { x: "yes" }]), ["x"]);
});

test("constant keys are those every run with a config has with one value", () => {
  const configs = [{ lr: 0.1, batch: 32, opt: "adam" }, { lr: 0.2, batch: 32 }, null];
  assert.deepEqual(constantKeys(configs), ["batch"]);
  assert.deepEqual(differingKeys(configs), ["lr", "opt"]);
  assert.deepEqual(constantKeys([null]), []);
});

test("a long name is cut with an ellipsis", () => {
  const long = "x".repeat(200);
  const got = labels(["a", "b"], { a: { name: long }, b: { name: "y" } });
  assert.equal(got.a.length, 80);
  assert.ok(got.a.endsWith("…"));
});

test("a run listed twice is named once", () => {
  const got = runLabels(["a", "a", "b"], { a: { lr: 1 }, b: { lr: 2 } });
  assert.deepEqual([...got.keys()], ["a", "b"]);
});

test("a card lists the differing keys first, and only them when the toggle is on", () => {
  const configs = [{ lr: 0.1, batch: 32, opt: "adam", seed: 1 }, { lr: 0.2, batch: 32, opt: "sgd", seed: 1 }];
  const differing = new Set(differingKeys(configs));
  assert.deepEqual(configKeys(configs[0], differing), ["lr", "opt", "batch", "seed"]);
  assert.deepEqual(configKeys(configs[0], differing, true), ["lr", "opt"]);
  // Nothing differs: the toggle leaves nothing to list; a run without a config lists nothing either way.
  assert.deepEqual(configKeys({ a: 1 }, new Set(), true), []);
  assert.deepEqual(configKeys(null, differing, true), []);
});
