// The pane's `visible` trait: the union of what every view of a model plots (pane/visible.js).
import assert from "node:assert/strict";
import { test } from "node:test";
import { reportVisible } from "../pane/visible.js";

function model() {
  const traits = { visible: [] };
  return { saves: 0, get: (k) => traits[k], set: (k, v) => { traits[k] = v; }, save_changes() { this.saves += 1; } };
}

test("one view: the model's visible list is what it plots; the names it stops plotting are returned", () => {
  const m = model();
  const view = {};
  assert.deepEqual(reportVisible(m, view, ["loss", "eval/loss"]), []);
  assert.deepEqual(m.get("visible"), ["loss", "eval/loss"]);
  assert.deepEqual(reportVisible(m, view, ["eval/loss", "grad_norm/l3"]), ["loss"]);
  assert.deepEqual(m.get("visible"), ["eval/loss", "grad_norm/l3"]);
  assert.equal(m.saves, 2);
});

test("an unchanged list is not sent again", () => {
  const m = model();
  const view = {};
  reportVisible(m, view, ["loss"]);
  reportVisible(m, view, ["loss"]);
  assert.equal(m.saves, 1);
});

test("two views of one pane: the union; a name leaves only when no view plots it; a closed view counts no more", () => {
  const m = model();
  const a = {}, b = {};
  reportVisible(m, a, ["loss", "train/lr"]);
  reportVisible(m, b, ["loss", "system/cpu"]);
  assert.deepEqual(m.get("visible"), ["loss", "train/lr", "system/cpu"]);
  assert.deepEqual(reportVisible(m, a, ["system/cpu"]), ["train/lr"]); // loss is still in b
  assert.deepEqual(m.get("visible"), ["system/cpu", "loss"]);
  assert.deepEqual(reportVisible(m, b, null), ["loss"]);
  assert.deepEqual(m.get("visible"), ["system/cpu"]);
});
