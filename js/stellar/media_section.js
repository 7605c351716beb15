// The run and compare page's Media section (docs/media.md, "On the Stellar pages"): the runs' histogram, image and
// text tags (`…/media`) in sections by kind, filtered by the page's search box, a page of cards at a time, each card
// created and read only when it scrolls into view; every card follows the page's one step cursor (typed in the
// section's step box, set by a click on a loss curve or by a card's slider; kept in the address as `step`), a card
// off screen when the cursor moves as soon as it scrolls back into view.
//
// A move shows the image and text cards first and the histogram cards once the cursor rests after them
// (shared/media/move_order.js); a newer move aborts the reads of the one before.
//
// A compared tag is one card with a panel per run, side by side at the same step. While a run is live its `…/media`
// is read again every few seconds (shared/media/live.js), only while the page is visible: sliders follow the tags'
// new steps, new tags add cards (still created only on screen), a histogram card on screen reads its series again.
import { h } from "../shared/dom.js";
import { createHistogramCard } from "../shared/media/histogram_card.js";
import { createImageCard } from "../shared/media/image_card.js";
import { createPoller, isLive, mediaChanges } from "../shared/media/live.js";
import { REST_MS, showInOrder } from "../shared/media/move_order.js";
import { mediaCountText, mediaSections, tagRange } from "../shared/media/sections.js";
import { createTextCard } from "../shared/media/text_card.js";
import { PagedSections } from "../shared/paged_sections.js";
import { id } from "../shared/urls.js";
import { writeView } from "./address.js";
import { api, explain } from "./api.js";
import { main, root, runRef, state } from "./page.js";

const PAGE = 12; // cards an open section shows before "Show more"

let heatmapPlotly = null;
/** The page's plotly with the heat map registered (a chunk of its own, loaded the first time a card needs it). */
function plotlyWithHeatmap() {
  heatmapPlotly ??= import("../plotly/heatmap.js").then((m) => m.default);
  return heatmapPlotly;
}

export class MediaSection {
  /** The media of `runIds` (run keys as the address names them), drawn into `box` after `load()`; `cursor` is the
   *  page's step cursor (shared/step_cursor.js), `search` the page's search box. */
  constructor(runIds, box, cursor) {
    this.runIds = runIds;
    this.box = box;
    this.cursor = cursor;
    this.tagsByRun = new Map();
    this.open = {};
    this.filter = state.search;
    this.cards = new Map(); // card key → { el, card | null, requested }
    this.created = 0;
  }

  /** Reads every run's tags; draws the section when any run has media or says why its media are elsewhere. */
  async load() {
    const unavailable = [];
    const failures = [];
    await Promise.all(this.runIds.map(async (runId) => {
      try {
        const body = await this.readTags(runId);
        if (body.unavailable) unavailable.push([runId, body.unavailable]);
      } catch (err) {
        // 404: a Portal without the media routes (TauGrid's), or a run the page already says it cannot find.
        if (err.status !== 404) failures.push(explain(err, `The media of ${runId} could not be listed`));
      }
    }));
    // In the page's order of runs, whichever answered first.
    unavailable.sort((a, b) => this.runIds.indexOf(a[0]) - this.runIds.indexOf(b[0]));
    const any = [...this.tagsByRun.values()].some((tags) => tags.length);
    if (!any && !unavailable.length && !failures.length) return false; // a run without media: no empty section
    this.draw(unavailable, failures, any);
    return true;
  }

  /** Reads `runId`'s tags into `tagsByRun`; returns the `…/media` answer. */
  async readTags(runId) {
    const body = await api(["runs", id(runRef(runId).runId), "media"], { project: runRef(runId).project });
    // An offline export shows the cards it carries (its budget may have left tags out: its note says which).
    const carried = state.offline ? new Set(state.offline.media || []) : null;
    this.tagsByRun.set(runId, (body.tags || []).filter((t) => !carried || carried.has(`${t.kind}/${t.tag}`)));
    return body;
  }

