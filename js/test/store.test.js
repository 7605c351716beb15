// The pane's point store: every op of the kernel's points message, its edges, and the binary buffers.
import assert from "node:assert/strict";
import { test } from "node:test";
import { applyPoints, forgetMetric, newSeries, seriesKey, storeFor, totalPoints } from "../pane/store.js";

function held(steps, values = steps.map((s) => s / 10)) {
  const series = newSeries("run", "loss");
  applyPoints(series, { op: "reset" }, steps.slice(), values.slice());
  return series;
}

test("reset replaces the series and marks it for a full redraw", () => {
  const series = held([1, 2, 3]);
  const version = series.version;
  assert.equal(applyPoints(series, { op: "reset" }, [7, 8], [0.7, 0.8]), "full");
  assert.deepEqual([series.steps, series.values], [[7, 8], [0.7, 0.8]]);
  assert.equal(series.version, version + 1);
});

test("reset to nothing empties the series", () => {
  const series = held([1, 2]);
  assert.equal(applyPoints(series, { op: "reset" }, [], []), "full");
  assert.deepEqual(series.steps, []);
});

test("an append after the held points extends them and keeps the drawn version", () => {
  const series = held([1, 2]);
  const version = series.version;
  assert.equal(applyPoints(series, { op: "append" }, [3, 4], [0.3, 0.4]), "append");
  assert.deepEqual(series.steps, [1, 2, 3, 4]);
  assert.deepEqual(series.values, [0.1, 0.2, 0.3, 0.4]);
  assert.equal(series.version, version);
});

test("an overlapping append rewrites the steps it repeats: last wins", () => {
  const series = held([1, 2, 3, 4]);
  const version = series.version;
  assert.equal(applyPoints(series, { op: "append" }, [3, 5], [9.3, 9.5]), "full");
  assert.deepEqual(series.steps, [1, 2, 3, 5]);
  assert.deepEqual(series.values, [0.1, 0.2, 9.3, 9.5]);
  assert.equal(series.version, version + 1);
});

test("an append starting before every held point replaces them all", () => {
  const series = held([5, 6]);
  assert.equal(applyPoints(series, { op: "append" }, [1, 2], [1, 2]), "full");
  assert.deepEqual(series.steps, [1, 2]);
});

test("an empty append changes nothing", () => {
  const series = held([1]);
  assert.equal(applyPoints(series, { op: "append" }, [], []), "none");
  assert.deepEqual(series.steps, [1]);
});

test("an append to an empty series is a plain append", () => {
  const series = newSeries("run", "loss");
  assert.equal(applyPoints(series, { op: "append" }, [0], [2]), "append");
  assert.deepEqual(series.steps, [0]);
});

test("a range inside the held points replaces exactly the steps within it", () => {
  const series = held([0, 10, 20, 30, 40]);
  assert.equal(applyPoints(series, { op: "range", start_step: 10, end_step: 30 }, [10, 15, 20, 25, 30],
    [1, 1.5, 2, 2.5, 3]), "full");
  assert.deepEqual(series.steps, [0, 10, 15, 20, 25, 30, 40]);
  assert.deepEqual(series.values, [0, 1, 1.5, 2, 2.5, 3, 4]);
});

test("a range with no points in it removes the held points within it", () => {
  const series = held([0, 10, 20, 30]);
  applyPoints(series, { op: "range", start_step: 5, end_step: 25 }, [], []);
  assert.deepEqual(series.steps, [0, 30]);
});

test("a range past the held points adds its points at the end", () => {
  const series = held([0, 10]);
  applyPoints(series, { op: "range", start_step: 20, end_step: 30 }, [20, 30], [2, 3]);
  assert.deepEqual(series.steps, [0, 10, 20, 30]);
});

test("a range without bounds is open at that end", () => {
  const series = held([0, 10, 20, 30]);
  applyPoints(series, { op: "range", start_step: null, end_step: 15 }, [5], [0.5]);
  assert.deepEqual(series.steps, [5, 20, 30]);
});

