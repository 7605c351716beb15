// The run page's charts in sections (shared/sections.js: loss first, then by name prefix, big sections collapsed)
// with a search box; a chart is created only when its section is open (a page of charts at a time) and fetched
// only when it scrolls into view: a run of 10,000 metrics costs its headers, not 10,000 reads.
import { h } from "../shared/dom.js";
import { formatNumber } from "../shared/format.js";
import { buildSections, compileFilter, countText } from "../shared/sections.js";
import { createChart, loadChart } from "./chart.js";

const PAGE = 24; // charts an open section shows before "show more"
const FILTER_DELAY_MS = 200;

export class ChartSections {
  /** `metrics` in display order (series.js metricOrder), drawn for `runIds`, into `box`. */
  constructor(metrics, runIds, box) {
    this.metrics = metrics;
    this.runIds = runIds;
    this.box = box;
    this.filter = "";
    this.open = {}; // section → open, as the user left it
    this.pages = new Map();
    this.charts = new Map(); // metric → chart (kept when hidden: reopening does not fetch again)
    this.sectionEls = new Map();
    this.loads = [];
    this.io = new IntersectionObserver((entries) => this.onIntersect(entries), { rootMargin: "300px 0px" });
    this.search = h("input", { type: "search", id: "stellar-search", placeholder: "search metrics (regex)",
      "aria-label": "search metrics" });
    this.search.addEventListener("input", () => {
      clearTimeout(this.timer);
      this.timer = setTimeout(() => {
        this.filter = this.search.value;
        this.render();
      }, FILTER_DELAY_MS);
    });
    this.note = h("span", { class: "stellar-note", id: "stellar-search-note" });
    this.control = h("label", {}, "Search", this.search, this.note);
  }

  render() {
    const sections = buildSections(this.metrics, { filter: this.filter, open: this.open });
    const match = compileFilter(this.filter);
    const keys = new Set();
    const shownCharts = new Set();
    let matched = 0;
    for (const section of sections) {
      keys.add(section.key);
      matched += section.metrics.length;
      const s = this.sectionEl(section.key);
      s.el.dataset.open = String(section.open);
      s.el.dataset.count = String(section.metrics.length);
      s.title.textContent = section.title;
      s.count.textContent = countText(section);
      s.head.setAttribute("aria-expanded", String(section.open));
      this.box.append(s.el);
      const nodes = [];
      if (section.open) {
        const shown = Math.min(section.metrics.length, this.pages.get(section.key) || PAGE);
        for (const name of section.metrics.slice(0, shown)) {
          let chart = this.charts.get(name);
          if (!chart) {
            chart = createChart(name, this.runIds, s.body);
            chart.section.dataset.state = "idle"; // created, not fetched: it fetches when it scrolls into view
            chart.status.textContent = "read when it scrolls into view";
            this.charts.set(name, chart);
          }
          if (!chart.requested) this.io.observe(chart.section);
          nodes.push(chart.section);
          shownCharts.add(name);
        }
        const left = section.metrics.length - shown;
        s.more.hidden = left <= 0;
        s.more.textContent = left > 0 ? `Show ${Math.min(left, PAGE)} more (${formatNumber(left)} not shown)` : "";
      } else {
        s.more.hidden = true;
      }
      s.body.replaceChildren(...nodes);
      s.body.hidden = !section.open;
    }
    for (const [key, s] of this.sectionEls) {
      if (!keys.has(key)) {
        s.el.remove();
        this.sectionEls.delete(key);
      }
    }
    for (const [name, chart] of this.charts) if (!shownCharts.has(name)) this.io.unobserve(chart.section);
    this.note.textContent = match.mode === "all" ? ""
      : `${formatNumber(matched)} of ${formatNumber(this.metrics.length)} metrics match`
        + (match.error ? " (not a valid regex: matched as text)" : "");
    this.note.dataset.mode = match.mode;
    this.observed = shownCharts.size;
  }

  sectionEl(key) {
    let s = this.sectionEls.get(key);
    if (s) return s;
    const title = h("span", { class: "stellar-section-title" });
    const count = h("span", { class: "stellar-section-count" });
    const head = h("button", { type: "button", class: "stellar-section-head" },
      h("span", { class: "stellar-section-caret" }), title, count);
    head.addEventListener("click", () => {
      this.open[key] = s.el.dataset.open !== "true";
      this.render();
    });
    const body = h("div", { class: "stellar-charts" });
    const more = h("button", { type: "button", class: "stellar-more", hidden: true });
    more.addEventListener("click", () => {
      this.pages.set(key, (this.pages.get(key) || PAGE) + PAGE);
      this.render();
    });
    const el = h("section", { class: "stellar-section", "data-section": key }, head, body, more);
    s = { el, head, title, count, body, more };
    this.sectionEls.set(key, s);
    return s;
  }

  onIntersect(entries) {
    for (const entry of entries) {
      if (!entry.isIntersecting) continue;
      const chart = this.charts.get(entry.target.dataset.metric);
      if (!chart || chart.requested) continue;
      chart.requested = true;
      this.io.unobserve(chart.section); // fetched once; a zoom reads again by itself
      this.loads.push(loadChart(chart, null));
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
