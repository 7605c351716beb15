import { test } from "node:test";
import assert from "node:assert/strict";
import { createStepCursor, nearestStep, parseStep } from "../shared/step_cursor.js";

test("a cursor tells every subscriber of each move and who made it", () => {
  const cursor = createStepCursor();
  const seen = [];
  const stop = cursor.subscribe((step, source) => seen.push([step, source]));
  assert.equal(cursor.set(10, "curve"), "");
  assert.equal(cursor.set("10", "input"), ""); // same step: no second call
  assert.equal(cursor.set(" 25 ", "input"), "");
  stop();
  cursor.set(30);
  assert.deepEqual(seen, [[10, "curve"], [25, "input"]]);
  assert.equal(cursor.get(), 30);
});

test("a new subscriber hears the step already set", () => {
  const cursor = createStepCursor(7);
  const seen = [];
  cursor.subscribe((step, source) => seen.push([step, source]));
  assert.deepEqual(seen, [[7, "initial"]]);
});

test("what is not a whole int64 step is refused in words and moves nothing", () => {
  const cursor = createStepCursor(3);
  for (const bad of ["abc", "1.5", 1.5, "", "9223372036854775808", "1e3", null]) {
    assert.match(cursor.set(bad), /not a whole step|outside int64/);
  }
  assert.equal(cursor.get(), 3);
  assert.equal(parseStep("-9223372036854775808").why, "");
  assert.match(parseStep("99999999999999999999").why, /not a whole step/);
});

test("the nearest stored step, the earlier one on a tie", () => {
  assert.equal(nearestStep([], 5), null);
  assert.equal(nearestStep([0, 10, 20], 14), 10);
  assert.equal(nearestStep([0, 10, 20], 15), 10);
  assert.equal(nearestStep([0, 10, 20], 16), 20);
  assert.equal(nearestStep([0, 10, 20], -5), 0);
  assert.equal(nearestStep([0, 10, 20], 99), 20);
});
