// The histogram drawing of the media cards (shared/media/histogram_traces.js, histogram_card.js): the traces made
// from the Portal's `…/histograms` answers, and the card's nearest step.
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  bandPairs, binEdges, distributionTraces, finiteBuckets, heatmapTrace, num, overlayTraces, resample, withAlpha,
} from "../shared/media/histogram_traces.js";
import { createHistogramCard, histogramNear } from "../shared/media/histogram_card.js";
import { MediaFeed } from "../pane/media_section.js";
import { installFakeDocument } from "./fake_dom.js";

installFakeDocument();
const BPS = [0, 668, 1587, 3085, 5000, 6915, 8413, 9332, 10000];
// count, min, max, then the nine percentiles: step 0 spreads -1..1, step 10 spreads -2..2.
const answer = {
  run_id: "r", tag: "w", total: 2, reduced: false, basis_points: BPS, steps: [0, 10], wall_times: [1, 2],
  summary: [
    [4, -1, 1, -1, -0.8, -0.5, -0.2, 0, 0.2, 0.5, 0.8, 1],
    [4, -2, 2, -2, -1.6, -1, -0.4, 0.1, 0.4, 1, 1.6, 2],
  ],
  buckets: [
    [[-1, 0, 2], [0, 1, 2]],
    [[-2, 0, 1], [0, 2, 3]],
  ],
};

test("bands pair each percentile with its mirror, outermost first, and find the median", () => {
  const { pairs, median } = bandPairs(BPS);
  assert.deepEqual(pairs.map(([lo, hi, a, b]) => [lo, hi, a, b]),
    [[3, 11, 0, 10000], [4, 10, 668, 9332], [5, 9, 1587, 8413], [6, 8, 3085, 6915]]);
  assert.equal(median, 7);
  assert.deepEqual(bandPairs([0, 5000]).pairs, []); // no mirror: no band
});

test("distribution traces: a lower edge and a filled upper edge per band, darker inward, then the median", () => {
  const traces = distributionTraces(answer, { color: "#1f77b4", name: "run a" });
  assert.equal(traces.length, 9);
  assert.deepEqual(traces.map((t) => t.meta.role), [...Array(4).fill(["band-low", "band-high"]).flat(), "median"]);
  assert.deepEqual(traces[0].y, [-1, -2]); // min
  assert.deepEqual(traces[1].y, [1, 2]); // max, filled down to min
  assert.equal(traces[1].fill, "tonexty");
  assert.equal(traces[0].fill, undefined);
  assert.deepEqual(traces[6].y, [-0.2, -0.4]); // p30.85
  assert.deepEqual(traces[7].y, [0.2, 0.4]); // p69.15
  assert.deepEqual(traces[8].y, [0, 0.1]);
  assert.deepEqual(traces[8].x, [0, 10]);
  const alphas = [1, 3, 5, 7].map((i) => Number(traces[i].fillcolor.match(/,([\d.]+)\)$/)[1]));
  assert.deepEqual([...alphas].sort((a, b) => a - b), alphas); // inner bands darker
  assert.equal(traces[1].name, "run a min–max");
  assert.equal(traces[3].name, "run a p6.68–p93.32");
});

test("infinite edges arrive as strings and are closed at the finite edge", () => {
  assert.equal(num("-Infinity"), -Infinity);
  assert.equal(num("Infinity"), Infinity);
  assert.deepEqual(finiteBuckets([["-Infinity", -1, 3], [-1, 1, 2], [1, "Infinity", 1]]), [[-1, -1, 3], [-1, 1, 2], [1, 1, 1]]);
  assert.equal(withAlpha("#ff7f0e", 0.5), "rgba(255,127,14,0.5)");
});

