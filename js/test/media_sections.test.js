// The media tags of a view in sections (shared/media/sections.js): by kind, filtered as the metric search filters,
// counted in tags, and drawn a page at a time (a run of 500 histogram tags creates a page of cards, not 500).
import assert from "node:assert/strict";
import { test } from "node:test";
import { mediaCountText, mediaSections, tagRange } from "../shared/media/sections.js";
import { PagedSections } from "../shared/paged_sections.js";
import { installFakeDocument } from "./fake_dom.js";

const doc = installFakeDocument();
const tag = (kind, name, lo = 0, hi = 100) => ({ kind, tag: name, count: 3, step_min: lo, step_max: hi });

test("tags of every run grouped by kind in a fixed order, each tag once, sorted", () => {
  const tags = new Map([
    ["a", [tag("text", "notes"), tag("histograms", "w/b"), tag("histograms", "w/a"), tag("images", "samples")]],
    ["b", [tag("histograms", "w/a", -5, 50), tag("histograms", "grad/x")]],
  ]);
  const sections = mediaSections(tags);
  assert.deepEqual(sections.map((s) => [s.key, s.title, s.metrics, s.total, s.open]), [
    ["histograms", "Histograms", ["histograms/grad/x", "histograms/w/a", "histograms/w/b"], 3, true],
    ["images", "Images", ["images/samples"], 1, true],
    ["text", "Text", ["text/notes"], 1, true],
  ]);
  assert.deepEqual(tagRange(tags, "histograms", "w/a"), { step_min: -5, step_max: 100 });
  assert.equal(mediaCountText(sections[0]), "3 histogram tags");
  assert.equal(mediaCountText(sections[1]), "1 image tag");
});

test("the search box filters tags as it filters metrics; a kind left without a match is left out", () => {
  const tags = new Map([["a", [tag("histograms", "w/a"), tag("histograms", "grad/x"), tag("images", "samples")]]]);
  const sections = mediaSections(tags, { filter: "^w/" });
  assert.deepEqual(sections.map((s) => [s.key, s.metrics]), [["histograms", ["histograms/w/a"]]]);
  assert.equal(mediaCountText(sections[0]), "1 of 2 histogram tags");
  assert.deepEqual(mediaSections(tags, { open: { images: false } }).map((s) => s.open), [true, false]);
  assert.deepEqual(mediaSections(new Map([["a", []]])), []);
});

test("a run of 500 histogram tags creates the cards of one page, more on demand", () => {
  const tags = new Map([["a", Array.from({ length: 500 }, (_, i) => tag("histograms", `layer${String(i).padStart(3, "0")}/w`))]]);
  const created = [];
  const box = doc.createElement("div");
  const sections = new PagedSections(box, { prefix: "stellar", bodyClass: "media-cards", page: 12,
    item: (key) => { created.push(key); return doc.createElement("div"); }, toggle: () => {}, rerender: () => {} });
  sections.render(mediaSections(tags));
  assert.equal(created.length, 12);
  assert.equal(created[0], "histograms/layer000/w");
  assert.equal(box.find("stellar-more").textContent, "Show 12 more (488 not shown)");
});