  /**
   * Follows the runs of `liveIds` (those whose state is live) while they are: their `…/media` read again every
   * POLL_MS while the page is visible, and once more after a run's state turns terminal, then no more.
   */
  follow(liveIds) {
    if (state.offline || !liveIds.length) return;
    this.live = new Set(liveIds);
    main.dataset.mediaLive = "following";
    const visible = () => document.visibilityState !== "hidden";
    this.poller = createPoller({ tick: () => this.poll(), visible });
    document.addEventListener("visibilitychange", () => this.poller.wake());
    this.poller.start();
  }

  /** One poll: each live run's state, then its tags; the cards follow what changed. False once none is live. */
  async poll() {
    const before = new Map([...this.tagsByRun].map(([run, tags]) => [run, tags]));
    // A run whose read failed is read again at the next poll; the others' changes are drawn now.
    await Promise.allSettled([...this.live].map(async (runId) => {
      const { run } = await api(["runs", id(runRef(runId).runId)], { project: runRef(runId).project });
      await this.readTags(runId); // after the state: a terminal run's last read holds all it logged
      if (!isLive(run)) this.live.delete(runId);
    }));
    this.apply(before);
    this.polls = (this.polls || 0) + 1;
    main.dataset.mediaPolls = String(this.polls);
    if (!this.live.size) main.dataset.mediaLive = "ended";
    return this.live.size > 0;
  }

  /** The tags read again (`before`: the earlier read): cards follow, new tags get slots, the section appears. */
  apply(before) {
    const { added, grown, runsChanged } = mediaChanges(before, this.tagsByRun);
    if (!added.length && !grown.size && !runsChanged.length) return;
    if (!this.sections) {
      // A run whose first media arrived after the page opened: the section is drawn now.
      this.draw([], [], true);
      main.dataset.media = "shown";
      return;
    }
    for (const key of runsChanged) {
      const entry = this.cards.get(key);
      if (entry?.card) this.forget(key, entry); // a panel per run again, made when on screen
    }
    for (const [key, range] of grown) {
      const entry = this.cards.get(key);
      if (!entry?.card || runsChanged.includes(key)) continue;
      if (entry.kind === "histograms") {
        // Read again now if on screen (once per poll), else when it scrolls back.
        if (entry.visible !== false) entry.card.refresh(this.cursor.get() ?? range.step_max);
        else entry.grown = true;
        continue;
      }
      entry.card.setRange(range);
      if (this.cursor.get() !== null) continue;
      // No cursor: the card shows its tag's last step, now or when it scrolls back.
      if (entry.visible !== false) entry.card.show(range.step_max);
      else entry.grown = true;
    }
    this.render();
  }

  /** A created card made a slot again (created when it is next on screen). */
  forget(key, entry) {
    this.seen?.unobserve(entry.el);
    const el = h("div", { class: "media-slot", "data-card": key, "data-kind": entry.kind, "data-tag": entry.tag,
      "data-state": "idle" }, h("h3", { class: "media-tag", text: entry.tag }),
    h("p", { class: "stellar-note", text: "read when it scrolls into view" }));
    entry.el.replaceWith(el);
    Object.assign(entry, { el, card: null, requested: false, visible: undefined, stale: false, grown: false });
  }

