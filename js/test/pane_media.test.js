// The pane's Media section (pane/media_section.js): lazy cards for the tags on screen only (the `media_visible`
// trait), the step cursor moving every card to its tag's nearest step (the `media_step` trait), the kernel's media
// and image messages answering the cards, and the Portal's words in a card whose read failed.
import assert from "node:assert/strict";
import { test } from "node:test";
import { MediaFeed, MediaSection, cardKey, localRange } from "../pane/media_section.js";
import { installFakeDocument } from "./fake_dom.js";

installFakeDocument();

function fakeModel(state = {}) {
  const values = { run_id: "r1", media_visible: [], media_step: null, ...state };
  const saved = [];
  return { values, saved, get: (k) => values[k], set: (k, v) => { values[k] = v; }, save_changes: () => saved.push({ ...values }) };
}

function fakeScreen() {
  const watched = new Map();
  return {
    watched,
    observe: (el, onChange) => {
      watched.set(el.dataset.tag, onChange);
      return () => watched.delete(el.dataset.tag);
    },
  };
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 0));
const find = (node, pred) => {
  for (const c of node.children) {
    if (typeof c === "string") continue;
    if (pred(c)) return c;
    const f = find(c, pred);
    if (f) return f;
  }
  return null;
};
const byClass = (node, name) => find(node, (c) => c.className.split(" ").includes(name));

const TAGS = { tags: [
  { kind: "images", tag: "samples", count: 3, step_min: 0, step_max: 200 },
  { kind: "text", tag: "notes", count: 2, step_min: 0, step_max: 100 },
  { kind: "histograms", tag: "w", count: 3, step_min: 0, step_max: 200 },
], unavailable: null };

function section() {
  const model = fakeModel();
  const screen = fakeScreen();
  const urls = [];
  const feed = new MediaFeed();
  const receiveImage = feed.receiveImage.bind(feed);
  feed.receiveImage = (msg, buf) => receiveImage(msg, buf, () => { urls.push(msg.digest); return `blob:${msg.digest}`; });
  const media = new MediaSection({ model, Plotly: null, observe: screen.observe, feed });
  return { model, screen, media, urls };
}

test("a slot per tag, grouped by kind; no card and no read until a slot is on screen", () => {
  const { model, screen, media } = section();
  media.setTags(TAGS);
  assert.equal(media.el.hidden, false);
  assert.deepEqual([...screen.watched.keys()].sort(), ["notes", "samples", "w"]);
  assert.equal(byClass(media.kindBoxes.get("images").el, "tau-pane-media-count").textContent, "1 image tag");
  assert.equal(byClass(media.el, "media-card"), null); // lazy: nothing drawn
  assert.deepEqual(model.values.media_visible, []);
  screen.watched.get("samples")(true);
  assert.deepEqual(model.values.media_visible, ["images/samples"]);
  assert.ok(byClass(media.el, "media-images-card"));
  assert.equal(byClass(media.el, "media-text-card"), null);
  screen.watched.get("samples")(false);
  assert.deepEqual(model.values.media_visible, []);
});

test("an image card shows the kernel's images at its tag's latest step, bytes from the image message", async () => {
  const { screen, media, urls } = section();
  media.setTags(TAGS);
  screen.watched.get("samples")(true);
  media.receive({ type: "image", digest: "sha256:aa", content_type: "image/png", n: 3 }, [new Uint8Array([1, 2, 3])]);
  media.receive({ type: "media", kind: "images", tag: "samples", run: "r1", requested_step: 200, step: 200,
    images: [{ index: 0, digest: "sha256:aa", caption: "a cat", width: 8, height: 8 }] });
  await settle();
  const card = byClass(media.el, "media-images-card");
  const img = find(card, (c) => c.tagName === "IMG");
  assert.equal(img.getAttribute("src") ?? img.src, "blob:sha256:aa");
  assert.deepEqual(urls, ["sha256:aa"]);
  assert.equal(byClass(card, "media-step").textContent, "step 200");
});