test("overlay: one outline per run at its step, its area the bucket counts", () => {
  const traces = overlayTraces([
    { buckets: answer.buckets[0], name: "a", color: "#1f77b4", step: 0 },
    { buckets: answer.buckets[1], name: "b", color: "#ff7f0e", step: 10 },
    { buckets: null, name: "c" },
  ]);
  assert.equal(traces.length, 2);
  assert.deepEqual(traces[0].x, [-1, -1, 0, 0, 1, 1]);
  assert.deepEqual(traces[0].y, [0, 2, 2, 2, 2, 0]);
  assert.equal(traces[1].name, "b step 10");
  assert.equal(traces[1].line.color, "#ff7f0e");
});

test("heat map: every step resampled onto common value bins, counts kept", () => {
  assert.deepEqual(binEdges(0, 4, 4), [0, 1, 2, 3, 4]);
  assert.deepEqual(resample([[0, 2, 4], [3, 3, 1]], [0, 1, 2, 3, 4]), [2, 2, 0, 1]);
  const trace = heatmapTrace(answer, { bins: 4 });
  assert.equal(trace.type, "heatmap");
  assert.deepEqual(trace.y, [0, 10]);
  assert.deepEqual(trace.x, [-1.5, -0.5, 0.5, 1.5]); // -2..2 over both steps
  assert.deepEqual(trace.z[0], [0, 2, 2, 0]);
  assert.deepEqual(trace.z[1], [0.5, 0.5, 1.5, 1.5]);
  assert.equal(heatmapTrace({ ...answer, buckets: null }), null);
});

/** `…/histograms` over the stored `steps` as the Portal answers it: the steps in [step_min, step_max], at most
 *  max_steps of them spread over the range (the first and the last kept), never dropping a step of `keep`. */
function histogramRange(steps, reads) {
  return async (q) => {
    reads.push(q);
    const inside = steps.filter((s) => (q.step_min === undefined || s >= q.step_min) && (q.step_max === undefined || s <= q.step_max));
    let shown = inside;
    if (inside.length > q.max_steps) {
      const kept = q.keep !== undefined && inside.includes(q.keep) ? [q.keep] : [];
      const budget = Math.max(q.max_steps - kept.length, 0);
      const spread = budget === 1 ? [inside[0]]
        : Array.from({ length: budget }, (_, i) => inside[Math.round((i * (inside.length - 1)) / (budget - 1))]);
      shown = [...new Set([...spread, ...kept])].sort((a, b) => a - b);
    }
    return { steps: shown, buckets: shown.map((s) => [[0, 1, s]]), total: inside.length, reduced: shown.length < inside.length };
  };
}

test("the histogram near a step: from the answer when it holds every step, else the tag's steps around it", async () => {
  const reads = [];
  const none = async (q) => { reads.push(q); return null; };
  assert.deepEqual(await histogramNear(answer, 6, none), { step: 10, buckets: answer.buckets[1] });
  assert.deepEqual(await histogramNear(answer, 5, none), { step: 0, buckets: answer.buckets[0] }); // tie: earlier
  assert.equal(reads.length, 0);
  const reduced = { ...answer, reduced: true, total: 100 };
  // The view's gap around 6 (its steps 0 and 10) holds few stored steps: one read answers it whole.
  assert.deepEqual(await histogramNear(reduced, 6, histogramRange([0, 4, 7, 10], reads)), { step: 7, buckets: [[0, 1, 7]] });
  assert.deepEqual(reads, [{ step_min: 0, step_max: 10, max_steps: 8, keep: 6 }]);
  reads.length = 0;
  assert.deepEqual(await histogramNear(reduced, 5, histogramRange([0, 4, 7, 10], reads)), { step: 4, buckets: [[0, 1, 4]] });
  assert.equal(reads.length, 1);
  // A stored step in a wide gap: one read, which keeps it.
  const every = Array.from({ length: 11 }, (_, i) => i);
  reads.length = 0;
  assert.deepEqual(await histogramNear(reduced, 3, histogramRange(every, reads)), { step: 3, buckets: [[0, 1, 3]] });
  assert.deepEqual(reads, [{ step_min: 0, step_max: 10, max_steps: 8, keep: 3 }]);
  // An unstored step in a gap wider than one read: the steps at or after it and at or before it, still bounded
  // by the view's steps around it (0 and 10): never a read to the run's end or from its start.
  const wide = { ...answer, steps: [0, 100], reduced: true, total: 60 };
  const many = [...Array.from({ length: 50 }, (_, i) => i * 2), 100];
  reads.length = 0;
  assert.deepEqual(await histogramNear(wide, 37, histogramRange(many, reads)), { step: 36, buckets: [[0, 1, 36]] });
  assert.deepEqual(reads, [{ step_min: 0, step_max: 100, max_steps: 8, keep: 37 },
    { step_min: 37, step_max: 100, max_steps: 1 }, { step_min: 0, step_max: 37, max_steps: 2 }]);
  reads.length = 0;
  // Past the answer's last step: open on that side only.
  assert.deepEqual(await histogramNear(reduced, 12, histogramRange([0, 4, 7, 10, 11, 30], reads)), { step: 11, buckets: [[0, 1, 11]] });
  assert.deepEqual(reads, [{ step_min: 10, max_steps: 8, keep: 12 }]);
  // A gap the tag holds no step of (the store changed under the view): nothing, not a wrong step.
  reads.length = 0;
  assert.equal(await histogramNear(reduced, 6, histogramRange([], reads)), null);
});

