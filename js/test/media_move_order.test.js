// The order in which cards follow a cursor move (shared/media/move_order.js): image and text cards first, the
// histogram cards after their thumbnails and a rest, none for a move a newer one superseded; and a read aborted by
// a newer move (a superseded error) never shows as an error in a card.
import assert from "node:assert/strict";
import { test } from "node:test";
import { supersededError } from "../shared/media/card.js";
import { createHistogramCard } from "../shared/media/histogram_card.js";
import { createImageCard } from "../shared/media/image_card.js";
import { imagesSettled, rest, showInOrder } from "../shared/media/move_order.js";
import { installFakeDocument } from "./fake_dom.js";

installFakeDocument();

/** A card whose show(step) logs `name:step` when asked and `name:step:drawn` when its read answers (after `ms`). */
function loggedCard(name, log, ms = 0) {
  return {
    el: { name },
    async show(step) {
      log.push(`${name}:${step}`);
      await new Promise((resolve) => setTimeout(resolve, ms));
      log.push(`${name}:${step}:drawn`);
    },
  };
}

test("a move shows the image and text cards first, the histogram cards once those drew and settled", async () => {
  const log = [];
  const cards = [
    { kind: "histograms", card: loggedCard("h1", log) },
    { kind: "images", card: loggedCard("img", log, 5) },
    { kind: "histograms", card: loggedCard("h2", log) },
    { kind: "text", card: loggedCard("txt", log, 1) },
  ];
  const settled = async (el) => { log.push(`settled:${el.name}`); };
  assert.equal(await showInOrder(cards, 7, { restMs: 1, settled }), "done");
  const at = (entry) => log.indexOf(entry);
  // Both first cards asked at once, before any histogram card.
  assert.ok(at("img:7") < at("h1:7") && at("txt:7") < at("h1:7"));
  // The histogram cards only after the image card drew and its thumbnails settled.
  assert.ok(at("settled:img") < at("h1:7") && at("settled:txt") < at("h2:7"));
  assert.ok(at("img:7:drawn") < at("h1:7"));
  assert.ok(log.includes("h1:7:drawn") && log.includes("h2:7:drawn"));
});

test("a move superseded before its histogram cards start never starts them", async () => {
  const log = [];
  const move = new AbortController();
  const cards = [{ kind: "images", card: loggedCard("img", log) }, { kind: "histograms", card: loggedCard("h", log) }];
  const shown = showInOrder(cards, 3, { signal: move.signal, restMs: 10_000, settled: async () => {} });
  await new Promise((resolve) => setTimeout(resolve, 5));
  move.abort(); // the next move: the rest ends at once
  assert.equal(await shown, "superseded");
  assert.deepEqual(log, ["img:3", "img:3:drawn"]);
  // A view of histogram cards alone: they show after the rest (a quick next move still takes over).
  const alone = [];
  assert.equal(await showInOrder([{ kind: "histograms", card: loggedCard("h", alone) }], 4, { restMs: 1 }), "done");
  assert.deepEqual(alone, ["h:4", "h:4:drawn"]);
});

/** An img of the fake page: `complete` until made pending, its load/error listeners kept. */
function fakeImage(complete) {
  const listeners = {};
  return { complete, listeners, addEventListener(type, fn) { listeners[type] = fn; }, fire(type) { listeners[type]?.(); } };
}

