// The pane's Media section (docs/loss-pane.md, "Histograms, images and text"): below the metrics, a section per
// kind (histograms, images, text) with a slot per tag of the `media` trait; a card is created only when its slot
// comes on screen, and the slots on screen are the `media_visible` trait, the only cards the kernel reads. One step
// cursor (shared/step_cursor.js) for the whole pane: a click on a loss curve, the step box or a card's slider moves
// it (the `media_step` trait), and every card shows its tag's stored step nearest it, labelled.
//
// The kernel pushes what the cards show as `media` messages and image bytes as `image` messages (the contract in
// taunotebook/pane.py); the shared cards (shared/media/) ask through fetch functions, answered here from them.
import { h } from "../shared/dom.js";
import { createHistogramCard } from "../shared/media/histogram_card.js";
import { createImageCard } from "../shared/media/image_card.js";
import { KINDS, mediaCountText, mediaSections } from "../shared/media/sections.js";
import { createTextCard } from "../shared/media/text_card.js";
import { createStepCursor } from "../shared/step_cursor.js";
import { reportVisible } from "./visible.js";

const TITLES = { histograms: "Histograms", images: "Images", text: "Text" };

/** A card's name in `media_visible`: "<kind>/<tag>" (shared/media/sections.js's card key). */
export function cardKey(kind, tag) {
  return `${kind}/${tag}`;
}

/**
 * What the kernel sent for the cards, and the cards' reads waiting for it: `wait(kind, tag, match)` is a Promise of
 * the first message for the card that `match` accepts (the held one when it does), rejected with the Portal's words
 * when the kernel's read failed; a newer wait for the same card rejects the older (its card moved on).
 */
export class MediaFeed {
  constructor() {
    this.held = new Map(); // card key → the last media message
    this.waiting = new Map(); // card key → { match, resolve, reject }
    this.images = new Map(); // digest → object URL of its thumbnail
  }

  wait(kind, tag, match) {
    const key = cardKey(kind, tag);
    const last = this.held.get(key);
    if (last && match(last)) return last.error ? Promise.reject(new Error(last.error)) : Promise.resolve(last);
    this.waiting.get(key)?.reject(new Error("superseded"));
    return new Promise((resolve, reject) => this.waiting.set(key, { match, resolve, reject }));
  }

  /** A `media` message: held, and handed to a read waiting for it (an error to any read of its card). */
  receive(msg) {
    const key = cardKey(msg.kind, msg.tag);
    this.held.set(key, msg);
    const w = this.waiting.get(key);
    if (!w || !(msg.error || w.match(msg))) return;
    this.waiting.delete(key);
    if (msg.error) w.reject(new Error(msg.error)); else w.resolve(msg);
  }

  /** An `image` message: its bytes as an object URL, for the listings that name its digest. */
  receiveImage(msg, buffer, makeUrl = defaultObjectUrl) {
    if (this.images.has(msg.digest)) return;
    this.images.set(msg.digest, makeUrl(buffer, msg.content_type));
  }

  /** An images answer with each image's URLs pointing at the bytes the kernel sent ("" for one not sent). */
  withUrls(msg) {
    const images = (msg.images || []).map((im) => {
      const url = this.images.get(im.digest) || "";
      return { ...im, url, thumbnail_url: url };
    });
    return { ...msg, images };
  }

  dispose(revoke = (url) => URL.revokeObjectURL(url)) {
    for (const url of this.images.values()) revoke(url);
    this.images.clear();
    for (const w of this.waiting.values()) w.reject(new Error("closed"));
    this.waiting.clear();
  }
}

function defaultObjectUrl(buffer, type) {
  const bytes = buffer instanceof ArrayBuffer ? new Uint8Array(buffer)
    : new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
  return URL.createObjectURL(new Blob([bytes], { type: type || "image/png" }));
}

/** The first step ≥ `min` / the last ≤ `max` of a held histograms answer, as `…/histograms` with that query answers
 *  (the card's nearest-step read when the cursor's step is not one the reduced answer kept). */
