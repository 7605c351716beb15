// Which metrics the Stellar page charts, and in what order (the pane's rule: loss first, no tau/ markers).
import assert from "node:assert/strict";
import { test } from "node:test";
import { isMarker, metricOrder } from "../stellar/series.js";

test("tau/ markers are the run's state, not charts; other names are metrics", () => {
  assert.equal(isMarker("tau/run_status"), true);
  assert.equal(isMarker("train/tau/x"), false);
  assert.equal(isMarker("tau"), false);
  const charted = ["eval/acc", "tau/run_status", "train/loss", "loss"].filter((n) => !isMarker(n)).sort(metricOrder);
  assert.deepEqual(charted, ["loss", "train/loss", "eval/acc"]);
});
