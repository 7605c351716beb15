// The pane's view: header (run, state, metric count, Open in Stellar), status line, controls (smoothing, log y,
// x axis, the search box and its list of matches), then the metrics in sections (shared/sections.js), a page at a
// time (shared/paged_sections.js).
//
// It stays instant at any width: a collapsed section is only its header; an open one holds at most a page of
// slots (more on request); a slot gets a MetricPlot only while it is on screen (an IntersectionObserver), and the
// names with a plot are the `visible` trait, the only metrics the kernel fetches and polls. Per frame, only the
// plots whose series changed are drawn.
import { h } from "../shared/dom.js";
import { runLabels } from "../shared/differing.js";
import { formatNumber } from "../shared/format.js";
import { assignRunColors } from "../shared/palette.js";
import { statusWords } from "../shared/run_status.js";
import { PagedSections, filterNote } from "../shared/paged_sections.js";
import { buildSections, compileFilter } from "../shared/sections.js";
import { SMOOTHING_MAX, SMOOTHING_STEP } from "../shared/smoothing.js";
import { METRIC_AXIS, axisMetric, isAxis, loadAxis, saveAxis } from "../shared/time_axis.js";
import { xCandidates } from "../shared/x_metric.js";
import MediaPlotly from "../plotly/heatmap.js";
import { MediaSection } from "./media_section.js";
import { MetricPlot } from "./metric_plot.js";
import { PaneHeader } from "./header.js";
import { forgetMetric, storeFor, totalPoints } from "./store.js";
import { PANE_CSS } from "./style.js";
import { reportVisible } from "./visible.js";

const PAGE = 12; // slots an open section shows before "Show more"
const LIST_MAX = 100; // names the list of matches shows
const FILTER_DELAY_MS = 200;
const TERMINAL = ["succeeded", "failed", "cancelled", "completed"];
// What the page keeps of metrics that left the screen, newest last: scrolling back draws them at once (the
// kernel's fresh reset replaces them); beyond this many the oldest are dropped.
const KEEP_HIDDEN = 64;
const RUN_TRAITS = ["run_ids", "configs", "aggregate", "band", "checkpoints", "compare_checkpoints"];

function pinButton(name, pinned, onclick) {
  return h("button", { type: "button", class: "tau-pane-pin", title: "pin (shown first, in Pinned)",
    "aria-label": `pin ${name}`, "aria-pressed": String(pinned), onclick }, pinned ? "★" : "☆");
}

function setPinned(button, pinned) {
  button.setAttribute("aria-pressed", String(pinned));
  button.textContent = pinned ? "★" : "☆";
}

export class Pane {
  constructor(model, el) {
    this.model = model;
    this.el = el;
    this.store = storeFor(model);
    // The x axis: the `x_axis` trait when Python set one (LossPane(x="tokens")), else this browser's last choice.
    const given = model.get("x_axis");
    this.settings = { smoothing: 0, logY: false, axis: isAxis(given) ? given : loadAxis() };
    this.plots = new Map(); // metric → MetricPlot, only for slots on screen
    this.slots = new Map(); // metric → its slot element, for the slots in the page
    this.onScreen = new Set();
    this.order = []; // the shown metrics in display order
    this.dirty = new Set();
    this.scheduled = false;
    this.visibleQueued = false;
    this.disposed = false;
    this.build();
  }

  /** The pane's run, then the runs compare= resolved to (run_ids, set by the kernel): legend and link order. */
  runIds() {
    return [...new Set([this.model.get("run_id"), ...(this.model.get("run_ids") || [])])];
  }

  /** Each run's legend name: what differs between the drawn runs' configs (shared/differing.js), else its id. */
  labels() {
    const runs = this.runIds();
    const configs = this.model.get("configs") || {};
    const key = JSON.stringify([runs, configs]);
    if (this.labelKey !== key) {
      this.labelKey = key;
      this.labelMap = runLabels(runs, configs);
    }
    return this.labelMap;
  }