function fakePlotly() {
  const calls = [];
  return { calls, react: (el, data, layout) => { calls.push({ el, data, layout }); } };
}

test("a histogram card draws each run's bands with the cursor marked and overlays both runs at the step", async () => {
  const Plotly = fakePlotly();
  const other = { ...answer, steps: [0, 20], summary: answer.summary, buckets: answer.buckets };
  const asked = [];
  const card = createHistogramCard({
    tag: "w", Plotly,
    runs: [{ key: "a", label: "a", color: "#1f77b4" }, { key: "b", label: "b", color: "#ff7f0e" }],
    fetchSeries: async (key, options) => { asked.push([key, options.buckets]); return key === "a" ? answer : other; },
    readRange: async () => { throw new Error("not needed"); },
  });
  await card.show(12);
  const a = card.panels.get("a").el;
  const b = card.panels.get("b").el;
  assert.equal(card.el.dataset.state, "ready");
  assert.equal(a.dataset.traces, "9");
  assert.equal(a.dataset.step, "10");
  assert.equal(b.dataset.step, "20");
  assert.equal(card.panels.get("a").step.textContent, "step 10 (nearest to 12)");
  assert.equal(card.overlay.dataset.traces, "2");
  const bandsCall = Plotly.calls.find((c) => c.el === card.panels.get("a").plot);
  assert.equal(bandsCall.layout.shapes[0].x0, 12);
  assert.deepEqual(asked, [["a", false], ["b", false]]); // the bands need no buckets
  await card.show(12); // read once
  assert.equal(asked.length, 2);
  card.select.value = "heatmap";
  for (const fn of card.select.listeners.get("change")) await fn();
  assert.deepEqual(asked.slice(2), [["a", true], ["b", true]]); // the heat map's buckets, read when first shown
  assert.equal(Plotly.calls.at(-1).data[0].type, "heatmap");
  assert.equal(card.el.dataset.view, "heatmap");
});

test("a run whose read fails shows the Portal's words in its panel; the other still draws", async () => {
  const card = createHistogramCard({
    tag: "w", Plotly: fakePlotly(),
    runs: [{ key: "a", label: "a" }, { key: "b", label: "b" }, { key: "c", label: "c", missing: true }],
    fetchSeries: async (key) => {
      if (key === "b") throw new Error("the histograms of w could not be read: file is damaged");
      return answer;
    },
    readRange: async () => null,
  });
  await card.show(0);
  const b = card.panels.get("b");
  assert.equal(b.el.dataset.state, "error");
  assert.equal(b.error.hidden, false);
  assert.match(b.error.textContent, /file is damaged/);
  assert.equal(card.panels.get("a").el.dataset.state, "ready");
  assert.equal(card.panels.get("c").el.dataset.state, "missing");
  assert.match(card.panels.get("c").body.textContent, /no histograms tag "w" in this run/);
  assert.equal(card.overlay.dataset.traces, "1");
});