test("the cursor moves every card on screen to the step nearest it, labelled, and tells the kernel", async () => {
  const { model, screen, media } = section();
  media.setTags(TAGS);
  screen.watched.get("samples")(true);
  screen.watched.get("notes")(true);
  media.cursor.set(123, "curve");
  assert.equal(model.values.media_step, 123);
  assert.equal(media.stepInput.value, "123");
  media.receive({ type: "media", kind: "images", tag: "samples", run: "r1", requested_step: 123, step: 100, images: [] });
  media.receive({ type: "media", kind: "text", tag: "notes", run: "r1", requested_step: 123, step: 100, shape: [],
    text: ["hello"] });
  await settle();
  const images = byClass(media.el, "media-images-card");
  const text = byClass(media.el, "media-text-card");
  assert.equal(byClass(images, "media-step").textContent, "step 100 (nearest to 123)");
  assert.equal(byClass(text, "media-step").textContent, "step 100 (nearest to 123)");
  assert.equal(byClass(text, "media-text").textContent, "hello");
});

test("a read that failed shows the Portal's words in the card, never a blank card", async () => {
  const { screen, media } = section();
  media.setTags(TAGS);
  screen.watched.get("notes")(true);
  media.receive({ type: "media", kind: "text", tag: "notes", run: "r1", requested_step: 100,
    error: "the Portal answered 404 NOT_FOUND: text tag 'notes' has no value near step 100" });
  await settle();
  const card = byClass(media.el, "media-text-card");
  const error = byClass(card, "media-error");
  assert.equal(error.hidden, false);
  assert.match(error.textContent, /404 NOT_FOUND: text tag 'notes'/);
});

test("a typed step that is not an int64 step is refused in words and moves nothing", () => {
  const { model, media } = section();
  media.setTags(TAGS);
  media.stepInput.value = "12.5";
  media.typed();
  assert.match(media.stepNote.textContent, /not a whole step/);
  assert.equal(model.values.media_step, null);
  media.stepInput.value = "99999999999999999999";
  media.typed();
  assert.match(media.stepNote.textContent, /(outside int64|not a whole step)/);
  media.stepInput.value = "40";
  media.typed();
  assert.equal(model.values.media_step, 40);
});

test("a Kusto-served run's section says in words where its media are", () => {
  const { media } = section();
  media.setTags({ tags: [], unavailable: "this run's media live with its store" });
  assert.equal(media.el.hidden, false);
  assert.equal(media.note.hidden, false);
  assert.equal(media.note.textContent, "this run's media live with its store");
  media.setTags({});
  assert.equal(media.el.hidden, true);
});

test("a tag gone from the trait loses its slot", () => {
  const { screen, media } = section();
  media.setTags(TAGS);
  screen.watched.get("samples")(true);
  media.setTags({ tags: TAGS.tags.filter((t) => t.tag !== "samples") });
  assert.equal(media.slots.has(cardKey("images", "samples")), false);
  assert.equal(screen.watched.has("samples"), false);
  assert.deepEqual(media.model.values.media_visible, []);
});

test("the nearest-step read of a reduced histogram answers from the steps the kernel sent", () => {
  const answer = { steps: [0, 100, 200], buckets: [[[0, 1, 1]], [[0, 1, 2]], [[0, 1, 3]]], reduced: true };
  assert.deepEqual(localRange(answer, { step_min: 120, max_steps: 1 }).steps, [200]);
  assert.deepEqual(localRange(answer, { step_max: 120, max_steps: 2 }).steps, [0, 100]);
  assert.deepEqual(localRange(answer, { step_max: 120, max_steps: 2 }).buckets, [[[0, 1, 1]], [[0, 1, 2]]]);
});

test("a newer wait for a card rejects the older one; a held answer that matches is given at once", async () => {
  const feed = new MediaFeed();
  const first = feed.wait("r", "text", "t", (m) => m.requested_step === 1);
  const second = feed.wait("r", "text", "t", (m) => m.requested_step === 2);
  await assert.rejects(first, /superseded/);
  feed.receive({ run: "r", kind: "text", tag: "t", requested_step: 2, step: 2, text: ["x"] });
  assert.equal((await second).step, 2);
  assert.equal((await feed.wait("r", "text", "t", (m) => m.requested_step === 2)).text[0], "x");
});

