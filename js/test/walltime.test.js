// Wall time at a step from sparse samples, and back.
import assert from "node:assert/strict";
import { test } from "node:test";
import { interpolate, stepsBetween, wallDate } from "../shared/walltime.js";

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

test("wall times to the end of int64 microseconds: a Date where one exists, null past year 275,760", () => {
  assert.equal(wallDate(253_402_300_799_000_000).toISOString(), "9999-12-31T23:59:59.000Z");
  assert.equal(wallDate(9_223_372_036_854_776).getUTCFullYear(), 2262); // past int64 nanoseconds
  assert.equal(wallDate(8.64e18).getUTCFullYear(), 275760);
  assert.equal(wallDate(2 ** 63 - 1), null); // int64 µs max: year ~294,247, no Date holds it
  assert.equal(wallDate(-(2 ** 63)), null);
  assert.equal(wallDate(NaN), null);
});
