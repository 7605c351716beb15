// Smoothing: TensorBoard's table computed independently in Python, and the pane's chunk-by-chunk form giving
// exactly what the Stellar page's whole-series form gives.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { createSmoother, smooth, smoothInto } from "../shared/smoothing.js";

const table = JSON.parse(readFileSync(new URL("./reference/smoothing.json", import.meta.url), "utf8"));
const decode = (v) => (typeof v === "string" ? Number(v) : v); // "NaN", "Infinity", "-Infinity"

function assertClose(actual, expected, where) {
  assert.equal(actual.length, expected.length, `${where}: length`);
  actual.forEach((a, i) => {
    const e = expected[i];
    if (!Number.isFinite(e)) assert.ok(Object.is(a, e), `${where}[${i}]: ${a} should be ${e}`);
    else assert.ok(Math.abs(a - e) <= 1e-12 * Math.max(1, Math.abs(e)), `${where}[${i}]: ${a} vs ${e}`);
  });
}

test("the reference table has every case", () => {
  assert.ok(table.cases.length >= 80);
});

for (const c of table.cases) {
  test(`smooth matches TensorBoard: ${c.name}, weight ${c.weight}`, () => {
    assertClose(smooth(c.values.map(decode), c.weight), c.smoothed.map(decode), `${c.name}@${c.weight}`);
  });
}

/** Smooths `values` fed in the given chunk sizes as the pane does, restarting when a chunk says so. */
function chunked(values, weight, sizes) {
  let state = createSmoother(weight);
  let out = [];
  let at = 0;
  for (const n of sizes) {
    const chunk = values.slice(at, at + n);
    at += n;
    if (!smoothInto(state, chunk, out)) {
      state = createSmoother(weight);
      out = [];
      smoothInto(state, values.slice(0, at), out);
    }
  }
  return out;
}

test("fed in chunks, the pane draws bit for bit what the page draws for the whole series", () => {
  for (const c of table.cases) {
    const values = c.values.map(decode);
    for (const sizes of [[values.length], values.map(() => 1), [1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144]]) {
      const whole = smooth(values, c.weight);
      const parts = chunked(values, c.weight, sizes).slice(0, values.length);
      assert.deepEqual(parts, whole, `${c.name}@${c.weight} in chunks of ${sizes.slice(0, 4)}…`);
    }
  }
});

test("a constant series is drawn as is, and the chunk that ends it asks for a redraw", () => {
  const state = createSmoother(0.6);
  const out = [];
  assert.equal(smoothInto(state, [2, 2, 2], out), true);
  assert.deepEqual(out, [2, 2, 2]);
  assert.equal(smoothInto(state, [2, 5], out), false);
  assert.equal(smoothInto(state, [7], out), true); // already not constant: nothing earlier changes
});

test("a constant series broken within its first chunk needs no redraw", () => {
  const out = [];
  assert.equal(smoothInto(createSmoother(0.5), [1, 1, 3], out), true);
  assert.deepEqual(out, smooth([1, 1, 3], 0.5));
  assert.notDeepEqual(out, [1, 1, 3]);
});

test("non-finite values pass through without moving the average", () => {
  const out = smooth([1, NaN, 3, Infinity], 0.5);
  assert.ok(Number.isNaN(out[1]));
  assert.equal(out[3], Infinity);
  assert.deepEqual([out[0], out[2]], smooth([1, 3], 0.5));
});

test("a weight outside [0, 1] is refused with the weight named", () => {
  assert.throws(() => createSmoother(1.5), /smoothing weight must be within \[0, 1\], got 1.5/);
  assert.throws(() => smooth([1, 2], NaN), /got NaN/);
});