test("a view opened after the cursor was set starts at the kernel's media_step", () => {
  const model = fakeModel({ media_step: 10 });
  const media = new MediaSection({ model, Plotly: null, observe: fakeScreen().observe });
  assert.equal(media.cursor.get(), 10);
  assert.equal(media.stepInput.value, "10");
  assert.deepEqual(model.saved, []); // the kernel's own step is not sent back
});

test("two views of one pane: media_visible is the union of their cards; the cursor one view moves, the other follows", () => {
  const model = fakeModel();
  const a = fakeScreen();
  const b = fakeScreen();
  const one = new MediaSection({ model, Plotly: null, observe: a.observe });
  const two = new MediaSection({ model, Plotly: null, observe: b.observe });
  one.setTags(TAGS);
  two.setTags(TAGS);
  a.watched.get("samples")(true);
  b.watched.get("notes")(true);
  assert.deepEqual(model.values.media_visible, ["images/samples", "text/notes"]);
  a.watched.get("samples")(false);
  assert.deepEqual(model.values.media_visible, ["text/notes"]);
  one.cursor.set(7, "curve");
  assert.equal(model.values.media_step, 7);
  const saves = model.saved.length;
  two.followModel();
  assert.equal(two.cursor.get(), 7);
  assert.equal(model.saved.length, saves); // following is not sent back
  two.dispose();
  assert.deepEqual(model.values.media_visible, []);
});

test("the pane's search box filters the media tags as it filters the metrics", () => {
  const { model, screen, media } = section();
  media.setTags(TAGS);
  screen.watched.get("samples")(true);
  media.setTags(TAGS, "^no");
  assert.deepEqual([...media.slots.keys()], ["text/notes"]);
  assert.equal(media.kindBoxes.get("images").el.hidden, true);
  assert.deepEqual(model.values.media_visible, []); // the hidden card is read no more
  media.setTags(TAGS, "zzz");
  assert.equal(media.el.hidden, true);
});

const COMPARED = { tags: TAGS.tags, unavailable: null, compared: { r2: { tags: [
  { kind: "images", tag: "samples", count: 5, step_min: 0, step_max: 400 },
  { kind: "histograms", tag: "w", count: 3, step_min: 0, step_max: 200 },
], unavailable: null } } };
const RUNS = [{ key: "r1", label: "lr=0.1", color: "#111" }, { key: "r2", label: "lr=0.2", color: "#222" }];

function comparedSection(runs = RUNS) {
  const model = fakeModel();
  const screen = fakeScreen();
  let drawn = runs;
  const media = new MediaSection({ model, Plotly: null, observe: screen.observe, runs: () => drawn });
  return { model, screen, media, setRuns: (r) => { drawn = r; } };
}