test("non-finite marks replace the earlier marks and leave the points alone (no full redraw of the lines)", () => {
  const series = held([1, 2, 3]);
  const version = series.version;
  applyPoints(series, { op: "nonfinite" }, [4], [NaN]);
  assert.equal(applyPoints(series, { op: "nonfinite" }, [2, 9], [Infinity, -Infinity]), "marks");
  assert.deepEqual(series.nonFinite, { steps: [2, 9], values: [Infinity, -Infinity] });
  assert.deepEqual(series.steps, [1, 2, 3]);
  assert.deepEqual([series.version, series.marksVersion], [version, 2]);
});

test("wall-time samples merge by step, sorted, a repeated step taking the newer time", () => {
  const series = held([1]);
  applyPoints(series, { op: "walltime" }, [10, 30], [1000, 3000]);
  const version = series.version;
  assert.equal(applyPoints(series, { op: "walltime" }, [20, 30], [2000, 3500]), "wall");
  assert.deepEqual(series.wall, { steps: [10, 20, 30], wall: [1000, 2000, 3500] });
  assert.deepEqual([series.version, series.wallVersion], [version, 2]); // the step axis keeps its drawing
});

test("forgetMetric drops every run's series of a metric no view shows", () => {
  const store = { series: new Map() };
  for (const [run, metric] of [["a", "x"], ["b", "x"], ["a", "y"]]) store.series.set(seriesKey(run, metric), newSeries(run, metric));
  forgetMetric(store, "x");
  assert.deepEqual([...store.series.keys()], [seriesKey("a", "y")]);
});

test("an unknown op changes nothing", () => {
  const series = held([1]);
  const version = series.version;
  assert.equal(applyPoints(series, { op: "explode" }, [2], [2]), "none");
  assert.deepEqual([series.steps, series.version], [[1], version]);
});

/** The model's side of anywidget that the store uses: msg:custom listeners. */
function model() {
  const listeners = [];
  return { on: (name, fn) => name === "msg:custom" && listeners.push(fn), emit: (msg, bufs) => listeners.forEach((fn) => fn(msg, bufs)) };
}

function buffers(steps, values) {
  // As taunotebook/pane.py sends them: int64 and float64, little-endian.
  const s = new DataView(new ArrayBuffer(8 * steps.length));
  const v = new DataView(new ArrayBuffer(8 * values.length));
  steps.forEach((x, i) => s.setBigInt64(8 * i, BigInt(x), true));
  values.forEach((x, i) => v.setFloat64(8 * i, x, true));
  return [s, new Uint8Array(v.buffer)]; // a DataView and a typed array: the page gets either
}

test("points messages are decoded from their buffers and applied in order; gaps in seq are counted", () => {
  const m = model();
  const store = storeFor(m);
  assert.equal(storeFor(m), store, "one store per model");
  const seen = [];
  store.listeners.add((series, change) => seen.push(change));
  m.emit({ type: "points", seq: 1, op: "reset", run: "a", metric: "loss", n: 2, sent_at: 1 }, buffers([0, 2 ** 40], [1.5, NaN]));
  m.emit({ type: "points", seq: 2, op: "append", run: "a", metric: "loss", n: 1, sent_at: 2 }, buffers([2 ** 40 + 1], [-0.5]));
  m.emit({ type: "points", seq: 4, op: "append", run: "b", metric: "loss", n: 1, sent_at: 3 }, buffers([3], [3]));
  m.emit({ type: "other" }, []);
  const a = store.series.get(seriesKey("a", "loss"));
  assert.deepEqual(a.steps, [0, 2 ** 40, 2 ** 40 + 1]);
  assert.deepEqual(a.values, [1.5, NaN, -0.5]);
  assert.deepEqual(seen, ["full", "append", "append"]);
  assert.deepEqual([store.received, store.gaps, totalPoints(store)], [3, 1, 4]);
  assert.deepEqual(a.pendingMarks.map((mk) => [mk.op, mk.first_step, mk.last_step, mk.n]),
    [["reset", 0, 2 ** 40, 2], ["append", 2 ** 40 + 1, 2 ** 40 + 1, 1]]);
});
