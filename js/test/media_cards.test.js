// The image and text cards of the media section (shared/media/image_card.js, text_card.js): what they draw for the
// Portal's answers, the step label, the slider, and the Portal's words when a read fails.
import assert from "node:assert/strict";
import { test } from "node:test";
import { stepLabel } from "../shared/media/card.js";
import { createImageCard, imageFigure } from "../shared/media/image_card.js";
import { createTextCard, textLayout, textNode } from "../shared/media/text_card.js";
import { installFakeDocument } from "./fake_dom.js";

installFakeDocument();
const all = (node, tag) => {
  const out = [];
  const walk = (n) => {
    for (const c of n.children) {
      if (typeof c === "string") continue;
      if (c.tagName === tag.toUpperCase()) out.push(c);
      walk(c);
    }
  };
  walk(node);
  return out;
};

test("the step label names the step shown and, when it differs, the one asked for", () => {
  assert.equal(stepLabel(1200, 1234), "step 1,200 (nearest to 1,234)");
  assert.equal(stepLabel(1200, 1200), "step 1,200");
  assert.equal(stepLabel(null, 5), "");
});

const images = (step) => ({
  run_id: "r", tag: "samples", requested_step: null, step,
  images: [0, 1, 2].map((index) => ({ index, digest: `sha256:${index}`, content_type: "image/png", width: 64, height: 48,
    caption: index === 1 ? "<b>cat</b>" : null, size_bytes: 100, url: `/api/v2/stellar/runs/r/images/${index}`,
    thumbnail_url: `/api/v2/stellar/runs/r/images/${index}?thumbnail=1` })),
});

test("an image card shows every image of the nearest step, links each thumbnail to its full image", async () => {
  const asked = [];
  const card = createImageCard({ tag: "samples", runs: [{ key: "r", label: "" }], range: { step_min: 0, step_max: 2000 },
    fetchImages: async (key, step) => { asked.push([key, step]); return images(1200); },
    resolve: (u) => `http://portal/${u.replace(/^\//, "")}` });
  await card.show(1234);
  assert.deepEqual(asked, [["r", 1234]]);
  const panel = card.panels.get("r");
  assert.equal(panel.step.textContent, "step 1,200 (nearest to 1,234)");
  assert.equal(panel.el.dataset.step, "1200");
  assert.equal(panel.el.dataset.images, "3");
  const imgs = all(card.el, "img");
  assert.equal(imgs.length, 3);
  assert.equal(imgs[0].getAttribute("src"), "http://portal/api/v2/stellar/runs/r/images/0?thumbnail=1");
  const links = all(card.el, "a");
  assert.equal(links[1].getAttribute("href"), "http://portal/api/v2/stellar/runs/r/images/1");
  assert.equal(links[1].getAttribute("target"), "_blank");
  const captions = all(card.el, "figcaption");
  assert.equal(captions.length, 1);
  assert.equal(captions[0].textContent, "<b>cat</b>"); // text, not markup
  assert.equal(card.slider.input.value, "1234");
  assert.equal(card.el.dataset.state, "ready");
});

test("moving an image card's slider asks the cursor, a failed read shows the Portal's words", async () => {
  const moves = [];
  const card = createImageCard({ tag: "samples", runs: [{ key: "a", label: "a" }, { key: "b", label: "b" }],
    range: { step_min: 0, step_max: 100 }, onStep: (s) => moves.push(s),
    fetchImages: async (key, step) => {
      if (key === "b") throw new Error("no images of tag samples");
      return images(step);
    } });
  card.slider.input.value = "40";
  for (const fn of card.slider.input.listeners.get("input")) fn();
  assert.deepEqual(moves, [40]);
  await card.show(40);
  assert.equal(card.panels.get("a").step.textContent, "step 40");
  assert.equal(card.panels.get("b").el.dataset.state, "error");
  assert.equal(card.panels.get("b").error.textContent, "no images of tag samples");
  assert.equal(card.el.dataset.state, "ready");
  card.show(500); // beyond the range: the slider stays at its end
  assert.equal(card.slider.input.value, "100");
});