test("a pane comparing runs shows each run's images at the one cursor step side by side, labelled and coloured", async () => {
  const { model, screen, media } = comparedSection();
  media.setTags(COMPARED);
  screen.watched.get("samples")(true);
  assert.deepEqual(model.values.media_visible, ["images/samples"]); // only the card on screen, once for all runs
  media.cursor.set(150, "curve");
  media.receive({ type: "media", kind: "images", tag: "samples", run: "r2", requested_step: 150, step: 160, images: [] });
  media.receive({ type: "media", kind: "images", tag: "samples", run: "r1", requested_step: 150, step: 100, images: [] });
  await settle();
  const card = byClass(media.el, "media-images-card");
  const panels = byClass(card, "media-panels");
  assert.equal(panels.dataset.runs, "2");
  const [one, two] = panels.children;
  assert.equal(one.dataset.run, "r1");
  assert.equal(two.dataset.run, "r2");
  assert.equal(byClass(one, "media-run-label").textContent, "lr=0.1");
  assert.match(byClass(two, "media-swatch").getAttribute("style"), /#222/);
  assert.equal(byClass(one, "media-step").textContent, "step 100 (nearest to 150)");
  assert.equal(byClass(two, "media-step").textContent, "step 160 (nearest to 150)");
  // The card's slider runs over the tag's steps in every run (r2's reach 400).
  assert.equal(byClass(card, "media-slider").getAttribute("max"), "400");
});

test("a compared run without the tag gets a panel saying so; a run joining later gets its panel", async () => {
  const { screen, media, setRuns } = comparedSection([RUNS[0]]);
  media.setTags(COMPARED);
  screen.watched.get("notes")(true);
  let card = byClass(media.el, "media-text-card");
  assert.equal(byClass(card, "media-panels").dataset.runs, "1");
  assert.equal(byClass(card, "media-run"), null); // one run: no run label, as before
  setRuns(RUNS); // compare= resolved: r2 is drawn too
  media.runsChanged();
  card = byClass(media.el, "media-text-card");
  const two = byClass(card, "media-panels").children[1];
  assert.equal(two.dataset.state, "missing");
  assert.match(byClass(two, "media-note").textContent, /no text tag "notes" in this run/);
});

test("a live tag that grows widens the card's slider", () => {
  const { screen, media } = section();
  media.setTags(TAGS);
  screen.watched.get("samples")(true);
  const slider = () => byClass(byClass(media.el, "media-images-card"), "media-slider");
  assert.equal(slider().getAttribute("max"), "200");
  media.setTags({ tags: TAGS.tags.map((t) => (t.tag === "samples" ? { ...t, count: 9, step_max: 900 } : t)) });
  assert.equal(slider().getAttribute("max"), "900");
});

test("the full image link asks the kernel for the stored bytes and opens them, not the thumbnail", async () => {
  const model = fakeModel();
  const screen = fakeScreen();
  const opened = [];
  const asked = [];
  const win = { document: { body: { textContent: "" } }, location: { href: "" } };
  const feed = new MediaFeed();
  const receiveImage = feed.receiveImage.bind(feed);
  feed.receiveImage = (msg, buf) => receiveImage(msg, buf, () => `blob:${msg.thumbnail === false ? "full" : "thumb"}`);
  const media = new MediaSection({ model, Plotly: null, observe: screen.observe, feed,
    openWindow: (url) => { opened.push(url); return win; }, requestFull: (run, digest) => asked.push([run, digest]) });
  media.setTags(TAGS);
  screen.watched.get("samples")(true);
  media.receive({ type: "image", run: "r1", digest: "sha256:aa", content_type: "image/png", thumbnail: true, n: 1 },
    [new Uint8Array([1])]);
  media.receive({ type: "media", kind: "images", tag: "samples", run: "r1", requested_step: 200, step: 200,
    images: [{ index: 0, digest: "sha256:aa", caption: "", width: 800, height: 600 }] });
  await settle();
  const link = byClass(media.el, "media-image-link");
  assert.equal(find(link, (c) => c.tagName === "IMG").getAttribute("src"), "blob:thumb");
  link.click();
  assert.deepEqual(asked, [["r1", "sha256:aa"]]);
  assert.deepEqual(opened, [""]); // a window opened by the click, waiting for the bytes
  assert.equal(win.document.body.textContent, "reading the full image…");
  media.receive({ type: "image", run: "r1", digest: "sha256:aa", content_type: "image/jpeg", thumbnail: false, n: 2 },
    [new Uint8Array([1, 2])]);
  await settle();
  assert.equal(win.location.href, "blob:full");
  assert.equal(link.getAttribute("href"), "blob:full");
  link.click(); // held now: opened at once, not asked again
  assert.deepEqual(opened, ["", "blob:full"]);
  assert.equal(asked.length, 1);
});

test("a full image the kernel could not read says why in the window it opened", async () => {
  const feed = new MediaFeed();
  const win = { document: { body: { textContent: "" } }, location: { href: "" } };
  const media = new MediaSection({ model: fakeModel(), Plotly: null, observe: fakeScreen().observe, feed,
    openWindow: () => win, requestFull: () => {} });
  const link = { dataset: {}, attrs: {}, setAttribute(k, v) { this.attrs[k] = v; } };
  media.openFull({ digest: "sha256:bb" }, "r1", link);
  media.receive({ type: "image", run: "r1", digest: "sha256:bb", thumbnail: false, n: 0,
    error: "the Portal answered 404 NOT_FOUND: no image sha256:bb" }, []);
  await settle();
  assert.equal(link.dataset.full, "error");
  assert.match(win.document.body.textContent, /could not be read: the Portal answered 404/);
});