  draw(unavailable, failures, any) {
    const why = h("span", { class: "stellar-note media-step-why", id: "stellar-media-step-why", role: "status" });
    const input = h("input", { type: "text", id: "stellar-media-step", inputmode: "numeric", size: 14,
      placeholder: "latest", "aria-label": "step of every media card", value: state.step === null ? "" : String(state.step) });
    const go = () => {
      const text = input.value.trim();
      if (!text) return;
      const reason = this.cursor.set(text, "input");
      why.textContent = reason ? `${reason}: the cards stay where they are` : "";
      input.setAttribute("aria-invalid", String(Boolean(reason)));
    };
    input.addEventListener("change", go);
    input.addEventListener("keydown", (event) => {
      if (event.key === "Enter") go();
    });
    this.stepInput = input;
    this.stepWhy = why;
    const head = h("div", { class: "media-head" },
      h("h2", { text: "Media" }),
      any ? h("label", { class: "media-step-box", title: "every card moves to its stored step nearest this one; a click on a loss curve or a card's slider sets it too" },
        "step", input) : null,
      any ? why : null);
    this.body = h("div", { class: "stellar-sections media-sections", id: "stellar-media-sections" });
    this.box.replaceChildren(head);
    for (const [runId, text] of unavailable) {
      this.box.append(h("p", { class: "stellar-note media-unavailable", "data-run": runId,
        text: this.runIds.length > 1 ? `${runId}: ${text}` : text }));
    }
    for (const text of failures) this.box.append(h("p", { class: "stellar-error", role: "alert", text }));
    if (state.offline?.mediaNote) {
      // What the export carries of the media, what its budget left out, and where the rest is.
      const live = state.offline.link ? h("a", { href: state.offline.link, text: "the live page" }) : null;
      this.box.append(h("p", { class: "stellar-note media-export-note", id: "stellar-media-export-note" },
        state.offline.mediaNote, live ? " " : "", live, live ? " (its Portal's token needed)." : ""));
    }
    this.box.append(this.body);
    this.box.hidden = false;
    this.box.dataset.state = "ready";
    if (!any) return;
    this.sections = new PagedSections(this.body, { prefix: "stellar", bodyClass: "media-cards", page: PAGE,
      item: (key, body) => this.cardNode(key, body),
      toggle: (key, open) => {
        this.open[key] = open;
        this.render();
      },
      rerender: () => this.render() });
    this.io = new IntersectionObserver((entries) => this.onIntersect(entries), { rootMargin: "200px 0px" });
    // A created card follows the cursor while it is on screen; one off screen is marked stale and catches up when
    // it scrolls back, so a move reads only what is seen (not every card created since the page opened).
    this.seen = new IntersectionObserver((entries) => this.onSeen(entries), { rootMargin: "200px 0px" });
    this.cursor.subscribe((step, source) => this.onStep(step, source));
    this.render();
  }

  /** The page's search changed: the same filter as the metric charts. */
  setFilter(filter) {
    this.filter = filter;
    if (this.sections) this.render();
  }

  render() {
    const sections = mediaSections(this.tagsByRun, { filter: this.filter, open: this.open });
    const shown = new Set(this.sections.render(sections));
    for (const section of sections) {
      const el = this.sections.els.get(section.key);
      if (el) el.count.textContent = mediaCountText(section);
    }
    for (const [key, entry] of this.cards) if (!shown.has(key)) this.io.unobserve(entry.el);
    this.body.dataset.cards = String(shown.size);
  }

  /** A shown tag's place: a frame with its name, its card created and read when it scrolls into view. */
  cardNode(key, body) {
    let entry = this.cards.get(key);
    if (!entry) {
      const slash = key.indexOf("/");
      const [kind, tag] = [key.slice(0, slash), key.slice(slash + 1)];
      const el = h("div", { class: "media-slot", "data-card": key, "data-kind": kind, "data-tag": tag, "data-state": "idle" },
        h("h3", { class: "media-tag", text: tag }), h("p", { class: "stellar-note", text: "read when it scrolls into view" }));
      entry = { el, kind, tag, card: null, requested: false };
      this.cards.set(key, entry);
    }
    if (!entry.requested) this.io.observe(entry.el);
    return entry.el;
  }

  onIntersect(entries) {
    for (const item of entries) {
      if (!item.isIntersecting) continue;
      const entry = this.cards.get(item.target.dataset.card);
      if (!entry || entry.requested) continue;
      entry.requested = true;
      this.io.unobserve(entry.el);
      this.createCard(entry);
    }
  }

  runsOf(kind, tag) {
    return this.runIds.map((runId) => {
      const entry = state.runs[runId];
      const has = (this.tagsByRun.get(runId) || []).some((t) => t.kind === kind && t.tag === tag);
      return { key: runId, label: this.runIds.length > 1 ? entry?.label || runId : "", color: entry?.color, missing: !has };
    });
  }