  /** Each run's colour (shared/palette.js: the same as on the Stellar page its link opens). */
  colors() {
    const runs = this.runIds();
    const key = runs.join("\u0000");
    if (this.colorKey !== key) {
      this.colorKey = key;
      this.colorMap = assignRunColors(runs);
    }
    return this.colorMap;
  }

  build() {
    this.root = h("div", { class: "tau-pane", "data-state": "", "data-status": "connecting", "data-points": "0" });
    this.header = new PaneHeader(this.model); // run, state, counts, job words, Open in Stellar, bell, note
    this.statusLine = h("div", { class: "tau-pane-status", role: "status" });
    const smoothingValue = h("span", { class: "tau-pane-smoothing-value" }, "0");
    this.smoothingInput = h("input", { type: "range", min: "0", max: String(SMOOTHING_MAX),
      step: String(SMOOTHING_STEP), value: "0",
      "aria-label": "smoothing", oninput: (e) => {
        this.settings.smoothing = Number(e.target.value);
        smoothingValue.textContent = e.target.value;
        this.redrawAll();
      } });
    this.logInput = h("input", { type: "checkbox", "aria-label": "log scale", onchange: (e) => {
      this.settings.logY = e.target.checked;
      this.redrawAll();
    } });
    this.axisSelect = h("select", { "aria-label": "x axis", onchange: (e) => this.setAxis(e.target.value, true) },
      h("option", { value: "step" }, "step"), h("option", { value: "relative" }, "relative time"),
      h("option", { value: "wall" }, "wall time"));
    this.fillAxisMetrics();
    // Compared runs as one line with a band (the `aggregate` and `band` traits; shared/aggregate.js).
    this.aggregateSelect = h("select", { "aria-label": "runs as", onchange: (e) => this.setTrait("aggregate", e.target.value) },
      h("option", { value: "" }, "each run"), h("option", { value: "mean" }, "mean"),
      h("option", { value: "median" }, "median"));
    this.bandSelect = h("select", { "aria-label": "band", onchange: (e) => this.setTrait("band", e.target.value) },
      h("option", { value: "minmax" }, "min–max"), h("option", { value: "std" }, "±1 std"),
      h("option", { value: "none" }, "no band"));
    this.aggregateLabel = h("label", { class: "tau-pane-aggregate", hidden: true }, "runs as ", this.aggregateSelect,
      " ", this.bandSelect);
    // The search box: TensorBoard's filter (a case-insensitive regex, else a substring), kept in the `filter` trait.
    this.search = h("input", { type: "search", class: "tau-pane-search", "aria-label": "search metrics",
      placeholder: "search metrics (regex)", value: this.model.get("filter") || "",
      oninput: () => {
        clearTimeout(this.filterTimer);
        this.filterTimer = setTimeout(() => this.setTrait("filter", this.search.value), FILTER_DELAY_MS);
      } });
    this.filterNote = h("span", { class: "tau-pane-filter-note" });
    this.listButton = h("button", { type: "button", class: "tau-pane-list-toggle", "aria-expanded": "false",
      onclick: () => this.toggleList() }, "list ▾");
    this.list = h("div", { class: "tau-pane-list", hidden: true });
    this.sectionsBox = h("div", { class: "tau-pane-sections" });
    // Open/closed is the `sections` trait (kept with the notebook); a slot is the metric's plot's place.
    this.sections = new PagedSections(this.sectionsBox, { prefix: "tau-pane", bodyClass: "tau-pane-grid", page: PAGE,
      item: (name) => this.slotFor(name),
      toggle: (key, open) => this.setTrait("sections", { ...(this.model.get("sections") || {}), [key]: open }),
      rerender: () => this.render() });
    const controls = h("div", { class: "tau-pane-controls" },
      h("label", {}, "smoothing ", this.smoothingInput, " ", smoothingValue),
      h("label", {}, this.logInput, " log y"), h("label", {}, "x: ", this.axisSelect), this.aggregateLabel,
      h("span", { class: "tau-pane-find" }, this.search, this.listButton, this.filterNote));
    this.errorLine = h("div", { class: "tau-pane-error" });
    // Histograms, images and text below the metrics: a card per tag on screen, one step cursor (media_section.js).
    // A pane comparing runs: a panel per drawn run in every card, labelled and coloured as in the legend.
    this.media = new MediaSection({ model: this.model, Plotly: MediaPlotly,
      runs: () => this.runIds().map((key) => ({ key, label: this.labels().get(key)?.label || key,
        color: this.colors().get(key) })),
      observe: (el, onChange) => this.observeMedia(el, onChange) });
    this.root.append(h("style", {}, PANE_CSS), this.header.el, this.header.alertBox, this.statusLine, controls, this.list,
      this.sectionsBox, this.media.el, this.errorLine);
    this.el.append(this.root);
  }

