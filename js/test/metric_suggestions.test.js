// The run page's download box: suggestions follow what is typed, a bounded few at a time (stellar/metric_suggestions.js).
import assert from "node:assert/strict";
import { test } from "node:test";
import { MAX_SUGGESTIONS, suggestMetrics } from "../stellar/metric_suggestions.js";

const names = Array.from({ length: 10_000 }, (_, i) => `layer.${String(i).padStart(5, "0")}/grad_norm`);

test("an empty box suggests the first names only, in order", () => {
  const found = suggestMetrics(names, "");
  assert.equal(found.length, MAX_SUGGESTIONS);
  assert.deepEqual(found.slice(0, 2), ["layer.00000/grad_norm", "layer.00001/grad_norm"]);
});

test("typed text narrows the suggestions, case-insensitive, as a substring", () => {
  assert.deepEqual(suggestMetrics(names, "LAYER.0999"), Array.from({ length: 10 }, (_, i) => `layer.0999${i}/grad_norm`));
  assert.deepEqual(suggestMetrics(names, "  00042/ "), ["layer.00042/grad_norm"]);
  assert.deepEqual(suggestMetrics(names, "no such metric"), []);
  assert.equal(suggestMetrics(names, "grad", 3).length, 3);
});
