// The rule that groups a wide run's metrics into sections, and the search box's filter (shared/sections.js).
import assert from "node:assert/strict";
import { test } from "node:test";
import { buildSections, compileFilter, countText, isLossLike, sectionOf, sectionTitle } from "../shared/sections.js";

const keys = (sections) => sections.map((s) => s.key);

test("a metric's section is its name up to the first slash; no slash is the 'metrics' section", () => {
  assert.equal(sectionOf("train/loss"), "train");
  assert.equal(sectionOf("grad_norm/layer.3/attn"), "grad_norm");
  assert.equal(sectionOf("lr"), "");
  assert.equal(sectionOf("/odd"), "");
  assert.equal(sectionTitle(""), "metrics");
  assert.equal(sectionTitle("train"), "train");
  assert.equal(isLossLike("val/Loss_total"), true);
  assert.equal(isLossLike("lossless"), true); // the rule is "contains loss", nothing cleverer
  assert.equal(isLossLike("accuracy"), false);
});

test("order: Pinned, Loss, sections by name, system last; each metric in exactly one section", () => {
  const metrics = ["system/gpu_util", "train/lr", "loss", "grad_norm/l0", "eval/loss", "lr", "train/loss",
    "eval/acc", "system/cpu"];
  const sections = buildSections(metrics, { pinned: ["eval/acc"] });
  assert.deepEqual(keys(sections), ["Pinned", "Loss", "", "grad_norm", "train", "system"]);
  const by = Object.fromEntries(sections.map((s) => [s.key, s.metrics]));
  assert.deepEqual(by.Pinned, ["eval/acc"]);
  assert.deepEqual(by.Loss, ["loss", "eval/loss", "train/loss"]); // "loss" itself leads, then the given order
  assert.equal(by.eval, undefined); // eval/acc is pinned, eval/loss is in Loss: no empty "eval" section
  assert.deepEqual(by.train, ["train/lr"]);
  assert.deepEqual(by.system, ["system/gpu_util", "system/cpu"]);
  const all = sections.flatMap((s) => s.metrics).sort();
  assert.deepEqual(all, [...metrics].sort());
  assert.equal(sections[0].title, "Pinned");
  assert.equal(sections[2].title, "metrics");
  // The sidecar's system metrics sit apart, collapsed even when few, until the user opens them.
  assert.deepEqual(sections.map((s) => s.open), [true, true, true, true, true, false]);
  assert.equal(buildSections(metrics, { open: { system: true } }).at(-1).open, true);
  assert.equal(buildSections(metrics, { filter: "cpu" }).at(-1).open, true); // a search shows what it found
});

test("no pinned metric, no Pinned section; a pinned name the run lacks is not shown", () => {
  const sections = buildSections(["a/x", "b/y"], { pinned: ["gone/z"] });
  assert.deepEqual(keys(sections), ["a", "b"]);
});

test("a section of more than six metrics starts collapsed, unless the user opened it; the user may close any", () => {
  const many = Array.from({ length: 7 }, (_, i) => `grad_norm/l${i}`);
  const few = Array.from({ length: 6 }, (_, i) => `train/m${i}`);
  let sections = buildSections([...many, ...few]);
  assert.deepEqual(sections.map((s) => [s.key, s.open, s.total]), [["grad_norm", false, 7], ["train", true, 6]]);
  sections = buildSections([...many, ...few], { open: { grad_norm: true, train: false } });
  assert.deepEqual(sections.map((s) => [s.key, s.open]), [["grad_norm", true], ["train", false]]);
  assert.equal(countText(sections[0]), "7 metrics");
  assert.equal(countText(buildSections(["x/one"])[0]), "1 metric");
  assert.equal(countText({ metrics: new Array(12), total: 1793 }), "12 of 1,793 metrics");
});

test("the filter is a case-insensitive regex, bare or between slashes", () => {
  const f = compileFilter("^train/.*NORM$");
  assert.equal(f.mode, "regex");
  assert.equal(f.test("train/grad_norm"), true);
  assert.equal(f.test("eval/train/grad_norm"), false);
  const slashed = compileFilter("/layer\\.(1|2)$/");
  assert.equal(slashed.mode, "regex");
  assert.equal(slashed.test("grad_norm/layer.2"), true);
  assert.equal(slashed.test("grad_norm/layer.12"), false);
  assert.equal(slashed.test("grad_norm/layerX2"), false);
});

test("text that is not a valid regex is matched as a substring, in any case", () => {
  const f = compileFilter("norm[");
  assert.equal(f.mode, "substring");
  assert.match(f.error, /Unterminated|Invalid/i);
  assert.equal(f.test("grad_NORM[0]"), true);
  assert.equal(f.test("grad_norm"), false);
  const plain = compileFilter("(");
  assert.equal(plain.test("a(b"), true);
});

test("an empty filter matches everything; whitespace is no filter", () => {
  assert.equal(compileFilter("").mode, "all");
  assert.equal(compileFilter("   ").mode, "all");
  assert.equal(compileFilter(undefined).test("anything"), true);
});

test("while filtering, sections list their matches, count 'k of n', and sections without a match are left out", () => {
  const metrics = ["loss", "train/lr", ...Array.from({ length: 40 }, (_, i) => `grad_norm/layer.${i}`)];
  const sections = buildSections(metrics, { filter: "layer\\.3" });
  assert.deepEqual(keys(sections), ["grad_norm"]);
  assert.deepEqual(sections[0].metrics, ["grad_norm/layer.3", ...Array.from({ length: 10 }, (_, i) => `grad_norm/layer.3${i}`)]);
  assert.equal(sections[0].total, 40);
  assert.equal(countText(sections[0]), "11 of 40 metrics");
  assert.equal(sections[0].open, false); // 11 matches: still more than six
  const one = buildSections(metrics, { filter: "layer.39" });
  assert.equal(one[0].open, true);
});

test("10,000 metrics: every one lands in exactly one section", () => {
  const metrics = Array.from({ length: 10000 }, (_, i) => `s${i % 50}/m${i}`);
  const sections = buildSections(metrics, { filter: "m1" });
  assert.equal(sections.reduce((n, s) => n + s.total, 0), 10000);
});
