// The sections drawn a page at a time, shared by the loss pane and the Stellar run page (shared/paged_sections.js).
import assert from "node:assert/strict";
import { test } from "node:test";
import { PagedSections, filterNote, layout, moreText, pageCovering } from "../shared/paged_sections.js";
import { buildSections } from "../shared/sections.js";
import { installFakeDocument } from "./fake_dom.js";

const doc = installFakeDocument();
const names = (prefix, n) => Array.from({ length: n }, (_, i) => `${prefix}/m${i}`);

test("the more button says how many the next click adds and how many are not shown", () => {
  assert.equal(moreText(1769, 24), "Show 24 more (1,769 not shown)");
  assert.equal(moreText(5, 12), "Show 5 more (5 not shown)");
  assert.equal(moreText(0, 12), "");
});

test("going to a metric pages its section in whole pages, never fewer than shown", () => {
  assert.equal(pageCovering(0, 12, 12), 12);
  assert.equal(pageCovering(12, 12, 12), 24);
  assert.equal(pageCovering(30, 12, 12), 36);
  assert.equal(pageCovering(30, 48, 12), 48);
});

test("layout: a collapsed section shows nothing, an open one a page, more once paged further", () => {
  const sections = buildSections([...names("big", 30), ...names("small", 3)]);
  assert.deepEqual(sections.map((s) => [s.key, s.open]), [["big", false], ["small", true]]);
  const closed = layout(sections, new Map(), 12);
  assert.deepEqual(closed.map((l) => [l.names.length, l.left]), [[0, 0], [3, 0]]);
  const opened = buildSections([...names("big", 30), ...names("small", 3)], { open: { big: true } });
  const first = layout(opened, new Map(), 12);
  assert.deepEqual(first[0].names, names("big", 12));
  assert.equal(first[0].left, 18);
  const paged = layout(opened, new Map([["big", 24]]), 12);
  assert.equal(paged[0].names.length, 24);
  assert.equal(paged[0].left, 6);
});

test("the search note counts the matches among all metrics, and says when text is matched as text", () => {
  const metrics = [...names("train", 4), ...names("eval", 2)];
  assert.deepEqual(filterNote("", buildSections(metrics), metrics.length), { text: "", mode: "all" });
  const regex = filterNote("^eval/", buildSections(metrics, { filter: "^eval/" }), metrics.length);
  assert.deepEqual(regex, { text: "2 of 6 metrics match", mode: "regex" });
  const bad = filterNote("m(", buildSections(metrics, { filter: "m(" }), metrics.length);
  assert.equal(bad.mode, "substring");
  assert.equal(bad.text, "0 of 6 metrics match (not a valid regex: matched as text)");
});

function draw(open = {}) {
  const box = doc.createElement("div");
  const calls = { items: [], toggles: [], rerenders: 0 };
  const sections = new PagedSections(box, { prefix: "p", bodyClass: "p-grid", page: 12,
    item: (name) => {
      calls.items.push(name);
      const node = doc.createElement("div");
      node.setAttribute("data-metric", name);
      return node;
    },
    toggle: (key, isOpen) => calls.toggles.push([key, isOpen]),
    rerender: () => { calls.rerenders += 1; } });
  return { box, sections, calls, open };
}

test("render: one element per section in display order, its header, count and page of items", () => {
  const { box, sections, calls } = draw();
  const metrics = [...names("big", 30), "loss", ...names("small", 3)];
  const shown = sections.render(buildSections(metrics, { open: { big: true } }));
  assert.deepEqual(box.children.map((el) => el.dataset.section), ["Loss", "big", "small"]);
  assert.deepEqual(shown, ["loss", ...names("big", 12), ...names("small", 3)]);
  assert.deepEqual(calls.items, shown);
  const big = box.children[1];
  assert.equal(big.className, "p-section");
  assert.equal(big.dataset.open, "true");
  assert.equal(big.dataset.count, "30");
  assert.equal(big.find("p-section-title").textContent, "big");
  assert.equal(big.find("p-section-count").textContent, "30 metrics");
  assert.equal(big.find("p-section-head").getAttribute("aria-expanded"), "true");
  assert.equal(big.find("p-grid").children.length, 12);
  assert.equal(big.find("p-more").hidden, false);
  assert.equal(big.find("p-more").textContent, "Show 12 more (18 not shown)");
  assert.equal(box.children[2].find("p-more").hidden, true);
});

test("a collapsed section is its header only; clicking a header asks to toggle it", () => {
  const { box, sections, calls } = draw();
  sections.render(buildSections(names("big", 30)));
  const big = box.children[0];
  assert.equal(big.dataset.open, "false");
  assert.equal(big.find("p-grid").hidden, true);
  assert.equal(big.find("p-grid").children.length, 0);
  assert.equal(big.find("p-more").hidden, true);
  assert.equal(calls.items.length, 0);
  big.find("p-section-head").click();
  assert.deepEqual(calls.toggles, [["big", true]]);
});

test("more pages the section by a page and asks the caller to render again", () => {
  const { box, sections, calls } = draw();
  const laid = buildSections(names("big", 30), { open: { big: true } });
  sections.render(laid);
  box.children[0].find("p-more").click();
  assert.equal(calls.rerenders, 1);
  assert.equal(sections.render(laid).length, 24);
  box.children[0].find("p-more").click();
  assert.equal(sections.render(laid).length, 30);
  assert.equal(box.children[0].find("p-more").hidden, true);
  assert.equal(box.children[0].find("p-more").textContent, "");
});

test("reveal pages a section far enough to show a metric; sections gone from the layout are removed", () => {
  const { box, sections } = draw();
  const metrics = [...names("big", 30), ...names("small", 3)];
  sections.reveal("big", 29);
  assert.equal(sections.render(buildSections(metrics, { open: { big: true } })).includes("big/m29"), true);
  sections.render(buildSections(metrics, { filter: "^small/" }));
  assert.deepEqual(box.children.map((el) => el.dataset.section), ["small"]);
  assert.equal(sections.isOpen("big"), false);
});

test("an option left out is named", () => {
  assert.throws(() => new PagedSections(doc.createElement("div"), { prefix: "p", bodyClass: "b", page: 12 }),
    /option "item" is required/);
});
