// The pane's status line in words.
import assert from "node:assert/strict";
import { test } from "node:test";
import { statusWords } from "../shared/run_status.js";

const rule = "stopped by --stop-if 'loss>10': loss was 12.5 at step 420; entrypoint exited with code 143";

test("a run a stop rule cancelled says which rule fired at which step", () => {
  assert.equal(statusWords("cancelled", { message: "connected" }, { status_message: rule }),
    `the run was cancelled: ${rule}. connected`);
});

test("a running or succeeded run keeps the kernel's words", () => {
  assert.equal(statusWords("running", { message: "connected" }, { status_message: "" }), "connected");
  assert.equal(statusWords("succeeded", { message: "connected" }, { status_message: "done" }), "connected");
});

test("a failed run says so once", () => {
  assert.equal(statusWords("failed", { message: "connected" }, {}), "the run failed. connected");
  assert.equal(statusWords("failed", { message: "the run failed: OOM" }, {}), "the run failed: OOM");
});

test("a cancelled run without a recorded message, or with one already in the words, adds nothing", () => {
  assert.equal(statusWords("cancelled", { message: "connected" }, undefined), "connected");
  assert.equal(statusWords("cancelled", { message: `x ${rule}` }, { status_message: rule }), `x ${rule}`);
});
