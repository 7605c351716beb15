// Runs aggregated into one line and a band, against a plain reference written from the documented rule.
import assert from "node:assert/strict";
import { test } from "node:test";
import { aggregateRuns, bandLabel } from "../shared/aggregate.js";

/** The rule spelled out the slow way: for each union step, each run's value by a search of its points. */
function reference(runs, { center, spread }) {
  const finite = runs.map((r) => {
    const pts = [];
    r.steps.forEach((s, i) => Number.isFinite(r.values[i]) && pts.push([s, r.values[i]]));
    return pts;
  });
  const steps = [...new Set(finite.flatMap((pts) => pts.map((p) => p[0])))].sort((a, b) => a - b);
  return steps.map((step) => {
    const vals = [];
    for (const pts of finite) {
      const exact = pts.find((p) => p[0] === step);
      if (exact) {
        vals.push(exact[1]);
        continue;
      }
      const before = pts.filter((p) => p[0] < step).pop();
      const after = pts.find((p) => p[0] > step);
      if (before && after) vals.push(before[1] + ((after[1] - before[1]) * (step - before[0])) / (after[0] - before[0]));
    }
    const sorted = [...vals].sort((a, b) => a - b);
    const mean = vals.reduce((a, b) => a + b, 0) / vals.length;
    const median = sorted.length % 2 ? sorted[(sorted.length - 1) / 2]
      : (sorted[sorted.length / 2 - 1] + sorted[sorted.length / 2]) / 2;
    const c = center === "mean" ? mean : median;
    const sd = Math.sqrt(vals.reduce((a, v) => a + (v - mean) ** 2, 0) / vals.length);
    const [lo, hi] = spread === "minmax" ? [sorted[0], sorted[sorted.length - 1]] : spread === "std" ? [c - sd, c + sd] : [c, c];
    return { step, count: vals.length, c, lo, hi };
  });
}

function close(a, b, where) {
  assert.ok(Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(b)), `${where}: ${a} vs ${b}`);
}

/** A small deterministic PRNG, so a failure names a seed that reproduces it. */
function prng(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

function randomRuns(rand) {
  const runs = [];
  const k = 1 + Math.floor(rand() * 5);
  for (let r = 0; r < k; r++) {
    const steps = [];
    const values = [];
    let step = Math.floor(rand() * 20);
    const len = Math.floor(rand() * 30);
    for (let i = 0; i < len; i++) {
      steps.push(step);
      const u = rand();
      values.push(u < 0.05 ? NaN : u < 0.08 ? Infinity : u < 0.1 ? -Infinity : rand() * 10 - 5);
      step += 1 + Math.floor(rand() * 4);
    }
    runs.push({ id: `run-${r}`, steps, values });
  }
  return runs;
}

for (const center of ["mean", "median"]) {
  for (const spread of ["minmax", "std", "none"]) {
    test(`random runs aggregate as the plain rule says: ${center}, ${spread}`, () => {
      for (let seed = 1; seed <= 300; seed++) {
        const runs = randomRuns(prng(seed));
        const got = aggregateRuns(runs, { center, spread });
        const want = reference(runs, { center, spread });
        assert.equal(got.steps.length, want.length, `seed ${seed}: steps`);
        want.forEach((w, i) => {
          const where = `seed ${seed} step ${w.step}`;
          assert.equal(got.steps[i], w.step, where);
          assert.equal(got.count[i], w.count, where);
          close(got.center[i], w.c, `${where} center`);
          close(got.lower[i], w.lo, `${where} lower`);
          close(got.upper[i], w.hi, `${where} upper`);
        });
      }
    });
  }
}

test("runs logged at the same steps are aggregated point for point, with no interpolation", () => {
  const agg = aggregateRuns([
    { id: "a", steps: [0, 1, 2], values: [1, 2, 3] },
    { id: "b", steps: [0, 1, 2], values: [3, 4, 9] },
  ]);
  assert.deepEqual([...agg.steps], [0, 1, 2]);
  assert.deepEqual(agg.center, [2, 3, 6]);
  assert.deepEqual(agg.lower, [1, 2, 3]);
  assert.deepEqual(agg.upper, [3, 4, 9]);
  assert.deepEqual(agg.count, [2, 2, 2]);
});

test("a run that stopped early leaves the band, and the count says so", () => {
  const agg = aggregateRuns([
    { id: "long", steps: [0, 10, 20], values: [1, 1, 1] },
    { id: "short", steps: [0, 10], values: [3, 3] },
  ]);
  assert.deepEqual(agg.count, [2, 2, 1]);
  assert.deepEqual(agg.center, [2, 2, 1]);
});

test("a NaN or an infinity never poisons the band and is counted for its run", () => {
  const agg = aggregateRuns([
    { id: "a", steps: [0, 1, 2], values: [1, NaN, 3] },
    { id: "b", steps: [0, 1, 2], values: [1, 2, Infinity] },
  ]);
  for (const v of [...agg.center, ...agg.lower, ...agg.upper]) assert.ok(Number.isFinite(v));
  // a's step 1 is interpolated between its finite neighbours (1 and 3): 2; b's Infinity at 2 is left out.
  assert.deepEqual(agg.center, [1, 2, 3]);
  assert.deepEqual(agg.count, [2, 2, 1]);
  assert.deepEqual(agg.nonFinite, { a: 1, b: 1 });
  assert.equal(bandLabel("loss", agg), "loss (mean of 2 runs, min–max, 2 non-finite left out)");
});

test("no runs, or runs without finite points, give an empty aggregate", () => {
  assert.equal(aggregateRuns([]).steps.length, 0);
  const agg = aggregateRuns([{ id: "a", steps: [1], values: [NaN] }]);
  assert.equal(agg.steps.length, 0);
  assert.deepEqual(agg.nonFinite, { a: 1 });
});

test("an unknown centre or spread is refused by name", () => {
  assert.throws(() => aggregateRuns([], { center: "mode" }), /center must be one of mean, median, got mode/);
  assert.throws(() => aggregateRuns([], { spread: "iqr" }), /spread must be one of minmax, std, none, got iqr/);
});
