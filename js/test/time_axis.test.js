// The x axis: step, relative or wall time, and the choice kept across reloads.
import assert from "node:assert/strict";
import { test } from "node:test";
import { axisTitle, loadAxis, relativeUnit, saveAxis, timeValues } from "../shared/time_axis.js";

function memoryStorage() {
  const items = new Map();
  return { getItem: (k) => (items.has(k) ? items.get(k) : null), setItem: (k, v) => items.set(k, String(v)) };
}

test("the chosen axis is kept for the next page, and anything unknown falls back to step", () => {
  const storage = memoryStorage();
  assert.equal(loadAxis(storage), "step");
  saveAxis("relative", storage);
  assert.equal(loadAxis(storage), "relative");
  storage.setItem("taunotebook.xAxis", "parsecs");
  assert.equal(loadAxis(storage), "step");
  assert.throws(() => saveAxis("parsecs", storage), /axis must be one of step, relative, wall, got parsecs/);
});

test("a storage that refuses does not break the page", () => {
  const refusing = { getItem() { throw new Error("denied"); }, setItem() { throw new Error("denied"); } };
  assert.equal(loadAxis(refusing), "step");
  saveAxis("wall", refusing);
});

test("runs compared on relative time line up at zero, whenever each started", () => {
  const a = timeValues("relative", [1_000_000, 1_060_000], 1_000_000);
  const b = timeValues("relative", [5_000_000, 5_030_000], 5_000_000);
  assert.deepEqual(a, [0, 60]);
  assert.deepEqual(b, [0, 30]);
  assert.deepEqual(timeValues("relative", [0, 7_200_000], 0, relativeUnit(7200)), [0, 2]);
  assert.equal(timeValues("relative", [1], NaN), null);
});

test("the relative unit keeps numbers readable", () => {
  assert.equal(relativeUnit(90).name, "seconds");
  assert.equal(relativeUnit(600).name, "minutes");
  assert.equal(relativeUnit(86400).name, "hours");
  assert.equal(axisTitle("relative", relativeUnit(600)), "relative time (minutes)");
  assert.equal(axisTitle("wall"), "wall time");
  assert.equal(axisTitle("step"), "step");
});

test("wall time gives dates", () => {
  const [d] = timeValues("wall", [86_400_000], 0);
  assert.equal(d.toISOString(), "1970-01-02T00:00:00.000Z");
});
