// One metric's plot in the pane: every run's raw and smoothed line and its non-finite marks, kept up to date
// with extendTraces for appended points, a restyle of the marks trace for new non-finite marks, and a full
// redraw for anything else. The pane creates one only while its metric is on screen (pane.js).
import Plotly from "../plotly/index.js";
import { h } from "../shared/dom.js";
import { formatNumber } from "../shared/format.js";
import { NON_FINITE_COLOR } from "../shared/palette.js";
import { createSmoother, smoothInto } from "../shared/smoothing.js";
import { interpolate, stepsBetween } from "../shared/walltime.js";
import { markDrawn } from "./marks.js";
import { seriesKey } from "./store.js";

const GL_THRESHOLD = 20000; // points per trace above which a plot switches to WebGL
const TRACES_PER_RUN = 3; // raw, smoothed, non-finite marks
const EMPTY = { steps: [], values: [], nonFinite: { steps: [], values: [] }, wall: { steps: [], wall: [] }, version: 0 };

export class MetricPlot {
  /** `el` is the metric's slot in its section (pane.js), which the plot fills while it exists. */
  constructor(pane, metric, el) {
    this.pane = pane;
    this.metric = metric;
    this.badge = h("span", { class: "tau-pane-nonfinite", "data-nonfinite": "0" });
    this.latest = h("span", { class: "tau-pane-latest" });
    this.div = h("div", { class: "tau-pane-plot" });
    this.el = el;
    this.el.querySelector(".tau-pane-metric-head").append(this.latest, this.badge);
    this.el.append(this.div);
    this.drawn = new Map(); // series key → {version, length, smoother}
    this.ready = false;
    this.zoomed = false;
    this.busy = Promise.resolve();
    // The plot follows its grid cell, which reflows as metrics come and go (plotly's `responsive` follows only the
    // window, with delayed resizes of its own): after every draw and whenever the cell's size changes, compared with
    // the width plotly last drew at.
    this.resizer = new ResizeObserver(() => this.queue(() => this.fit()));
    this.resizer.observe(this.div);
  }

  /** Run one drawing step after the ones before it; plotly calls on one figure must not interleave. */
  queue(step) {
    this.busy = this.busy.then(() => (this.destroyed ? undefined : step())).catch((err) => this.pane.showError(err));
    return this.busy;
  }

  async fit() {
    const width = this.div.getBoundingClientRect().width; // 0 while the metric is hidden
    const drawn = this.div._fullLayout?.width;
    if (this.ready && width && drawn && Math.abs(width - drawn) > 1) await Plotly.Plots.resize(this.div);
  }

  /** Redraw everything (settings or the runs drawn changed). */
  redraw() {
    return this.queue(() => (this.ready ? this.full() : this._update()));
  }

  runs() {
    return this.pane.runIds();
  }

  series(run) {
    return this.pane.store.series.get(seriesKey(run, this.metric));
  }

  traces() {
    const s = this.pane.settings;
    const runs = this.runs();
    const colors = this.pane.colors();
    const labels = this.pane.labels();
    const compare = runs.length > 1;
    this.gl = runs.some((run) => (this.series(run)?.steps.length || 0) > GL_THRESHOLD);
    const type = this.gl ? "scattergl" : "scatter";
    const traces = [];
    runs.forEach((run, i) => {
      const series = this.series(run) || EMPTY;
      const color = colors.get(run);
      const x = this.xFor(series, series.steps);
      const smoother = createSmoother(s.smoothing);
      const ys = [];
      smoothInto(smoother, series.values, ys);
      this.drawn.set(seriesKey(run, this.metric), { version: series.version, marksVersion: series.marksVersion,
        wallVersion: series.wallVersion, length: series.steps.length, smoother });
      // Named by what differs between the runs' configs (lr=0.1); a run the configs do not name keeps its id.
      const label = labels.get(run)?.label ?? run;
      const name = label !== run || i === 0 ? label : `${run} (compare)`;
      const hover = name === run ? { hoverinfo: "x+y+name" } : { hoverinfo: "x+y+name+text", text: run };
      traces.push({ type, mode: "lines", x, y: series.values.slice(), name, legendgroup: run,
        showlegend: compare && !(s.smoothing > 0), line: { color, width: 1 }, opacity: s.smoothing > 0 ? 0.3 : 1,
        ...hover });
      traces.push({ type, mode: "lines", x: x.slice(), y: ys, name, legendgroup: run,
        showlegend: compare && s.smoothing > 0, line: { color, width: 2 }, visible: s.smoothing > 0, ...hover });
      traces.push({ type: "scatter", mode: "markers", ...this.marks(series), yaxis: "y2", name: `${run} non-finite`,
        legendgroup: run, showlegend: false, hoverinfo: "text",
        marker: { symbol: "x-thin-open", size: 10, color: NON_FINITE_COLOR, line: { width: 2, color: NON_FINITE_COLOR } } });
    });
    return traces;
  }

  /** The non-finite marks trace's data: an ✕ on the x axis per mark, its value and step in the hover. */
  marks(series) {
    const nf = series.nonFinite;
    return { x: this.xFor(series, nf.steps), y: nf.steps.map(() => 0.04),
      text: nf.steps.map((st, k) => `${formatNumber(nf.values[k])} at step ${formatNumber(st)}`) };
  }

