import assert from "node:assert/strict";
import { test } from "node:test";
import { checkpointTraces, formatBytes } from "../shared/checkpoint_marks.js";

const answer = {
  checkpoints: [
    { step: null, uri: "/c/last.pt", size_bytes: 5, deleted: false },
    { step: 100, uri: "/c/ckpt-100.pt", size_bytes: 1500000, deleted: false },
    { step: 200, uri: "/c/ckpt-200.pt", size_bytes: 2000, deleted: true },
  ],
  retries: [{ step: 100, attempt: 1, max_retries: 2, resume_from: "/c/ckpt-100.pt" }, { step: null }],
};

test("a marker per checkpoint with a step, its path and size in the hover", () => {
  const [saved, retries] = checkpointTraces(answer, (steps) => steps.map((s) => s * 2), "run-a");
  assert.deepEqual(saved.x, [200, 400]);
  assert.equal(saved.yaxis, "y2");
  assert.equal(saved.text[0], "checkpoint at step 100<br>/c/ckpt-100.pt<br>1.5 MB");
  assert.equal(saved.text[1], "checkpoint at step 200 (deleted)<br>/c/ckpt-200.pt<br>2.0 kB");
  assert.deepEqual(saved.marker.symbol, ["triangle-down", "triangle-down-open"]);
  assert.deepEqual(retries.x, [200]);
  assert.equal(retries.text[0], "retry 1/2 at step 100<br>resumed from /c/ckpt-100.pt");
  assert.deepEqual(retries.meta, { role: "retries", runId: "run-a", steps: [100] });
});

test("nothing to mark, no traces", () => {
  assert.deepEqual(checkpointTraces(null), []);
  assert.deepEqual(checkpointTraces({ checkpoints: [], retries: [] }), []);
  assert.equal(formatBytes(999), "999 B");
  assert.equal(formatBytes(null), "size unknown");
});

test("a compared run's markers take its colour, keep the retry outline and name the run", () => {
  const [saved, retries] = checkpointTraces(answer, (steps) => steps, "run-b", "#ff7f0e");
  assert.equal(saved.marker.color, "#ff7f0e");
  assert.equal(saved.marker.line.color, "#ff7f0e");
  assert.equal(saved.text[0], "run-b: checkpoint at step 100<br>/c/ckpt-100.pt<br>1.5 MB");
  assert.equal(retries.marker.color, "#ff7f0e");
  assert.notEqual(retries.marker.line.color, "#ff7f0e");
  assert.equal(retries.text[0], "run-b: retry 1/2 at step 100<br>resumed from /c/ckpt-100.pt");
  const [plain] = checkpointTraces(answer, (steps) => steps, "run-a");
  assert.notEqual(plain.marker.color, "#ff7f0e");
  assert.ok(!plain.text[0].startsWith("run-a: "));
});
