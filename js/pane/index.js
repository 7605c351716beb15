// The loss pane's browser side: draws what the kernel sends (anywidget render), one small plot per metric.
import Plotly from "plotly.js-dist-min";
import { storeFor, totalPoints, seriesKey } from "./store.js";
import { createSmoother, smooth, smoothInto } from "./smoothing.js";
import { PANE_CSS } from "./style.js";

const GL_THRESHOLD = 20000; // points per trace above which a plot switches to WebGL
const SNAPSHOT_EVERY_MS = 5000;
const COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"];
const MAX_MARKS = 20000;

function marksLog() {
  // Latency marks for tests and the benchmark: one per appended chunk, when it was drawn.
  if (!window.__tauPaneMarks) window.__tauPaneMarks = [];
  return window.__tauPaneMarks;
}

function now() {
  return performance.timeOrigin + performance.now();
}

function h(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v);
  }
  for (const c of children) node.append(c);
  return node;
}

function fmt(v) {
  if (v === null || v === undefined) return "–";
  if (!Number.isFinite(v)) return String(v);
  const a = Math.abs(v);
  return a !== 0 && (a < 1e-3 || a >= 1e5) ? v.toExponential(3) : String(+v.toPrecision(5));
}

function interpolateWall(wall, steps) {
  // Wall time (ms since epoch) for each step, from (step, µs) samples; null when there are none.
  const ws = wall.steps, wt = wall.wall;
  if (!ws.length) return null;
  const out = new Array(steps.length);
  let j = 0;
  for (let i = 0; i < steps.length; i++) {
    const s = steps[i];
    while (j < ws.length - 2 && ws[j + 1] < s) j++;
    let t;
    if (ws.length === 1) t = wt[0];
    else {
      const a = Math.min(j, ws.length - 2), b = a + 1;
      const span = ws[b] - ws[a];
      t = span ? wt[a] + ((s - ws[a]) * (wt[b] - wt[a])) / span : wt[a];
    }
    out[i] = new Date(t / 1000);
  }
  return out;
}

function stepsInRange(wall, lo, hi) {
  // Inverse of interpolateWall for a zoom range on the wall-time axis (ms → steps).
  const ws = wall.steps, wt = wall.wall;
  if (!ws.length) return null;
  const toStep = (ms) => {
    const us = ms * 1000;
    let best = ws[0];
    for (let i = 0; i < ws.length; i++) if (wt[i] <= us) best = ws[i];
    return best;
  };
  return [toStep(lo), toStep(hi) + 1];
}

class MetricPlot {
  constructor(pane, metric) {
    this.pane = pane;
    this.metric = metric;
    this.title = h("span", { class: "tau-pane-metric-name" }, metric);
    this.badge = h("span", { class: "tau-pane-nonfinite", "data-nonfinite": "0" });
    this.latest = h("span", { class: "tau-pane-latest" });
    this.div = h("div", { class: "tau-pane-plot" });
    this.el = h("div", { class: "tau-pane-metric", "data-metric": metric, "data-points": "0" },
      h("div", { class: "tau-pane-metric-head" }, this.title, this.latest, this.badge), this.div);
    this.drawn = new Map(); // series key → {version, length, smoother}
    this.ready = false;
    this.zoomed = false;
    this.busy = Promise.resolve();
  }

  runs() {
    return this.pane.runIds();
  }

  traces() {
    const s = this.pane.settings;
    const traces = [];
    let big = false;
    for (const run of this.runs()) {
      const series = this.pane.store.series.get(seriesKey(run, this.metric));
      if (series && series.steps.length > GL_THRESHOLD) big = true;
    }
    this.gl = big;
    const type = big ? "scattergl" : "scatter";
    this.runs().forEach((run, i) => {
      const series = this.pane.store.series.get(seriesKey(run, this.metric)) || { steps: [], values: [],
        nonFinite: { steps: [], values: [] }, wall: { steps: [], wall: [] }, version: 0 };
      const color = COLORS[i % COLORS.length];
      const x = this.xFor(series, series.steps);
      const smoother = createSmoother(s.smoothing);
      const ys = smoothInto(smoother, series.values, []);
      this.drawn.set(seriesKey(run, this.metric), { version: series.version, length: series.steps.length, smoother });
      const name = i === 0 ? run : `${run} (compare)`;
      traces.push({ type, mode: "lines", x, y: series.values.slice(), name, legendgroup: run, showlegend: false,
        line: { color, width: 1 }, opacity: s.smoothing > 0 ? 0.3 : 1, hoverinfo: "x+y+name" });
      traces.push({ type, mode: "lines", x: x.slice(), y: ys, name, legendgroup: run,
        showlegend: this.runs().length > 1, line: { color, width: 2 }, visible: s.smoothing > 0 });
      const nf = series.nonFinite;
      traces.push({ type: "scatter", mode: "markers", x: this.xFor(series, nf.steps), y: nf.steps.map(() => 0.04),
        yaxis: "y2", name: `${run} non-finite`, showlegend: false,
        text: nf.steps.map((st, k) => `${fmt(nf.values[k])} at step ${st}`), hoverinfo: "text",
        marker: { symbol: "x-thin-open", size: 10, color: "#d62728", line: { width: 2, color: "#d62728" } } });
    });
    return traces;
  }