  xFor(series, steps) {
    if (this.pane.settings.axis === "wall" && this.hasWall()) {
      const wall = series.wall;
      if (wall.steps.length) return interpolate(steps, wall.steps, wall.wall).map((us) => new Date(us / 1000));
    }
    return steps.slice();
  }

  hasWall() {
    const series = this.series(this.runs()[0]);
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
    const config = { displaylogo: false, modeBarButtonsToRemove: ["select2d", "lasso2d"] };
    const p = Plotly.react(this.div, this.traces(), this.layout(), config);
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
      const wall = this.series(this.runs()[0])?.wall;
      range = wall && stepsBetween(wall.steps, wall.wall.map((us) => us / 1000), new Date(lo).getTime(),
        new Date(hi).getTime());
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
    return this.queue(() => this._update());
  }

  async _update() {
    const runs = this.runs();
    if (!this.ready && !runs.some((run) => this.series(run)?.steps.length || this.series(run)?.nonFinite.steps.length)) {
      // Nothing to draw yet: an empty plotly figure would only hold up the first points (the page handles the
      // kernel's messages one after another), so the first draw waits for them.
      this.refreshHead();
      return;
    }
    let needFull = !this.ready;
    const ext = { x: [], y: [], idx: [] };
    const restyle = { x: [], y: [], text: [], idx: [] };
    const wallAxis = this.pane.settings.axis === "wall";
    const marks = [];
    let big = false;
    runs.forEach((run, i) => {
      const series = this.series(run);
      const drawn = this.drawn.get(seriesKey(run, this.metric));
      if (!series) return;
      if (series.steps.length > GL_THRESHOLD) big = true;
      if (!drawn || drawn.version !== series.version || drawn.smoother.weight !== this.pane.settings.smoothing) {
        needFull = true;
        return;
      }
      // Wall times only move a wall-time axis; new non-finite marks restyle their own trace, not the lines.
      if (drawn.wallVersion !== series.wallVersion) {
        drawn.wallVersion = series.wallVersion;
        if (wallAxis) needFull = true;
      }
      if (drawn.marksVersion !== series.marksVersion) {
        drawn.marksVersion = series.marksVersion;
        const m = this.marks(series);
        restyle.x.push(m.x);
        restyle.y.push(m.y);
        restyle.text.push(m.text);
        restyle.idx.push(TRACES_PER_RUN * i + 2);
      }
      if (series.steps.length > drawn.length) {
        const steps = series.steps.slice(drawn.length);
        const values = series.values.slice(drawn.length);
        const smoothed = [];
        // New values that end a constant series change the smoothed line before them: redraw it whole.
        if (!smoothInto(drawn.smoother, values, smoothed)) needFull = true;
        const x = this.xFor(series, steps);
        ext.idx.push(TRACES_PER_RUN * i, TRACES_PER_RUN * i + 1);
        ext.x.push(x, x.slice());
        ext.y.push(values, smoothed);
        drawn.length = series.steps.length;
      }
    });
    if (big !== !!this.gl) needFull = true;
    for (const run of runs) {
      const series = this.series(run);
      if (series) {
        marks.push(...series.pendingMarks);
        series.pendingMarks = [];
      }
    }
    if (needFull) {
      await this.full();
      await this.fit();
    } else {
      if (restyle.idx.length) {
        await Plotly.restyle(this.div, { x: restyle.x, y: restyle.y, text: restyle.text }, restyle.idx);
      }
      if (ext.idx.length) await Plotly.extendTraces(this.div, { x: ext.x, y: ext.y }, ext.idx);
    }
    this.refreshHead();
    if (marks.length) {
      await new Promise((resolve) => requestAnimationFrame(() => resolve()));
      markDrawn(marks);
    }
  }

  refreshHead() {
    const runs = this.runs();
    const info = this.pane.model.get("runs") || {};
    let points = 0;
    let nonFinite = 0;
    const where = [];
    for (const run of runs) {
      const series = this.series(run);
      if (series) points += series.steps.length;
      nonFinite += ((info[run] || {}).metrics || {})[this.metric]?.non_finite_count || 0;
      if (series) series.nonFinite.steps.slice(0, 3).forEach((st, k) =>
        where.push(`${formatNumber(series.nonFinite.values[k])} at step ${formatNumber(st)}`));
    }
    this.el.setAttribute("data-points", String(points));
    const m = ((info[runs[0]] || {}).metrics || {})[this.metric] || {};
    this.latest.textContent = m.last_step !== undefined && m.last_step !== null
      ? `step ${formatNumber(m.last_step)}: ${formatNumber(m.last_value)}` : "";
    this.badge.setAttribute("data-nonfinite", String(nonFinite));
    this.badge.textContent = nonFinite
      ? `⚠ ${nonFinite} non-finite value${nonFinite === 1 ? "" : "s"}${where.length ? ` (${where.join(", ")})` : ""}`
      : "";
  }

  async snapshot() {
    return Plotly.toImage(this.div, { format: "png", width: 800, height: 220 });
  }

  /** Take the plot out of its slot (the metric scrolled away, its section closed, or the view ended). */
  destroy() {
    this.destroyed = true;
    this.resizer.disconnect();
    // After any drawing step in flight: plotly must not draw into a purged div.
    this.busy.then(() => {
      Plotly.purge(this.div);
      this.div.remove();
      this.latest.remove();
      this.badge.remove();
    });
  }
}
