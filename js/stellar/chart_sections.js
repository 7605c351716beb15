// The run page's charts in sections (shared/sections.js: loss first, then by name prefix, big sections collapsed)
// with a search box; a chart is created only when its section is open (a page of charts at a time,
// shared/paged_sections.js) and fetched only when it scrolls into view: a run of 10,000 metrics costs its headers,
// not 10,000 reads.
import { h } from "../shared/dom.js";
import { PagedSections, filterNote } from "../shared/paged_sections.js";
import { buildSections } from "../shared/sections.js";
import { writeView } from "./address.js";
import { createChart, loadChart, restoreZoom } from "./chart.js";
import { state } from "./page.js";

const PAGE = 24; // charts an open section shows before "Show more"
const FILTER_DELAY_MS = 200;

export class ChartSections {
  /** `metrics` in display order (series.js metricOrder), drawn for `runIds`, into `box`. */
  constructor(metrics, runIds, box) {
    this.metrics = metrics;
    this.runIds = runIds;
    this.box = box;
    this.filter = state.search;
    this.open = {}; // section → open, as the user left it
    this.charts = new Map(); // metric → chart (kept when hidden: reopening does not fetch again)
    this.sections = new PagedSections(box, { prefix: "stellar", bodyClass: "stellar-charts", page: PAGE,
      item: (name, body) => this.chartNode(name, body),
      toggle: (key, open) => {
        this.open[key] = open;
        this.render();
      },
      rerender: () => this.render() });
    this.loads = [];
    this.filterListeners = []; // others the search filters too (the Media section's tags)
    this.io = new IntersectionObserver((entries) => this.onIntersect(entries), { rootMargin: "300px 0px" });
    this.search = h("input", { type: "search", id: "stellar-search", placeholder: "search metrics (regex)",
      "aria-label": "search metrics", value: state.search });
    this.search.addEventListener("input", () => {
      clearTimeout(this.timer);
      this.timer = setTimeout(() => {
        this.filter = this.search.value;
        state.search = this.filter;
        this.render();
        for (const fn of this.filterListeners) fn(this.filter);
        writeView();
      }, FILTER_DELAY_MS);
    });
    this.note = h("span", { class: "stellar-note", id: "stellar-search-note" });
    this.control = h("label", {}, "Search", this.search, this.note);
  }

  render() {
    const sections = buildSections(this.metrics, { pinned: state.pins, filter: this.filter, open: this.open });
    const shown = new Set(this.sections.render(sections));
    for (const [name, chart] of this.charts) if (!shown.has(name)) this.io.unobserve(chart.section);
    const note = filterNote(this.filter, sections, this.metrics.length);
    this.note.textContent = note.text;
    this.note.dataset.mode = note.mode;
    this.observed = shown.size;
  }

  /** The node of a shown metric: its chart, created (not fetched) the first time and observed until fetched. */
  chartNode(name, body) {
    let chart = this.charts.get(name);
    if (!chart) {
      chart = createChart(name, this.runIds, body);
      chart.section.dataset.state = "idle"; // created, not fetched: it fetches when it scrolls into view
      chart.status.textContent = "read when it scrolls into view";
      chart.section.querySelector("h3").append(this.pinButton(name));
      this.charts.set(name, chart);
    }
    if (!chart.requested) this.io.observe(chart.section);
    return chart.section;
  }

  /** The chart's pin: a pinned metric is shown first, in the Pinned section, and the address keeps it. */
  pinButton(name) {
    const pinned = () => state.pins.includes(name);
    const button = h("button", { type: "button", class: "stellar-pin", "aria-pressed": String(pinned()),
      title: "pin this chart to the top (kept in the page's address)", text: pinned() ? "unpin" : "pin" });
    button.addEventListener("click", () => {
      state.pins = pinned() ? state.pins.filter((n) => n !== name) : [...state.pins, name];
      button.setAttribute("aria-pressed", String(pinned()));
      button.textContent = pinned() ? "unpin" : "pin";
      this.render();
      writeView();
    });
    return button;
  }

  onIntersect(entries) {
    for (const entry of entries) {
      if (!entry.isIntersecting) continue;
      const chart = this.charts.get(entry.target.dataset.metric);
      if (!chart || chart.requested) continue;
      chart.requested = true;
      this.io.unobserve(chart.section); // fetched once; a zoom reads again by itself
      // A zoom the address names is applied as the user's would be: the whole series, then the window.
      this.loads.push(loadChart(chart, null).then(() => restoreZoom(chart)));
    }
    if (this.firstRound) {
      const resolve = this.firstRound;
      this.firstRound = null;
      resolve();
    }
  }

  /** Renders, then resolves once the charts on screen at first have been fetched and drawn. */
  async start() {
    const firstRound = new Promise((resolve) => {
      this.firstRound = resolve;
    });
    this.render();
    // No chart to observe (every section collapsed): the observer never calls back.
    if (this.observed) await firstRound;
    else this.firstRound = null;
    await Promise.all(this.loads);
  }
}