  xFor(series, steps) {
    if (this.pane.settings.axis === "wall" && this.hasWall()) {
      const x = interpolateWall(series.wall, steps);
      if (x) return x;
    }
    return steps.slice();
  }

  hasWall() {
    const series = this.pane.store.series.get(seriesKey(this.runs()[0], this.metric));
    return !!(series && series.wall.steps.length);
  }

  layout() {
    const s = this.pane.settings;
    // A Portal without wall times (TauGrid's v2 reads carry none) keeps the step axis.
    const wall = s.axis === "wall" && this.hasWall();
    return {
      height: 220, margin: { l: 55, r: 10, t: 8, b: 32 }, showlegend: this.runs().length > 1,
      legend: { orientation: "h", y: 1.15, x: 0 },
      xaxis: { title: { text: wall ? "wall time" : "step", standoff: 4 }, type: wall ? "date" : "linear",
        autorange: true },
      yaxis: { type: s.logY ? "log" : "linear", autorange: true, zeroline: false },
      yaxis2: { overlaying: "y", range: [0, 1], visible: false, fixedrange: true },
      uirevision: `${s.axis}|${s.logY}`,
      datarevision: Date.now(),
    };
  }

  full() {
    const traces = this.traces();
    const config = { displaylogo: false, responsive: true, modeBarButtonsToRemove: ["select2d", "lasso2d"] };
    const p = Plotly.react(this.div, traces, this.layout(), config);
    if (!this.ready) {
      this.ready = true;
      this.div.on("plotly_relayout", (ev) => this.onRelayout(ev));
    }
    return p;
  }

  onRelayout(ev) {
    if (!ev) return;
    if (ev["xaxis.autorange"] === true) {
      if (this.zoomed) {
        this.zoomed = false;
        this.pane.model.send({ type: "unzoom", metric: this.metric });
      }
      return;
    }
    let lo = ev["xaxis.range[0]"], hi = ev["xaxis.range[1]"];
    if (lo === undefined && Array.isArray(ev["xaxis.range"])) [lo, hi] = ev["xaxis.range"];
    if (lo === undefined || hi === undefined) return;
    let range;
    if (this.pane.settings.axis === "wall") {
      const series = this.pane.store.series.get(seriesKey(this.runs()[0], this.metric));
      range = series && stepsInRange(series.wall, new Date(lo).getTime(), new Date(hi).getTime());
      if (!range) return;
    } else {
      range = [Math.floor(Number(lo)), Math.ceil(Number(hi))];
    }
    this.zoomed = true;
    this.pane.model.send({ type: "zoom", metric: this.metric, start_step: Math.max(0, range[0]),
      end_step: Math.max(0, range[1]) });
  }

  /** Draw what changed: appended points with extendTraces, anything else with a full react. */
  update() {
    this.busy = this.busy.then(() => this._update()).catch((err) => this.pane.showError(err));
    return this.busy;
  }

  async _update() {
    const runs = this.runs();
    let needFull = !this.ready;
    const ext = { x: [], y: [], idx: [] };
    const marks = [];
    let big = false;
    runs.forEach((run, i) => {
      const key = seriesKey(run, this.metric);
      const series = this.pane.store.series.get(key);
      const drawn = this.drawn.get(key);
      if (!series) return;
      if (series.steps.length > GL_THRESHOLD) big = true;
      if (!drawn || drawn.version !== series.version || drawn.smoother.weight !== this.pane.settings.smoothing) {
        needFull = true;
        return;
      }
      if (series.steps.length > drawn.length) {
        const steps = series.steps.slice(drawn.length);
        const values = series.values.slice(drawn.length);
        const x = this.xFor(series, steps);
        ext.idx.push(3 * i, 3 * i + 1);
        ext.x.push(x, x.slice());
        ext.y.push(values, smoothInto(drawn.smoother, values, []));
        drawn.length = series.steps.length;
      }
      marks.push(...series.pendingMarks);
      series.pendingMarks = [];
    });
    if (big !== !!this.gl) needFull = true;
    if (needFull) {
      for (const run of runs) {
        const series = this.pane.store.series.get(seriesKey(run, this.metric));
        if (series) { marks.push(...series.pendingMarks); series.pendingMarks = []; }
      }
      await this.full();
    } else if (ext.idx.length) {
      await Plotly.extendTraces(this.div, { x: ext.x, y: ext.y }, ext.idx);
    }
    this.refreshHead();
    if (marks.length) {
      await new Promise((resolve) => requestAnimationFrame(() => resolve()));
      const drawnAt = now();
      const log = marksLog();
      for (const m of marks) log.push({ ...m, drawn_at: drawnAt });
      if (log.length > MAX_MARKS) log.splice(0, log.length - MAX_MARKS);
    }
  }