export function localRange(answer, query) {
  const steps = answer?.steps || [];
  const idx = [];
  steps.forEach((s, i) => {
    if ((query.step_min === undefined || s >= query.step_min) && (query.step_max === undefined || s <= query.step_max)) idx.push(i);
  });
  const keep = query.step_max !== undefined && query.step_min === undefined ? idx.slice(-(query.max_steps || idx.length))
    : idx.slice(0, query.max_steps || idx.length);
  return { ...answer, steps: keep.map((i) => steps[i]), buckets: answer?.buckets ? keep.map((i) => answer.buckets[i]) : null };
}

/**
 * The Media section of one pane view. `model` is the widget's model; `Plotly` draws the histograms (with heatmap);
 * `runLabel` names the run; `observe(el, onChange)` watches a slot come on and off screen (an IntersectionObserver
 * in the page; tests pass their own) and returns its disposer.
 */
export class MediaSection {
  constructor({ model, Plotly, runLabel = "", observe, feed = new MediaFeed(),
    cursor = createStepCursor(model.get("media_step") ?? null) }) {
    this.model = model;
    this.Plotly = Plotly;
    this.runLabel = runLabel;
    this.observe = observe;
    this.feed = feed;
    this.cursor = cursor;
    this.slots = new Map(); // card key → { el, kind, tag, info, card, onScreen, unobserve }
    this.order = [];
    this.onScreen = new Set();
    this.stepInput = h("input", { type: "text", class: "tau-pane-step-input", inputmode: "numeric", size: "10",
      "aria-label": "step cursor", placeholder: "latest",
      onkeydown: (e) => { if (e.key === "Enter") this.typed(); }, onchange: () => this.typed() });
    this.stepNote = h("span", { class: "tau-pane-step-note", role: "status" });
    this.note = h("p", { class: "tau-pane-media-note", hidden: true });
    this.kindBoxes = new Map();
    const sections = KINDS.map((kind) => {
      const count = h("span", { class: "tau-pane-media-count" });
      const grid = h("div", { class: "tau-pane-media-grid" });
      const el = h("section", { class: "tau-pane-media-kind", "data-kind": kind, hidden: true },
        h("h4", { class: "tau-pane-media-title" }, TITLES[kind], " ", count), grid);
      this.kindBoxes.set(kind, { el, count, grid });
      return el;
    });
    this.el = h("div", { class: "tau-pane-media", hidden: true },
      h("div", { class: "tau-pane-step-box" }, h("label", {}, "step ", this.stepInput), this.stepNote), this.note,
      ...sections);
    this.unsubscribe = this.cursor.subscribe((step, source) => this.moved(step, source));
  }

  /** The step box: a whole int64 step moves the cursor; anything else is refused in words. */
  typed() {
    const text = this.stepInput.value.trim();
    if (!text) return;
    const why = this.cursor.set(text, "input");
    this.stepNote.textContent = why;
    this.stepNote.dataset.error = String(Boolean(why));
  }

  moved(step, source) {
    if (source !== "input") this.stepInput.value = String(step);
    this.stepNote.textContent = "";
    this.el.dataset.step = String(step);
    if (source !== "initial" && source !== "model") { // "model": another view of this pane moved it
      this.model.set("media_step", step);
      this.model.save_changes();
    }
    for (const slot of this.slots.values()) if (slot.card && slot.onScreen) this.show(slot);
  }

  /** The step a card shows: the cursor's, else its tag's latest. */
  stepFor(slot) {
    const step = this.cursor.get();
    return step === null ? slot.info.step_max : step;
  }

