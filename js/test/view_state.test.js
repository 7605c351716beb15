// A Stellar page's view as its address: round trips, and hostile addresses that still open a page.
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  MAX_TARGETS, MAX_VALUE, decodeListingView, decodeRunView, defaultRunView, encodeListingView, encodeRunView, parseNumber,
  parseRange,
} from "../shared/view_state.js";

const FULL = {
  targets: ["run a", "run/b?c#d", "ünï"],
  search: "^train/.*(loss|acc)$",
  pins: ["val/acc", "a&b=c"],
  smoothing: 0.85,
  xAxis: "relative",
  logY: true,
  aggregate: "median",
  band: "std",
  zoom: { "train/loss": [100, 2500.5], "x.y=z": [-3, 1e-3] },
  onlyDiffering: true,
  importance: { metric: "eval/acc&x", reduction: "best" },
  step: -1234,
};

test("a whole run view survives encode then decode, as text through a URL", () => {
  const query = encodeRunView(FULL, { project: "proj", source: "kusto" });
  const url = new URL(`http://h/stellar?${query}`);
  const { view, notices } = decodeRunView(url.search);
  assert.deepEqual(notices, []);
  assert.deepEqual(view, FULL);
  assert.equal(url.searchParams.get("project"), "proj");
  assert.equal(url.searchParams.get("source"), "kusto");
});

test("the compare page's diff toggle, importance metric and value, and runs of other projects", () => {
  const view = { ...defaultRunView(), targets: ["r", "proj-b/r2"], onlyDiffering: true,
    importance: { metric: "loss", reduction: "latest" } };
  const query = encodeRunView(view, { defaultAxis: "step" }).toString();
  assert.equal(query, "target=r&target=proj-b%2Fr2&diff=1&importance=loss&reduction=latest");
  assert.deepEqual(decodeRunView(query).view, view);
  const { view: bad, notices } = decodeRunView("target=r&diff=yes&reduction=median");
  assert.equal(bad.onlyDiffering, false);
  assert.equal(bad.importance.reduction, "final");
  assert.deepEqual(notices, [
    'diff="yes" is not 1 (only the config keys that differ) or 0: ignored',
    'reduction="median" is not a value of a run (final, best or latest): ignored',
  ]);
});

test("a metric x axis round-trips whatever its name holds", () => {
  const view = { ...defaultRunView(), targets: ["r"], xAxis: "metric:tokens/seen:total" };
  assert.equal(decodeRunView(encodeRunView(view)).view.xAxis, "metric:tokens/seen:total");
});

test("defaults are left out of the address", () => {
  assert.equal(encodeRunView({ ...defaultRunView(), targets: ["r"] }, { defaultAxis: "step" }).toString(), "target=r");
  // a link to share names its axis: the page opening it would otherwise use the axis last chosen in that browser
  assert.equal(encodeRunView({ ...defaultRunView(), targets: ["r"] }).toString(), "target=r&x=step");
  assert.equal(decodeRunView("target=r", "wall").view.xAxis, "wall");
  assert.equal(decodeRunView("target=r", "metric:epoch").view.xAxis, "metric:epoch");
  assert.equal(decodeRunView("target=r", "bogus").view.xAxis, "step");
});

test("target and compare, repeated or comma-separated, in order, first occurrence kept", () => {
  const { view } = decodeRunView("target=a,b&compare=c&target=a&compare= d ,");
  assert.deepEqual(view.targets, ["a", "b", "c", "d"]);
});

test("bad numbers and unknown words are ignored with a notice naming the parameter", () => {
  const { view, notices } = decodeRunView(
    "target=r&smooth=NaN&x=sideways&y=cubic&agg=sum&band=wide&zoom.loss=5..1&zoom.acc=1e999..2&zoom.=1..2&frobnicate=1");
  assert.deepEqual(view, { ...defaultRunView(), targets: ["r"] });
  for (const word of ["smooth", "x=", "y=", "agg", "band", "zoom.loss", "zoom.acc", "zoom.=", "frobnicate"]) {
    assert.ok(notices.some((n) => n.includes(word)), `no notice names ${word}: ${notices.join(" | ")}`);
  }
});