  refreshHead() {
    let points = 0;
    for (const run of this.runs()) {
      const series = this.pane.store.series.get(seriesKey(run, this.metric));
      if (series) points += series.steps.length;
    }
    this.el.setAttribute("data-points", String(points));
    const primary = this.runs()[0];
    const info = ((this.pane.model.get("runs") || {})[primary] || {}).metrics || {};
    const m = info[this.metric] || {};
    this.latest.textContent = m.last_step !== undefined && m.last_step !== null
      ? `step ${m.last_step}: ${fmt(m.last_value)}` : "";
    let nonFinite = 0;
    const where = [];
    for (const run of this.runs()) {
      const rm = (((this.pane.model.get("runs") || {})[run] || {}).metrics || {})[this.metric] || {};
      nonFinite += rm.non_finite_count || 0;
      const series = this.pane.store.series.get(seriesKey(run, this.metric));
      if (series) series.nonFinite.steps.slice(0, 3).forEach((st, k) =>
        where.push(`${fmt(series.nonFinite.values[k])} at step ${st}`));
    }
    this.badge.setAttribute("data-nonfinite", String(nonFinite));
    this.badge.textContent = nonFinite
      ? `⚠ ${nonFinite} non-finite value${nonFinite === 1 ? "" : "s"}${where.length ? ` (${where.join(", ")})` : ""}`
      : "";
  }

  async snapshot() {
    return Plotly.toImage(this.div, { format: "png", width: 800, height: 220 });
  }

  destroy() {
    Plotly.purge(this.div);
  }
}

class Pane {
  constructor(model, el) {
    this.model = model;
    this.el = el;
    this.store = storeFor(model);
    this.settings = { smoothing: 0, logY: false, axis: "step", hidden: new Set() };
    this.plots = new Map();
    this.scheduled = false;
    this.lastSnapshot = 0;
    this.snapshotDirty = false;
    this.disposed = false;
    this.build();
  }

  runIds() {
    const primary = this.model.get("run_id");
    return [primary, ...(this.model.get("compare") || []).filter((r) => r !== primary)];
  }

  build() {
    this.root = h("div", { class: "tau-pane", "data-state": "", "data-status": "connecting", "data-points": "0" });
    this.stateBadge = h("span", { class: "tau-pane-state" });
    this.runLabel = h("span", { class: "tau-pane-run" });
    this.link = h("a", { class: "tau-pane-stellar", target: "_blank", rel: "noopener" }, "Open in Stellar ↗");
    this.statusLine = h("div", { class: "tau-pane-status", role: "status" });
    const smoothingValue = h("span", { class: "tau-pane-smoothing-value" }, "0");
    this.smoothingInput = h("input", { type: "range", min: "0", max: "0.99", step: "0.01", value: "0",
      "aria-label": "smoothing", oninput: (e) => {
        this.settings.smoothing = Number(e.target.value);
        smoothingValue.textContent = e.target.value;
        this.redrawAll();
      } });
    this.logInput = h("input", { type: "checkbox", "aria-label": "log scale", onchange: (e) => {
      this.settings.logY = e.target.checked;
      this.redrawAll();
    } });
    this.axisSelect = h("select", { "aria-label": "x axis", onchange: (e) => {
      this.settings.axis = e.target.value;
      this.redrawAll();
    } }, h("option", { value: "step" }, "step"), h("option", { value: "wall" }, "wall time"));
    this.toggles = h("span", { class: "tau-pane-toggles" });
    this.grid = h("div", { class: "tau-pane-grid" });
    const header = h("div", { class: "tau-pane-header" }, this.runLabel, this.stateBadge, this.link);
    const controls = h("div", { class: "tau-pane-controls" },
      h("label", {}, "smoothing ", this.smoothingInput, " ", smoothingValue),
      h("label", {}, this.logInput, " log y"), h("label", {}, "x: ", this.axisSelect), this.toggles);
    this.errorLine = h("div", { class: "tau-pane-error" });
    this.root.append(h("style", {}, PANE_CSS), header, this.statusLine, controls, this.grid, this.errorLine);
    this.el.append(this.root);
  }

  showError(err) {
    this.errorLine.textContent = `drawing failed: ${err && err.message ? err.message : err}`;
    console.warn("tau loss pane:", err);
  }