  /**
   * The `media` trait (or the search box, `filter`) changed: a slot per tag the search matches, by kind and name
   * (shared/media/sections.js; new slots observed, gone ones removed), counts, the note.
   */
  setTags(media, filter = "") {
    const infos = new Map((media?.tags || []).map((t) => [cardKey(t.kind, t.tag), t]));
    const sections = mediaSections(new Map([[this.model.get("run_id"), media?.tags || []]]), { filter });
    const unavailable = media?.unavailable || "";
    this.note.hidden = !unavailable;
    this.note.textContent = unavailable;
    let any = Boolean(unavailable);
    const keep = new Set();
    this.order = [];
    for (const kind of KINDS) {
      const box = this.kindBoxes.get(kind);
      const section = sections.find((s) => s.key === kind);
      box.el.hidden = !section;
      box.count.textContent = section ? mediaCountText(section) : "";
      any ||= Boolean(section);
      for (const key of section?.metrics || []) {
        const info = infos.get(key);
        keep.add(key);
        this.order.push(key);
        let slot = this.slots.get(key);
        if (!slot) {
          const el = h("div", { class: "tau-pane-media-slot", "data-kind": kind, "data-tag": info.tag });
          slot = { el, kind, tag: info.tag, info, card: null, onScreen: false, unobserve: null };
          this.slots.set(key, slot);
          box.grid.append(el);
          slot.unobserve = this.observe(el, (on) => this.screen(key, on));
        } else {
          const grew = slot.info.step_max !== info.step_max || slot.info.count !== info.count;
          slot.info = info;
          if (grew && slot.card && slot.onScreen && this.cursor.get() === null && kind !== "histograms") this.show(slot);
        }
      }
    }
    for (const [key, slot] of this.slots) {
      if (keep.has(key)) continue;
      slot.unobserve?.();
      slot.el.remove();
      this.slots.delete(key);
      this.onScreen.delete(key);
    }
    this.el.hidden = !any;
    this.report();
  }

  screen(key, on) {
    const slot = this.slots.get(key);
    if (!slot || slot.onScreen === on) return;
    slot.onScreen = on;
    if (on) this.onScreen.add(key); else this.onScreen.delete(key);
    if (on) {
      if (!slot.card) this.build(slot);
      this.show(slot);
    }
    this.report();
  }

  /** The cards on screen, in section order, as the `media_visible` trait (the union over the pane's views). */
  report() {
    reportVisible(this.model, this, this.order.filter((k) => this.onScreen.has(k)), "media_visible");
  }

  /** The `media_step` trait changed (another view of the pane moved its cursor): this view's cards follow. */
  followModel() {
    const step = this.model.get("media_step");
    if (step !== null && step !== undefined) this.cursor.set(step, "model");
  }

  build(slot) {
    const { kind, tag } = slot;
    const runs = [{ key: this.model.get("run_id"), label: this.runLabel }];
    const range = { step_min: slot.info.step_min ?? 0, step_max: slot.info.step_max ?? 0 };
    const onStep = (step) => this.cursor.set(step, "slider");
    if (kind === "histograms") {
      // The kernel keeps the cursor's step in the reduced answer it sends; any answer newer than the card's is drawn.
      const fetchSeries = () => this.feed.wait(kind, tag, (m) => m !== slot.drawnFrom).then((m) => {
        slot.drawnFrom = m;
        return m;
      });
      slot.card = createHistogramCard({ tag, runs, Plotly: this.Plotly, fetchSeries,
        readRange: async (_run, query) => localRange(slot.drawnFrom, query), onStep });
    } else if (kind === "images") {
      const fetchImages = (_run, step) => this.feed.wait(kind, tag, (m) => m.requested_step === step)
        .then((m) => this.feed.withUrls(m));
      slot.card = createImageCard({ tag, runs, range, fetchImages, onStep });
    } else {
      const fetchText = (_run, step) => this.feed.wait(kind, tag, (m) => m.requested_step === step);
      slot.card = createTextCard({ tag, runs, range, fetchText, onStep });
    }
    slot.el.replaceChildren(slot.card.el);
  }

  show(slot) {
    const step = this.stepFor(slot);
    if (step === null || step === undefined) return;
    slot.card.show(step).catch(() => {}); // a card shows its own errors
  }

  /** A `media` or `image` message from the kernel. */
  receive(msg, buffers) {
    if (msg.type === "image") {
      if (buffers?.length) this.feed.receiveImage(msg, buffers[0]);
      return;
    }
    this.feed.receive(msg);
    const slot = this.slots.get(cardKey(msg.kind, msg.tag));
    // A histogram tag that grew (or kept the cursor's step): the card is drawn again from the new answer.
    if (slot && msg.kind === "histograms" && slot.card && slot.onScreen && slot.drawnFrom && slot.drawnFrom !== msg) {
      this.build(slot);
      this.show(slot);
    }
  }

  dispose() {
    this.unsubscribe();
    try {
      reportVisible(this.model, this, null, "media_visible");
    } catch {
      // the model is closed already (the kernel went away)
    }
    for (const slot of this.slots.values()) slot.unobserve?.();
    this.feed.dispose();
  }
}