  /**
   * Draw against `axis` (step, relative, wall or `metric:<name>`). Chosen here, it is kept in the browser (as on the
   * Stellar pages) and in the `x_axis` trait, which tells the kernel to poll the x metric beside the plotted ones.
   */
  setAxis(axis, chosen) {
    if (!isAxis(axis)) return;
    this.settings.axis = axis;
    if (chosen) {
      saveAxis(axis); // kept across reloads, and the same on the Stellar pages
      this.setTrait("x_axis", axis);
    }
    this.fillAxisMetrics();
    this.redrawAll();
  }

  /** The x axis menu's metrics: the run's names, progress-like ones (tokens, epoch, samples…) first. */
  fillAxisMetrics() {
    const metrics = this.model.get("metrics") || [];
    const current = axisMetric(this.settings.axis);
    const key = JSON.stringify([metrics.length, metrics[0], metrics[metrics.length - 1], current]);
    if (this.axisKey !== key) {
      this.axisKey = key;
      const { names, more } = xCandidates(metrics);
      if (current !== null && !names.includes(current)) names.push(current);
      this.axisSelect.querySelectorAll("optgroup").forEach((g) => g.remove());
      if (names.length) {
        this.axisSelect.append(h("optgroup", { label: more ? `metric (first ${names.length}; ${more} more)` : "metric" },
          ...names.map((n) => h("option", { value: `${METRIC_AXIS}${n}`, "data-metric": n }, n))));
      }
    }
    this.axisSelect.value = this.settings.axis;
  }

  /** How compared runs are drawn: null (each its line), else {center, spread} (one line with a band). */
  aggregate() {
    const center = this.model.get("aggregate") || "";
    if (!center || this.runIds().length < 2) return null;
    return { center, spread: this.model.get("band") || "minmax" };
  }

  syncAggregate() {
    this.aggregateLabel.hidden = this.runIds().length < 2;
    this.aggregateSelect.value = this.model.get("aggregate") || "";
    this.bandSelect.value = this.model.get("band") || "minmax";
  }

  setTrait(name, value) {
    this.model.set(name, value);
    this.model.save_changes();
  }

  /** A loss curve's point was clicked: every media card moves to its tag's step nearest `step`. */
  moveCursor(step) {
    this.media.cursor.set(step, "curve");
  }

  /** Watch a media card's slot come on and off screen (a screen's height ahead, as the metric plots). */
  observeMedia(el, onChange) {
    this.mediaWatch ??= new Map();
    this.mediaIo ??= new IntersectionObserver((entries) => {
      for (const entry of entries) this.mediaWatch.get(entry.target)?.(entry.isIntersecting);
    }, { rootMargin: "200px 0px" });
    this.mediaWatch.set(el, onChange);
    this.mediaIo.observe(el);
    return () => {
      this.mediaWatch.delete(el);
      this.mediaIo.unobserve(el);
    };
  }

  showError(err) {
    this.errorLine.textContent = `drawing failed: ${err && err.message ? err.message : err}`;
    console.warn("tau loss pane:", err);
  }