  syncMeta() {
    const state = this.model.get("state") || "";
    const status = this.model.get("status") || {};
    this.root.setAttribute("data-state", state);
    this.root.setAttribute("data-status", status.kind || "");
    this.runLabel.textContent = this.model.get("run_id");
    this.stateBadge.textContent = state || "state unknown";
    this.stateBadge.className = `tau-pane-state tau-pane-state-${state || "unknown"}`;
    const href = this.model.get("stellar_href");
    if (href) this.link.setAttribute("href", href); else this.link.removeAttribute("href");
    let words = status.message || "";
    if (state === "failed" && !/failed/.test(words)) words = `the run failed. ${words}`;
    this.statusLine.textContent = words;
    this.statusLine.className = `tau-pane-status tau-pane-status-${status.kind || "unknown"}`;
    this.syncPlots();
    for (const plot of this.plots.values()) plot.refreshHead();
  }

  syncPlots() {
    const metrics = this.model.get("metrics") || [];
    for (const [name, plot] of this.plots) {
      if (!metrics.includes(name)) {
        plot.destroy();
        plot.el.remove();
        this.plots.delete(name);
      }
    }
    this.toggles.textContent = "";
    metrics.forEach((name) => {
      const box = h("input", { type: "checkbox", "data-metric": name, onchange: (e) => {
        if (e.target.checked) this.settings.hidden.delete(name); else this.settings.hidden.add(name);
        this.syncPlots();
      } });
      box.checked = !this.settings.hidden.has(name);
      this.toggles.append(h("label", {}, box, ` ${name}`));
      let plot = this.plots.get(name);
      if (!plot) {
        plot = new MetricPlot(this, name);
        this.plots.set(name, plot);
        plot.update();
      }
      plot.el.style.display = this.settings.hidden.has(name) ? "none" : "";
      this.grid.append(plot.el); // keeps the catalog order: loss first
    });
  }

  redrawAll() {
    for (const plot of this.plots.values()) plot.full();
  }

  schedule() {
    if (this.scheduled || this.disposed) return;
    this.scheduled = true;
    requestAnimationFrame(() => {
      this.scheduled = false;
      if (this.disposed) return;
      const updates = [...this.plots.values()].map((p) => p.update());
      this.root.setAttribute("data-points", String(totalPoints(this.store)));
      this.snapshotDirty = true;
      Promise.all(updates).then(() => this.maybeSnapshot());
    });
  }

  maybeSnapshot() {
    const t = Date.now();
    const terminal = ["succeeded", "failed", "cancelled", "completed"].includes(this.model.get("state"));
    if (!this.snapshotDirty || (!terminal && t - this.lastSnapshot < SNAPSHOT_EVERY_MS)) return;
    const first = [...this.plots.values()].find((p) => p.ready && !this.settings.hidden.has(p.metric));
    if (!first) return;
    this.lastSnapshot = t;
    this.snapshotDirty = false;
    first.snapshot().then((url) => {
      if (this.disposed || !url) return;
      this.model.set("snapshot", url);
      this.model.save_changes();
    }).catch(() => {});
  }

  hideStaticFallback() {
    // The saved-notebook fallback (a static image output beside the widget) is only for when no live view exists.
    const id = this.model.get("pane_id");
    if (!id) return null;
    const sel = `[data-tau-pane-static="${CSS.escape(id)}"]`;
    const style = h("style", {}, `.jp-OutputArea-child:has(${sel}) { display: none; } ${sel} { display: none; }`);
    document.head.append(style);
    return style;
  }

  start() {
    this.syncMeta();
    const onMeta = () => this.syncMeta();
    const names = ["state", "status", "metrics", "runs", "stellar_href", "compare"];
    for (const n of names) this.model.on(`change:${n}`, onMeta);
    const listener = () => this.schedule();
    this.store.listeners.add(listener);
    const hiddenStyle = this.hideStaticFallback();
    const reportWidth = () => {
      const w = Math.round(this.el.getBoundingClientRect().width);
      if (w > 0 && Math.abs(w - (this.model.get("width") || 0)) > 50) {
        this.model.set("width", w);
        this.model.save_changes();
      }
    };
    const ro = new ResizeObserver(reportWidth);
    ro.observe(this.el);
    this.schedule();
    return () => {
      this.disposed = true;
      ro.disconnect();
      this.store.listeners.delete(listener);
      for (const n of names) this.model.off(`change:${n}`, onMeta);
      for (const plot of this.plots.values()) plot.destroy();
      if (hiddenStyle) hiddenStyle.remove();
    };
  }
}

export default {
  initialize({ model }) {
    // Listen before any view exists: chunks sent while the page builds the first view are kept.
    storeFor(model);
    model.send({ type: "hello", width: model.get("width") });
  },
  render({ model, el }) {
    return new Pane(model, el).start();
  },
};