test("a card's thumbnails settle when each has loaded or failed, at the limit, or when the move is superseded", async () => {
  const loaded = fakeImage(true);
  const a = fakeImage(false);
  const b = fakeImage(false);
  const el = { querySelectorAll: () => [loaded, a, b] };
  let done = false;
  const settled = imagesSettled(el, undefined, 60_000).then(() => { done = true; });
  a.fire("load");
  await new Promise((resolve) => setTimeout(resolve, 1));
  assert.equal(done, false); // b still loading
  b.fire("error"); // a failed thumbnail settles too (its card shows the failure, the histograms go on)
  await settled;
  assert.equal(done, true);
  // Nothing pending: at once. The limit: a thumbnail that never loads holds the histograms back at most limitMs.
  await imagesSettled({ querySelectorAll: () => [loaded] });
  const started = Date.now();
  await imagesSettled({ querySelectorAll: () => [fakeImage(false)] }, undefined, 20);
  assert.ok(Date.now() - started >= 15);
  const move = new AbortController();
  const waiting = imagesSettled({ querySelectorAll: () => [fakeImage(false)] }, move.signal, 60_000);
  move.abort();
  await waiting; // would time out the test if the abort did not end it
  await rest(60_000, move.signal); // an aborted move does not rest
});

test("a read aborted by a newer move leaves the card waiting, never showing an error", async () => {
  const image = createImageCard({ tag: "s", runs: [{ key: "r", label: "" }], range: { step_min: 0, step_max: 9 },
    fetchImages: async () => { throw supersededError(); } });
  await image.show(4);
  const panel = image.panels.get("r");
  assert.equal(panel.error.hidden, true);
  assert.notEqual(panel.el.dataset.state, "error");
  const answer = { steps: [0, 10], reduced: true, total: 11, summary: [[1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1],
    [1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1]], wall_times: [0, 1], basis_points: [0, 668, 1587, 3085, 5000, 6915, 8413, 9332, 10000],
  buckets: null };
  const hist = createHistogramCard({ tag: "w", runs: [{ key: "r", label: "" }], Plotly: { react() {} },
    fetchSeries: async () => answer, readRange: async () => { throw supersededError(); } });
  await hist.show(5);
  const hp = hist.panels.get("r");
  assert.equal(hp.error.hidden, true);
  assert.notEqual(hp.el.dataset.state, "error");
  // The Portal's own failure still shows in words.
  const failing = createHistogramCard({ tag: "w", runs: [{ key: "r", label: "" }], Plotly: { react() {} },
    fetchSeries: async () => answer, readRange: async () => { throw new Error("the store is gone"); } });
  await failing.show(5);
  assert.equal(failing.panels.get("r").el.dataset.state, "error");
  assert.equal(failing.panels.get("r").error.textContent, "the store is gone");
});

test("a histogram card moved along the same answer moves its cursor line, not its traces", async () => {
  const calls = [];
  const Plotly = { react: (el, data, layout) => calls.push(["react", el, data, layout]),
    relayout: (el, update) => calls.push(["relayout", el, update]) };
  const answer = { steps: [0, 10], reduced: false, total: 2, wall_times: [0, 1],
    basis_points: [0, 668, 1587, 3085, 5000, 6915, 8413, 9332, 10000],
    summary: [[1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1], [1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1]],
    buckets: [[[0, 1, 1]], [[0, 1, 2]]] };
  const card = createHistogramCard({ tag: "w", runs: [{ key: "r", label: "" }], Plotly,
    fetchSeries: async () => ({ ...answer }), readRange: async () => { throw new Error("not needed"); } });
  await card.show(3);
  const plot = card.panels.get("r").plot;
  assert.deepEqual(calls.filter((c) => c[1] === plot).map((c) => c[0]), ["react"]);
  await card.show(8);
  const onPlot = calls.filter((c) => c[1] === plot);
  assert.deepEqual(onPlot.map((c) => c[0]), ["react", "relayout"]);
  assert.equal(onPlot[1][2].shapes[0].x0, 8); // the cursor's line at the new step
  assert.equal(card.panels.get("r").el.dataset.step, "10"); // the overlay at the new nearest step
  assert.equal(calls.filter((c) => c[1] === card.overlay).length, 2); // the overlay redrawn each move
  // A new answer (a live tag's refresh) is drawn whole again.
  await card.refresh(8);
  assert.equal(calls.filter((c) => c[1] === plot).at(-1)[0], "react");
});