test("a later step's answer wins even when an earlier one arrives after it", async () => {
  let release;
  const slow = new Promise((resolve) => { release = resolve; });
  const card = createImageCard({ tag: "t", runs: [{ key: "r" }], range: { step_min: 0, step_max: 10 },
    fetchImages: async (key, step) => (step === 1 ? slow : images(9)) });
  const first = card.show(1);
  await card.show(9);
  release(images(1));
  await first;
  assert.equal(card.panels.get("r").el.dataset.step, "9");
});

test("text lays out by shape: one string, a list, a table, a higher tensor as rows of its last axis", () => {
  assert.equal(textLayout([], ["hi"]).kind, "single");
  assert.deepEqual(textLayout([3], ["a", "b", "c"]), { kind: "list", rows: [["a"], ["b"], ["c"]], rowNames: null });
  assert.deepEqual(textLayout([2, 2], ["a", "b", "c", "d"]), { kind: "table", rows: [["a", "b"], ["c", "d"]], rowNames: null });
  const cube = textLayout([2, 2, 1], ["a", "b", "c", "d"]);
  assert.deepEqual(cube.rowNames, ["[0, 0]", "[0, 1]", "[1, 0]", "[1, 1]"]);
  assert.equal(textLayout([5, 5], ["a"]).kind, "single"); // a shape the strings do not fill: as a list
  const table = textNode([2, 3], ["<script>x</script>", "b", "c", "d", "e", "f"]);
  assert.equal(table.tagName, "TABLE");
  assert.equal(all(table, "tr").length, 2);
  assert.equal(all(table, "td").length, 6);
  assert.equal(all(table, "td")[0].textContent, "<script>x</script>");
  assert.equal(all(table, "script").length, 0);
});

test("a text card shows each run's strings at its nearest step", async () => {
  const card = createTextCard({ tag: "notes", runs: [{ key: "a", label: "a" }, { key: "b", label: "b" }],
    range: { step_min: 0, step_max: 10 },
    fetchText: async (key, step) => ({ tag: "notes", requested_step: step, step: key === "a" ? 4 : 6, wall_time: 1,
      shape: [2, 2], text: [`${key}1`, `${key}2`, `${key}3`, `${key}4`] }) });
  await card.show(5);
  assert.equal(card.panels.get("a").step.textContent, "step 4 (nearest to 5)");
  assert.equal(card.panels.get("b").step.textContent, "step 6 (nearest to 5)");
  assert.equal(all(card.panels.get("b").body, "td").map((td) => td.textContent).join(","), "b1,b2,b3,b4");
  assert.equal(imageFigure({ index: 0, url: "/x", thumbnail_url: null }).tagName, "FIGURE");
});

test("a live tag's new steps widen the slider of an image or a text card, keeping the step it shows", async () => {
  const moves = [];
  const card = createImageCard({ tag: "samples", runs: [{ key: "r" }], range: { step_min: 0, step_max: 100 },
    onStep: (s) => moves.push(s), fetchImages: async (key, step) => images(step) });
  await card.show(500); // beyond the range the card was made with: the slider stops at its end
  assert.equal(card.slider.input.value, "100");
  card.setRange({ step_min: 0, step_max: 800 }); // `…/media` says the tag reached step 800
  assert.equal(card.slider.input.getAttribute("max"), "800");
  assert.equal(card.slider.input.value, "500"); // the cursor's step, now inside the range
  card.slider.input.value = "750";
  for (const fn of card.slider.input.listeners.get("input")) fn();
  assert.deepEqual(moves, [750]);
  const text = createTextCard({ tag: "notes", runs: [{ key: "r" }], range: { step_min: 0, step_max: 10 },
    fetchText: async () => ({ step: 10, shape: [], text: ["x"] }) });
  text.setRange({ step_min: 0, step_max: 20 });
  assert.equal(text.slider.input.getAttribute("max"), "20");
});

test("an image link with an opener opens through it instead of following the thumbnail's address", () => {
  const opened = [];
  const figure = imageFigure({ index: 0, digest: "sha256:aa", url: "", thumbnail_url: "blob:thumb" }, (u) => u, "t",
    (image, link) => opened.push([image.digest, link.className]));
  const [link] = all(figure, "a");
  assert.equal(link.getAttribute("href"), "#"); // not the thumbnail
  link.click();
  assert.deepEqual(opened, [["sha256:aa", "media-image-link"]]);
});