test("the heat map picked before a card's first answer: the superseded read shows no error and both views draw", async () => {
  // The pane's feed answers one read per panel: the heat map's read replaces the bands' read still waiting.
  const feed = new MediaFeed();
  const Plotly = fakePlotly();
  let reads = 0;
  const card = createHistogramCard({
    tag: "w", Plotly, runs: [{ key: "a", label: "a" }],
    fetchSeries: (run) => { reads += 1; return feed.wait(run, "histograms", "w", () => true); },
    readRange: async () => null,
  });
  const shown = card.show(10);
  await Promise.resolve();
  card.select.value = "heatmap";
  const changed = Promise.all([...card.select.listeners.get("change")].map((fn) => fn()));
  await Promise.resolve();
  feed.receive({ type: "media", kind: "histograms", run: "a", tag: "w", requested_step: null, ...answer });
  await Promise.all([shown, changed]);
  const panel = card.panels.get("a");
  assert.equal(panel.error.hidden, true, panel.error.textContent);
  assert.notEqual(panel.el.dataset.state, "error");
  assert.equal(panel.el.dataset.view, "heatmap");
  assert.equal(Plotly.calls.filter((c) => c.el === panel.plot).at(-1).data[0].type, "heatmap");
  assert.equal(panel.el.dataset.step, "10");
  assert.equal(card.overlay.dataset.traces, "1");
  // Back to the bands: drawn from the one answer, not read again, no error.
  card.select.value = "bands";
  for (const fn of card.select.listeners.get("change")) await fn();
  assert.equal(panel.el.dataset.view, "bands");
  assert.equal(panel.error.hidden, true);
  assert.equal(reads, 2);
});

test("a read superseded by a read the card did not make leaves its panel waiting, without an error", async () => {
  const feed = new MediaFeed();
  const card = createHistogramCard({
    tag: "w", Plotly: fakePlotly(), runs: [{ key: "a", label: "a" }],
    fetchSeries: (run) => feed.wait(run, "histograms", "w", () => true), readRange: async () => null,
  });
  const shown = card.show(0);
  await Promise.resolve();
  feed.wait("a", "histograms", "w", () => true).catch(() => {}); // another card's read of the same panel
  await shown;
  const panel = card.panels.get("a");
  assert.equal(panel.error.hidden, true);
  assert.equal(panel.el.dataset.state, "loading");
  // Shown again once the answer is held: read again, drawn.
  feed.receive({ type: "media", kind: "histograms", run: "a", tag: "w", requested_step: null, ...answer });
  await card.show(0);
  assert.equal(panel.el.dataset.state, "ready");
});

test("a histogram card refreshed (a live tag grew) reads its series again and draws the new steps", async () => {
  const Plotly = fakePlotly();
  let served = answer;
  let reads = 0;
  const card = createHistogramCard({
    tag: "w", Plotly, runs: [{ key: "a", label: "", color: "#1f77b4" }],
    fetchSeries: async () => { reads += 1; return served; },
    readRange: async () => { throw new Error("not needed"); },
  });
  await card.show(10);
  assert.equal(card.panels.get("a").el.dataset.steps, "2");
  served = { ...answer, total: 3, steps: [0, 10, 20], wall_times: [1, 2, 3], summary: [...answer.summary, answer.summary[1]],
    buckets: [...answer.buckets, answer.buckets[1]] };
  await card.show(10);
  assert.equal(reads, 1); // shown again: not read again
  await card.refresh(20);
  assert.equal(reads, 2);
  assert.equal(card.panels.get("a").el.dataset.steps, "3");
  assert.equal(card.panels.get("a").el.dataset.step, "20");
  assert.equal(card.el.dataset.refreshed, "1");
});
