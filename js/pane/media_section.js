// The pane's Media section (docs/loss-pane.md, "Histograms, images and text"): below the metrics, a section per
// kind (histograms, images, text) with a slot per tag of the `media` trait; a card is created only when its slot
// comes on screen, and the slots on screen are the `media_visible` trait, the only cards the kernel reads. One step
// cursor (shared/step_cursor.js) for the whole pane: a click on a loss curve, the step box or a card's slider moves
// it (the `media_step` trait), and every card shows its tag's stored step nearest it, labelled. A pane comparing
// runs draws each card with a panel per drawn run, side by side at the one step, each labelled with its run and
// colour (as the Stellar compare page; shared/media/).
//
// The kernel pushes what the cards show as `media` messages and image bytes as `image` messages (the contract in
// taunotebook/pane.py); the shared cards (shared/media/) ask through fetch functions, answered here from them. An
// image's "full image" link asks the kernel for its stored bytes (an `image-full` message) and opens them.
import { h } from "../shared/dom.js";
import { createHistogramCard } from "../shared/media/histogram_card.js";
import { createImageCard } from "../shared/media/image_card.js";
import { errorText, supersededError } from "../shared/media/card.js";
import { KINDS, mediaCountText, mediaSections, tagRange } from "../shared/media/sections.js";
import { createTextCard } from "../shared/media/text_card.js";
import { createStepCursor } from "../shared/step_cursor.js";
import { reportVisible } from "./visible.js";

const TITLES = { histograms: "Histograms", images: "Images", text: "Text" };

/** A card's name in `media_visible`: "<kind>/<tag>" (shared/media/sections.js's card key). */
export function cardKey(kind, tag) {
  return `${kind}/${tag}`;
}

/** The feed's key of one run's card. */
function feedKey(run, kind, tag) {
  return `${run}\u0000${cardKey(kind, tag)}`;
}

/**
 * What the kernel sent for the cards, and the cards' reads waiting for it: `wait(run, kind, tag, match)` is a
 * Promise of the first message for that run's panel of the card that `match` accepts (the held one when it does),
 * rejected with the Portal's words when the kernel's read failed; a newer wait for the same panel rejects the older
 * (its card moved on). Images: the thumbnails by digest, and the full images a link asked for (`waitFull`).
 */
export class MediaFeed {
  constructor() {
    this.held = new Map(); // feed key → the last media message
    this.waiting = new Map(); // feed key → { match, resolve, reject }
    this.images = new Map(); // digest → object URL of its thumbnail
    this.full = new Map(); // digest → object URL of the image's stored bytes
    this.fullWaiting = new Map(); // digest → [{ resolve, reject }]
  }

  wait(run, kind, tag, match) {
    const key = feedKey(run, kind, tag);
    const last = this.held.get(key);
    if (last && match(last)) return last.error ? Promise.reject(new Error(last.error)) : Promise.resolve(last);
    this.waiting.get(key)?.reject(supersededError());
    return new Promise((resolve, reject) => this.waiting.set(key, { match, resolve, reject }));
  }

  /** A `media` message: held, and handed to a read waiting for it (an error to any read of its panel). */
  receive(msg) {
    const key = feedKey(msg.run, msg.kind, msg.tag);
    this.held.set(key, msg);
    const w = this.waiting.get(key);
    if (!w || !(msg.error || w.match(msg))) return;
    this.waiting.delete(key);
    if (msg.error) w.reject(new Error(msg.error)); else w.resolve(msg);
  }

  /** An `image` message: its bytes as an object URL (a thumbnail for the listings that name its digest, or the
   *  full image a link waits for), or the words why the full image could not be read. */
  receiveImage(msg, buffer, makeUrl = defaultObjectUrl) {
    if (msg.thumbnail !== false) {
      if (!this.images.has(msg.digest) && buffer) this.images.set(msg.digest, makeUrl(buffer, msg.content_type));
      return;
    }
    if (!msg.error && buffer && !this.full.has(msg.digest)) this.full.set(msg.digest, makeUrl(buffer, msg.content_type));
    const waiting = this.fullWaiting.get(msg.digest) || [];
    this.fullWaiting.delete(msg.digest);
    for (const w of waiting) {
      if (this.full.has(msg.digest)) w.resolve(this.full.get(msg.digest));
      else w.reject(new Error(msg.error || "the kernel sent no bytes"));
    }
  }

  /** A Promise of the object URL of an image's stored bytes, once the kernel sends them. */
  waitFull(digest) {
    if (this.full.has(digest)) return Promise.resolve(this.full.get(digest));
    return new Promise((resolve, reject) => {
      const list = this.fullWaiting.get(digest) || [];
      list.push({ resolve, reject });
      this.fullWaiting.set(digest, list);
    });
  }