  /** Header and status line; the drawn plots' heads (latest value, non-finite count). Costs the visible plots. */
  syncMeta() {
    const state = this.model.get("state") || "";
    const status = this.model.get("status") || {};
    this.root.setAttribute("data-state", state);
    this.root.setAttribute("data-status", status.kind || "");
    this.header.sync(state);
    let words = statusWords(state, status, (this.model.get("runs") || {})[this.model.get("run_id")]);
    // The run ended before the kernel's last read: say so, not "connected" beside a "succeeded" badge.
    if (status.kind === "ok" && TERMINAL.includes(state) && /^connected\b/.test(words)) {
      words = words.replace(/^connected/, `run ${state}: reading its last points`);
    }
    this.statusLine.textContent = words;
    this.statusLine.className = `tau-pane-status tau-pane-status-${status.kind || "unknown"}`;
    for (const plot of this.plots.values()) plot.refreshHead();
  }

  // -- sections, slots and what is on screen

  /** Lay out the sections for the metrics, pins, filter and open/closed state (not on every poll: on a change). */
  render() {
    const metrics = this.model.get("metrics") || [];
    const pinned = this.model.get("pinned") || [];
    const filter = this.model.get("filter") || "";
    const sections = buildSections(metrics, { pinned, filter, open: this.model.get("sections") || {} });
    const pinnedSet = new Set(pinned);
    const order = this.sections.render(sections);
    this.fillAxisMetrics();
    for (const name of order) {
      const slot = this.slots.get(name);
      slot.dataset.pinned = String(pinnedSet.has(name));
      setPinned(slot.querySelector(".tau-pane-pin"), pinnedSet.has(name));
    }
    const used = new Set(order);
    for (const [name, slot] of this.slots) {
      if (used.has(name)) continue;
      this.io.unobserve(slot);
      slot.remove();
      this.slots.delete(name);
      this.onScreen.delete(name);
    }
    this.order = order;
    const note = filterNote(filter, sections, metrics.length);
    this.filterNote.textContent = note.text;
    this.filterNote.dataset.mode = note.mode;
    if (this.search.value !== filter && document.activeElement !== this.search) this.search.value = filter;
    if (!this.list.hidden) this.fillList();
    this.queueVisible();
  }

  slotFor(name) {
    let slot = this.slots.get(name);
    if (slot) return slot;
    const pin = pinButton(name, false, () => this.togglePin(name));
    slot = h("div", { class: "tau-pane-metric", "data-metric": name, "data-points": "0" },
      h("div", { class: "tau-pane-metric-head" }, h("span", { class: "tau-pane-metric-name" }, name), pin));
    this.slots.set(name, slot);
    this.io.observe(slot);
    return slot;
  }

  togglePin(name) {
    const pinned = this.model.get("pinned") || [];
    this.setTrait("pinned", pinned.includes(name) ? pinned.filter((n) => n !== name) : [...pinned, name]);
  }

  toggleList() {
    this.list.hidden = !this.list.hidden;
    this.listButton.setAttribute("aria-expanded", String(!this.list.hidden));
    if (!this.list.hidden) this.fillList();
  }

  /** The searchable list: the names matching the search box (at most LIST_MAX), each to pin or to go to. */
  fillList() {
    const match = compileFilter(this.model.get("filter") || "");
    const metrics = this.model.get("metrics") || [];
    const pinned = new Set(this.model.get("pinned") || []);
    const rows = [];
    let n = 0;
    for (const name of metrics) {
      if (!match.test(name)) continue;
      n += 1;
      if (rows.length >= LIST_MAX) continue;
      rows.push(h("li", { "data-metric": name },
        pinButton(name, pinned.has(name), () => this.togglePin(name)),
        h("button", { type: "button", class: "tau-pane-goto", onclick: () => this.goTo(name) }, name)));
    }
    const more = n > rows.length
      ? h("p", { class: "tau-pane-list-more" }, `${formatNumber(n - rows.length)} more match: refine the search`) : null;
    this.list.replaceChildren(h("ul", {}, ...rows), ...(more ? [more] : []));
    this.list.dataset.matches = String(n);
  }