  /** The Portal's path of an image as a URL under the page's root, with the run's project and source. */
  imageUrl(runId, path) {
    if (/^data:/i.test(String(path))) return String(path); // an offline export's image, carried in the file
    const url = new URL(String(path).replace(/^\//, ""), root);
    const { project } = runRef(runId);
    if (project) url.searchParams.set("project", project);
    if (state.source) url.searchParams.set("source", state.source);
    return url.href;
  }

  /** Created cards scrolled in or out of view: one back on screen after the cursor moved shows the cursor's step. */
  onSeen(entries) {
    for (const item of entries) {
      const entry = this.cards.get(item.target.dataset.card);
      if (!entry?.card) continue;
      entry.visible = item.isIntersecting;
      if (entry.visible && entry.grown) { // a live tag that grew while off screen: its series read again
        entry.grown = false;
        entry.stale = false;
        const at = this.stepFor(tagRange(this.tagsByRun, entry.kind, entry.tag));
        if (entry.kind === "histograms") entry.card.refresh(at);
        else entry.card.show(at);
      } else if (entry.visible && entry.stale) {
        entry.stale = false;
        entry.card.show(this.cursor.get());
      }
    }
  }

  /** Every card left stale by a move brought to the cursor's step: an export replays what the cards read at it. */
  async refreshStale() {
    await this.moving; // the move in progress: its histogram cards read its step before the replay
    const at = this.cursor.get();
    await Promise.all([...this.cards.values()].filter((entry) => entry.card && entry.stale).map((entry) => {
      entry.stale = false;
      return entry.card.show(at);
    }));
  }

  async createCard(entry) {
    const { kind, tag } = entry;
    const runs = this.runsOf(kind, tag);
    const onStep = (step) => this.cursor.set(step, "slider");
    // Each read goes with the cursor move in progress: a newer move aborts it (its connection freed at once).
    const read = (runId, route, query) => api(["runs", id(runRef(runId).runId), route],
      { tag, project: runRef(runId).project, ...query }, { signal: this.move?.signal });
    const range = tagRange(this.tagsByRun, kind, tag);
    let card;
    if (kind === "histograms") {
      const Plotly = await plotlyWithHeatmap();
      card = createHistogramCard({ tag, runs, Plotly, onStep: (step) => this.cursor.set(step, "plot"),
        fetchSeries: (runId, { buckets }) => read(runId, "histograms", buckets ? {} : { buckets: "false" }),
        readRange: (runId, query) => read(runId, "histograms", query) });
    } else if (kind === "images") {
      card = createImageCard({ tag, runs, range, onStep, fetchImages: (runId, step) => read(runId, "images", { step, inline_thumbnails: "true" }),
        resolve: (path, runId) => this.imageUrl(runId, path) });
    } else {
      card = createTextCard({ tag, runs, range, onStep, fetchText: (runId, step) => read(runId, "text", { step }) });
    }
    card.el.dataset.card = `${kind}/${tag}`;
    entry.card = card;
    entry.el.replaceWith(card.el);
    entry.el = card.el;
    this.seen.observe(card.el);
    this.created += 1;
    this.body.dataset.created = String(this.created);
    await card.show(this.stepFor(range));
  }

  /** The step a card shows: the cursor's, else (no cursor yet) its tag's last step, as TensorBoard opens. */
  stepFor(range) {
    const step = this.cursor.get();
    return step === null ? range.step_max : step;
  }

  onStep(step, source) {
    state.step = step;
    writeView();
    if (source !== "input") {
      this.stepInput.value = String(step);
      this.stepWhy.textContent = "";
      this.stepInput.setAttribute("aria-invalid", "false");
    }
    if (source === "initial") return; // cards created from now on read the cursor themselves
    // A slider dragged moves the cursor many times a frame: the cards read the last step of each frame.
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      const at = this.cursor.get();
      this.move?.abort(); // the move before: its reads still in flight end, its histogram cards never start
      const move = new AbortController();
      this.move = move;
      const shown = [];
      for (const entry of this.cards.values()) {
        if (!entry.card) continue;
        if (entry.visible === false) entry.stale = true; // read when it scrolls back into view
        else shown.push(entry);
      }
      // Image and text cards first, the histogram cards once the cursor rests (their reads after the thumbnails).
      main.dataset.mediaMove = "moving";
      this.moving = showInOrder(shown, at, { signal: move.signal, restMs: state.offline ? 0 : REST_MS });
      this.moving.then((how) => {
        if (this.move === move) main.dataset.mediaMove = how;
      });
    });
  }
}