  /** An images answer with each image's URLs pointing at the bytes the kernel sent: the thumbnail ("" for one not
   *  sent), and the full image once a link asked for it ("" before). */
  withUrls(msg) {
    const images = (msg.images || []).map((im) => {
      const thumb = this.images.get(im.digest) || "";
      return { ...im, url: this.full.get(im.digest) || "", thumbnail_url: thumb };
    });
    return { ...msg, images };
  }

  dispose(revoke = (url) => URL.revokeObjectURL(url)) {
    for (const url of [...this.images.values(), ...this.full.values()]) revoke(url);
    this.images.clear();
    this.full.clear();
    for (const w of this.waiting.values()) w.reject(new Error("closed"));
    this.waiting.clear();
    for (const list of this.fullWaiting.values()) for (const w of list) w.reject(new Error("closed"));
    this.fullWaiting.clear();
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
 * `runs()` names the drawn runs in legend order, [{ key, label, color }] (the pane's run first; default: the
 * model's run, labelled `runLabel`); `observe(el, onChange)` watches a slot come on and off screen (an
 * IntersectionObserver in the page; tests pass their own) and returns its disposer; `openWindow(url)` opens a window
 * (`window.open`; tests pass their own) and `requestFull(run, digest)` asks the kernel for an image's stored bytes.
 */
export class MediaSection {
  constructor({ model, Plotly, runLabel = "", runs = null, observe, feed = new MediaFeed(),
    cursor = createStepCursor(model.get("media_step") ?? null), openWindow = (url) => window.open(url, "_blank"),
    requestFull = (run, digest) => model.send({ type: "image-full", run, digest }) }) {
    this.model = model;
    this.Plotly = Plotly;
    this.runs = runs || (() => [{ key: model.get("run_id"), label: runLabel }]);
    this.observe = observe;
    this.feed = feed;
    this.cursor = cursor;
    this.openWindow = openWindow;
    this.requestFull = requestFull;
    this.slots = new Map(); // card key → { el, kind, tag, info, runs, sig, card, onScreen, unobserve, drawnFrom }
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

  /** The step a card shows: the cursor's, else its tag's latest over the drawn runs. */
  stepFor(slot) {
    const step = this.cursor.get();
    return step === null ? slot.info.step_max : step;
  }

  /** The drawn runs' tags from the `media` trait: Map run → tags, the pane's run first (`compared` holds the
   *  others'), and the words of each run whose media are elsewhere. */
  tagsByRun(media) {
    const runs = this.runs();
    const primary = this.model.get("run_id");
    const byRun = new Map();
    const notes = [];
    for (const { key } of runs) {
      const entry = key === primary ? media : media?.compared?.[key];
      byRun.set(key, entry?.tags || []);
      if (entry?.unavailable) notes.push(runs.length > 1 ? `${key}: ${entry.unavailable}` : entry.unavailable);
    }
    return { byRun, notes };
  }

  /**
   * The `media` trait (or the search box, `filter`, or the drawn runs) changed: a slot per tag the search matches
   * over the drawn runs, by kind and name (shared/media/sections.js; new slots observed, gone ones removed), counts,
   * the note. A card whose runs changed is made again; one whose tag grew widens its slider.
   */
  setTags(media, filter = "") {
    this.lastMedia = media;
    this.lastFilter = filter;
    const { byRun, notes } = this.tagsByRun(media);
    const sections = mediaSections(byRun, { filter });
    this.note.hidden = !notes.length;
    this.note.textContent = notes.join(" · ");
    let any = notes.length > 0;
    const keep = new Set();
    this.order = [];
    const drawn = this.runs();
    const many = drawn.length > 1;
    for (const kind of KINDS) {
      const box = this.kindBoxes.get(kind);
      const section = sections.find((s) => s.key === kind);
      box.el.hidden = !section;
      box.count.textContent = section ? mediaCountText(section) : "";
      any ||= Boolean(section);
      for (const key of section?.metrics || []) {
        const tag = key.slice(kind.length + 1);
        const info = { kind, tag, ...tagRange(byRun, kind, tag) };
        const runs = drawn.map((r) => ({ key: r.key, label: many ? r.label || r.key : "", color: r.color,
          missing: !(byRun.get(r.key) || []).some((t) => t.kind === kind && t.tag === tag) }));
        const sig = JSON.stringify(runs);
        keep.add(key);
        this.order.push(key);
        let slot = this.slots.get(key);
        if (slot) slot.el.dataset.runs = String(runs.length);
        if (!slot) {
          const el = h("div", { class: "tau-pane-media-slot", "data-kind": kind, "data-tag": tag,
            "data-runs": String(runs.length) });
          slot = { el, kind, tag, info, runs, sig, card: null, onScreen: false, unobserve: null, drawnFrom: new Map() };
          this.slots.set(key, slot);
          box.grid.append(el);
          slot.unobserve = this.observe(el, (on) => this.screen(key, on));
          continue;
        }
        const grew = slot.info.step_max !== info.step_max || slot.info.step_min !== info.step_min;
        slot.info = info;
        slot.runs = runs;
        if (slot.sig !== sig) { // a run joined or left, or its name changed: a panel per drawn run again
          slot.sig = sig;
          if (slot.card) {
            this.build(slot);
            if (slot.onScreen) this.show(slot);
          }
          continue;
        }
        if (grew) slot.card?.setRange?.(info);
        if (grew && slot.card && slot.onScreen && this.cursor.get() === null && kind !== "histograms") this.show(slot);
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

  /** The drawn runs, their names or colours changed: the cards follow. */
  runsChanged() {
    if (this.lastMedia !== undefined) this.setTags(this.lastMedia, this.lastFilter);
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
    const { kind, tag, runs } = slot;
    const range = { step_min: slot.info.step_min ?? 0, step_max: slot.info.step_max ?? 0 };
    const onStep = (step) => this.cursor.set(step, "slider");
    if (kind === "histograms") {
      // The kernel keeps the cursor's step in the reduced answer it sends; each run's latest answer is drawn.
      slot.drawnFrom = new Map();
      const fetchSeries = (run) => this.feed.wait(run, kind, tag, () => true).then((m) => {
        slot.drawnFrom.set(run, m);
        return m;
      });
      slot.card = createHistogramCard({ tag, runs, Plotly: this.Plotly, fetchSeries,
        readRange: async (run, query) => localRange(slot.drawnFrom.get(run), query), onStep });
    } else if (kind === "images") {
      const fetchImages = (run, step) => this.feed.wait(run, kind, tag, (m) => m.requested_step === step)
        .then((m) => this.feed.withUrls(m));
      slot.card = createImageCard({ tag, runs, range, fetchImages, onStep,
        openImage: (image, run, link) => this.openFull(image, run, link) });
    } else {
      const fetchText = (run, step) => this.feed.wait(run, kind, tag, (m) => m.requested_step === step);
      slot.card = createTextCard({ tag, runs, range, fetchText, onStep });
    }
    slot.el.replaceChildren(slot.card.el);
  }

  show(slot) {
    const step = this.stepFor(slot);
    if (step === null || step === undefined || !Number.isFinite(step)) return;
    slot.card.show(step).catch(() => {}); // a card shows its own errors
  }

  /**
   * An image link clicked: its stored bytes (not the thumbnail) in a new window. Held already: opened at once;
   * otherwise a window opens now (while the click allows it), the kernel is asked for the bytes, and the window
   * shows them when they come (or the Portal's words). The link then points at the bytes.
   */
  openFull(image, run, link) {
    const held = this.feed.full.get(image.digest);
    if (held) {
      this.openWindow(held);
      return;
    }
    const win = this.openWindow("");
    const say = (text) => {
      try {
        if (win?.document?.body) win.document.body.textContent = text;
      } catch {
        // a window this page may not write into: it shows what it shows
      }
    };
    say("reading the full image…");
    link.dataset.full = "loading";
    this.feed.waitFull(image.digest).then((url) => {
      link.setAttribute("href", url);
      link.dataset.full = "ready";
      if (win) win.location.href = url;
    }, (err) => {
      link.dataset.full = "error";
      link.setAttribute("title", `the full image could not be read: ${errorText(err)}`);
      say(`the full image could not be read: ${errorText(err)}`);
    });
    this.requestFull(run, image.digest);
  }

  /** A `media` or `image` message from the kernel. */
  receive(msg, buffers) {
    if (msg.type === "image") {
      this.feed.receiveImage(msg, buffers?.[0]);
      return;
    }
    this.feed.receive(msg);
    const slot = this.slots.get(cardKey(msg.kind, msg.tag));
    // A histogram tag that grew (or kept the cursor's step): the card is drawn again from the runs' new answers.
    const drawn = slot?.drawnFrom?.get(msg.run);
    if (slot && msg.kind === "histograms" && slot.card && slot.onScreen && drawn && drawn !== msg) {
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