  /** Open the metric's section, show its slot and scroll it into view. */
  goTo(name) {
    const sections = buildSections(this.model.get("metrics") || [], { pinned: this.model.get("pinned") || [],
      filter: this.model.get("filter") || "", open: this.model.get("sections") || {} });
    const section = sections.find((s) => s.metrics.includes(name));
    if (!section) return;
    this.sections.reveal(section.key, section.metrics.indexOf(name));
    if (!section.open) this.setTrait("sections", { ...(this.model.get("sections") || {}), [section.key]: true });
    else this.render();
    this.slots.get(name)?.scrollIntoView({ block: "center" });
  }

  onIntersect(entries) {
    for (const entry of entries) {
      const name = entry.target.dataset.metric;
      if (entry.isIntersecting) this.onScreen.add(name); else this.onScreen.delete(name);
    }
    this.queueVisible();
  }

  queueVisible() {
    if (this.visibleQueued || this.disposed) return;
    this.visibleQueued = true;
    requestAnimationFrame(() => {
      this.visibleQueued = false;
      if (!this.disposed) this.syncVisible();
    });
  }

  /** Plots for the slots on screen, none for the others; the kernel is told which through `visible`. */
  syncVisible() {
    const names = this.order.filter((n) => this.onScreen.has(n) && this.slots.get(n)?.isConnected);
    const wanted = new Set(names);
    for (const [name, plot] of this.plots) {
      if (wanted.has(name)) continue;
      plot.destroy();
      this.plots.delete(name);
      this.dirty.delete(name);
      this.slots.get(name)?.setAttribute("data-points", "0");
    }
    for (const name of names) {
      if (this.plots.has(name)) continue;
      const plot = new MetricPlot(this, name, this.slots.get(name));
      this.plots.set(name, plot);
      this.dirty.add(name);
    }
    this.root.dataset.plots = String(this.plots.size);
    const gone = reportVisible(this.model, this, names);
    const hidden = (this.store.hidden ??= new Set());
    for (const name of names) hidden.delete(name);
    for (const name of gone) hidden.add(name);
    const xMetric = axisMetric(this.settings.axis);
    if (xMetric !== null) hidden.delete(xMetric); // the x axis's series: kept while it is the axis (the kernel polls it)
    for (const name of hidden) {
      if (hidden.size <= KEEP_HIDDEN) break;
      hidden.delete(name);
      forgetMetric(this.store, name);
    }
    if (this.dirty.size) this.schedule();
  }

  // -- drawing

  redrawAll() {
    for (const plot of this.plots.values()) plot.redraw();
  }

  schedule() {
    if (this.scheduled || this.disposed) return;
    this.scheduled = true;
    requestAnimationFrame(() => this.drain());
  }

  /** Draw the plots whose series changed (only those: the cost follows what is on screen), one plot per task so
   *  that no single task draws them all; what changes meanwhile is drawn in the next round. */
  async drain() {
    const names = [...this.dirty];
    this.dirty.clear();
    for (let i = 0; i < names.length && !this.disposed; i++) {
      const plot = this.plots.get(names[i]);
      if (!plot) continue;
      await plot.update();
      if (i < names.length - 1) await new Promise((resolve) => setTimeout(resolve, 0));
    }
    this.scheduled = false;
    if (this.disposed) return;
    this.root.setAttribute("data-points", String(totalPoints(this.store)));
    if (this.dirty.size) this.schedule();
  }

  hideStaticFallback() {
    // The static output beside the widget (the kernel's picture and line of text) is for where no live view exists.
    const id = this.model.get("pane_id");
    if (!id) return null;
    const sel = `[data-tau-pane-static="${CSS.escape(id)}"]`;
    const style = h("style", {}, `.jp-OutputArea-child:has(${sel}) { display: none; } ${sel} { display: none; }`);
    document.head.append(style);
    return style;
  }

