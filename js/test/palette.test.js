// The run palette: a run's colour comes from its id, runs drawn together never share one, and the pane and
// the Stellar page it links give every run the same colour.
import assert from "node:assert/strict";
import { test } from "node:test";
import { assignRunColors, fnv1a, NON_FINITE_COLOR, RUN_COLORS, runColor } from "../shared/palette.js";

test("fnv1a is the standard 32-bit FNV-1a over UTF-8", () => {
  assert.equal(fnv1a(""), 0x811c9dc5);
  assert.equal(fnv1a("a"), 0xe40c292c);
  assert.equal(fnv1a("foobar"), 0xbf9cf968);
  assert.equal(fnv1a("é"), fnv1a("\u00e9")); // two UTF-8 bytes, hashed as bytes
  assert.notEqual(fnv1a("é"), fnv1a("e\u0301"));
});

test("a run drawn alone has its own colour, whatever page draws it", () => {
  for (const run of ["run-a", "baseline", "lr-3e-4", "ünïcode/run #1"]) {
    assert.equal(assignRunColors([run]).get(run), runColor(run));
    assert.equal(runColor(run), RUN_COLORS[fnv1a(run) % RUN_COLORS.length]);
  }
});

test("the first run listed always keeps its own colour", () => {
  const runs = ["baseline", "lr-3e-4", "lr-1e-3"];
  assert.equal(assignRunColors(runs).get("baseline"), runColor("baseline"));
});

test("runs drawn together get distinct colours while there are colours left", () => {
  const runs = Array.from({ length: RUN_COLORS.length }, (_, i) => `run-${i}`);
  const colors = assignRunColors(runs);
  assert.equal(new Set(colors.values()).size, RUN_COLORS.length);
});

test("more runs than colours: every run still gets a palette colour", () => {
  const runs = Array.from({ length: RUN_COLORS.length + 4 }, (_, i) => `r${i}`);
  const colors = assignRunColors(runs);
  assert.equal(colors.size, runs.length);
  for (const c of colors.values()) assert.ok(RUN_COLORS.includes(c));
});

test("a run listed twice keeps its first colour", () => {
  const colors = assignRunColors(["a", "b", "a"]);
  assert.equal(colors.size, 2);
});

test("the pane and the compare page its link opens agree on every run's colour", () => {
  // The pane lists its run then `compare` (without repeats); its link carries target=<run>&compare=<the rest>,
  // and the page lists target then compare values (taunotebook/portal/views/pages.py _targets).
  const paneRuns = (primary, compare) => [primary, ...compare.filter((r) => r !== primary)];
  const pageTargets = (query) => {
    const params = new URLSearchParams(query);
    const seen = [];
    for (const key of ["target", "compare"]) {
      for (const raw of params.getAll(key)) for (const part of raw.split(",")) if (part && !seen.includes(part)) seen.push(part);
    }
    return seen;
  };
  const pane = assignRunColors(paneRuns("baseline", ["lr-3e-4", "lr-1e-3"]));
  const page = assignRunColors(pageTargets("target=baseline&project=demo&compare=lr-3e-4,lr-1e-3"));
  assert.deepEqual([...page], [...pane]);
});

test("no run is drawn in the non-finite marks' red", () => {
  assert.ok(!RUN_COLORS.includes(NON_FINITE_COLOR));
  assert.ok(!RUN_COLORS.includes("#d62728"));
});
