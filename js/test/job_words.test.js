// What a job asked for and where it is, in words (the pane's header and the run page's card).
import assert from "node:assert/strict";
import { test } from "node:test";
import { lifecycleText, resourcesText } from "../shared/job_words.js";

test("resources are said in a fixed order, singular and plural, and nothing for none", () => {
  assert.equal(resourcesText({ queue: "gpu-a", gpus: 2, image: "repo/train:1" }), "2 GPUs · image repo/train:1 · queue gpu-a");
  assert.equal(resourcesText({ workers: 1, gpus_per_worker: 1 }), "1 GPU per worker · 1 worker");
  assert.equal(resourcesText({ retries: 1, time_limit: 90 }), "1 retry · time limit 90s");
  assert.equal(resourcesText({}), "");
  assert.equal(resourcesText(null), "");
});

test("a lifecycle says its text, else its phase, retries and reason", () => {
  assert.equal(lifecycleText({ phase: "failed", reason: "x", retries: 0, text: "failed: killed by SIGKILL (exit 137)" }),
    "failed: killed by SIGKILL (exit 137)");
  assert.equal(lifecycleText({ phase: "running", reason: "", retries: 2 }), "running (retried 2)");
  assert.equal(lifecycleText({ phase: "queued", reason: "waiting for 1 GPU" }), "queued: waiting for 1 GPU");
  assert.equal(lifecycleText({}), "");
});
