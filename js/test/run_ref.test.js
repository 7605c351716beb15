// Runs of several projects on one compare page: how the address names them.
import assert from "node:assert/strict";
import { test } from "node:test";
import { manyProjects, parseRunRef, runRefKey } from "../shared/run_ref.js";

test("a run is its id, in the page's project, or project/run", () => {
  assert.deepEqual(parseRunRef("run-1", "p"), { runId: "run-1", project: "p" });
  assert.deepEqual(parseRunRef("run-1"), { runId: "run-1", project: null });
  assert.deepEqual(parseRunRef("proj-a/run-1", "p"), { runId: "run-1", project: "proj-a" });
  // A run id never holds "/": the last one separates; a stray one at either end is no project.
  assert.deepEqual(parseRunRef("a/b/run-1"), { runId: "run-1", project: "a/b" });
  assert.deepEqual(parseRunRef("/run-1", "p"), { runId: "/run-1", project: "p" });
  assert.deepEqual(parseRunRef("run-1/", "p"), { runId: "run-1", project: "p" });
});

test("the address names a run's project only when it is not the page's", () => {
  assert.equal(runRefKey("r", "p", "p"), "r");
  assert.equal(runRefKey("r", "q", "p"), "q/r");
  assert.equal(runRefKey("r", null, "p"), "r");
  assert.equal(manyProjects(["p", "p", null]), false);
  assert.equal(manyProjects(["p", "q"]), true);
});