test("smoothing outside [0, 0.999] and numbers in other notations are refused", () => {
  for (const bad of ["1", "-0.1", "0x1", "1e", "", " ", "Infinity", "0.5.5"]) {
    const { view, notices } = decodeRunView(`smooth=${encodeURIComponent(bad)}`);
    assert.equal(view.smoothing, 0, bad);
    assert.equal(notices.length, 1, bad);
  }
  assert.equal(decodeRunView("smooth=.5").view.smoothing, 0.5);
  assert.equal(parseNumber("1e3"), 1000);
  assert.equal(parseRange("1..2..3"), null);
  assert.deepEqual(parseRange("-5..-1"), [-5, -1]);
});

test("very long values are ignored, not drawn", () => {
  const long = "x".repeat(MAX_VALUE + 1);
  const { view, notices } = decodeRunView(`target=r&target=${long}&q=${long}&pin=${long}&zoom.${long}=1..2`);
  assert.deepEqual(view.targets, ["r"]);
  assert.equal(view.search, "");
  assert.deepEqual(view.pins, []);
  assert.equal(notices.length, 4);
  assert.ok(notices.every((n) => n.length < 200), "a notice quotes a long value in full");
});

test("more runs than a page draws: the first ones, with a notice", () => {
  const query = Array.from({ length: MAX_TARGETS + 5 }, (_, i) => `target=r${i}`).join("&");
  const { view, notices } = decodeRunView(query);
  assert.equal(view.targets.length, MAX_TARGETS);
  assert.equal(notices.length, 1);
});

test("a parameter given twice: the first is used, said once", () => {
  const { view, notices } = decodeRunView("smooth=0.5&smooth=0.9&pin=a&pin=b&pin=a");
  assert.equal(view.smoothing, 0.5);
  assert.deepEqual(view.pins, ["a", "b"]);
  assert.equal(notices.length, 1);
});

test("the Portal's own parameters pass without a notice", () => {
  assert.deepEqual(decodeRunView("target=r&project=p&source=local&token=t").notices, []);
});

test("the listing's note filter is in the address; one with control characters is named and ignored", () => {
  const encoded = encodeListingView({ ...decodeListingView("").view, note: "lr too high" });
  assert.equal(encoded.toString(), "note=lr+too+high");
  assert.equal(decodeListingView(encoded).view.note, "lr too high");
  assert.deepEqual(decodeListingView(encoded).notices, []);
  assert.equal(decodeListingView("note=%20%20").view.note, "");
  const bad = decodeListingView("note=a%00b");
  assert.equal(bad.view.note, "");
  assert.deepEqual(bad.notices, ['note="a\\u0000b" holds control characters, which no note filter can match: ignored']);
  const long = decodeListingView(`note=${"x".repeat(MAX_VALUE + 1)}`);
  assert.equal(long.view.note, "");
  assert.equal(long.notices.length, 1);
});

test("unknown runs are the page's to report: the address keeps them", () => {
  assert.deepEqual(decodeRunView("target=no-such-run").view.targets, ["no-such-run"]);
});

test("the listing's view round-trips, and its bad values are named", () => {
  const t = {
    search: "lr 0.1", note: "diverged after warmup", filters: { state: "running", project: "", experiment: "e/1", group: "", tag: "k=v" },
    configText: "lr>0.01, opt=adam", metric: "val/acc", sort: { column: "metric:latest", direction: "desc" },
    groupBy: "experiment", showConstant: true, parallel: true,
  };
  const back = decodeListingView(encodeListingView(t, { source: "local" }));
  assert.deepEqual(back.notices, []);
  assert.deepEqual(back.view, t);
  const bad = decodeListingView("dir=up&group_by=owner&view=3d&zzz=1");
  assert.equal(bad.notices.length, 4);
  assert.equal(bad.view.groupBy, "");
  assert.equal(bad.view.parallel, false);
  assert.deepEqual(bad.view.sort, { column: "created_at", direction: "desc" });
});

test("the media cards' step cursor: a shared link opens at its step, a bad step is named and ignored", () => {
  const query = encodeRunView({ ...defaultRunView(), targets: ["r"], step: 9007199254740991 }, { defaultAxis: "step" });
  assert.equal(query.toString(), "target=r&step=9007199254740991");
  assert.equal(decodeRunView(query).view.step, 9007199254740991);
  assert.equal(decodeRunView("target=r").view.step, null);
  const { view, notices } = decodeRunView("target=r&step=12.5");
  assert.equal(view.step, null);
  assert.deepEqual(notices, ['step="12.5" is not a step for the media cards ("12.5" is not a whole step): ignored']);
  assert.match(decodeRunView("step=9223372036854775808").notices[0], /outside int64/);
});
