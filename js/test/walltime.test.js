// Wall time at a step from sparse samples, and back.
import assert from "node:assert/strict";
import { test } from "node:test";
import { interpolate, stepsBetween } from "../shared/walltime.js";

test("between samples the time is linear, outside them the nearest sample's", () => {
  assert.deepEqual(interpolate([-5, 0, 5, 10, 15, 20, 30], [0, 10, 20], [100, 200, 400]), [100, 100, 150, 200, 300, 400, 400]);
});

test("one sample gives every step its time; none gives nothing", () => {
  assert.deepEqual(interpolate([1, 2], [7], [70]), [70, 70]);
  assert.deepEqual(interpolate([1, 2], [], []), []);
});

test("samples at one step twice do not divide by zero", () => {
  assert.deepEqual(interpolate([5], [5, 5], [50, 60]), [50]);
  assert.deepEqual(interpolate([6], [5, 5, 7], [50, 60, 80]), [70]);
});

test("a wall-time window maps to the steps that cover it", () => {
  const steps = [0, 10, 20, 30];
  const wall = [1000, 2000, 3000, 4000];
  assert.deepEqual(stepsBetween(steps, wall, 2500, 3500), [10, 30]);
  assert.deepEqual(stepsBetween(steps, wall, 0, 99999), [0, 30]);
  assert.equal(stepsBetween([], [], 0, 1), null);
});