  start() {
    // Slots within a screen's height of the viewport count as on screen: a plot is ready as it scrolls in.
    this.io = new IntersectionObserver((entries) => this.onIntersect(entries), { rootMargin: "200px 0px" });
    this.syncMeta();
    this.render();
    const onMeta = () => this.syncMeta();
    const metaNames = ["state", "status", "runs", "stellar_href", "compare", "total_metrics", "lifecycle", "resources"];
    for (const n of metaNames) this.model.on(`change:${n}`, onMeta);
    const onLayout = () => {
      this.syncMeta();
      this.render();
    };
    const layoutNames = ["metrics", "pinned", "filter", "sections"];
    for (const n of layoutNames) this.model.on(`change:${n}`, onLayout);
    // The runs drawn, or their names, changed (compare= resolved, a sweep's new run, a config read), or how they
    // are drawn (one line with a band): redraw.
    const onRuns = () => {
      this.syncAggregate();
      this.redrawAll();
      this.media.runsChanged(); // a card's panels follow the drawn runs, their names and colours
    };
    this.syncAggregate();
    for (const n of RUN_TRAITS) this.model.on(`change:${n}`, onRuns);
    // Python set the axis (pane.x_axis = "metric:tokens"): draw against it.
    const onAxis = () => {
      const axis = this.model.get("x_axis");
      if (isAxis(axis) && axis !== this.settings.axis) this.setAxis(axis, false);
    };
    this.model.on("change:x_axis", onAxis);
    // This browser's remembered metric axis: the kernel must poll that metric too.
    if (axisMetric(this.settings.axis) !== null && !this.model.get("x_axis")) this.setTrait("x_axis", this.settings.axis);
    const listener = (series) => {
      if (series.metric === axisMetric(this.settings.axis)) {
        for (const name of this.plots.keys()) this.dirty.add(name); // the x of every plot
        this.schedule();
        return;
      }
      if (!this.plots.has(series.metric)) return; // not on screen: nothing to draw
      this.dirty.add(series.metric);
      this.schedule();
    };
    this.store.listeners.add(listener);
    const onMedia = () => this.media.setTags(this.model.get("media"), this.model.get("filter") || "");
    this.model.on("change:media", onMedia);
    this.model.on("change:filter", onMedia); // the search box filters the media tags as it does the metrics
    onMedia();
    const onMediaStep = () => this.media.followModel();
    this.model.on("change:media_step", onMediaStep);
    const onMediaMsg = (msg, buffers) => {
      if (msg && (msg.type === "media" || msg.type === "image")) this.media.receive(msg, buffers);
    };
    this.model.on("msg:custom", onMediaMsg);
    const hiddenStyle = this.hideStaticFallback();
    const onNotice = (notice) => this.header.showNotice(notice);
    this.header.watch.listeners.add(onNotice);
    const reportWidth = () => {
      const w = Math.round(this.el.getBoundingClientRect().width);
      if (w > 0 && Math.abs(w - (this.model.get("width") || 0)) > 50) this.setTrait("width", w);
    };
    const ro = new ResizeObserver(reportWidth);
    ro.observe(this.el);
    return () => {
      this.disposed = true;
      ro.disconnect();
      this.io.disconnect();
      clearTimeout(this.filterTimer);
      this.store.listeners.delete(listener);
      this.header.watch.listeners.delete(onNotice);
      for (const n of metaNames) this.model.off(`change:${n}`, onMeta);
      for (const n of layoutNames) this.model.off(`change:${n}`, onLayout);
      for (const n of RUN_TRAITS) this.model.off(`change:${n}`, onRuns);
      this.model.off("change:x_axis", onAxis);
      this.model.off("change:media", onMedia);
      this.model.off("change:filter", onMedia);
      this.model.off("change:media_step", onMediaStep);
      this.model.off("msg:custom", onMediaMsg);
      this.mediaIo?.disconnect();
      this.media.dispose();
      for (const plot of this.plots.values()) plot.destroy();
      if (hiddenStyle) hiddenStyle.remove();
      try {
        reportVisible(this.model, this, null); // this view shows nothing any more
      } catch {
        // the model is closed already (the kernel went away): nothing to tell it
      }
    };
  }
}
