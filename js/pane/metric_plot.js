// One metric's plot in the pane: every run's raw and smoothed line and its non-finite marks, kept up to date
// with extendTraces for appended points, a restyle of the marks trace for new non-finite marks, and a full
// redraw for anything else. The pane creates one only while its metric is on screen (pane.js). On a metric x axis
// (`metric:tokens`) each point takes the x metric's value at its step from the same store (shared/x_metric.js).
import Plotly from "../plotly/index.js";
import { h } from "../shared/dom.js";
import { formatNumber } from "../shared/format.js";
import { aggregateRuns, bandLabel } from "../shared/aggregate.js";
import { checkpointTraces } from "../shared/checkpoint_marks.js";
import { NON_FINITE_COLOR } from "../shared/palette.js";
import { createSmoother, smooth, smoothInto } from "../shared/smoothing.js";
import { axisMetric, axisTitle, relativeUnit } from "../shared/time_axis.js";
import { alignOnX, joinX, missingNote, stepsForX } from "../shared/x_metric.js";
import { interpolate, stepsBetween, wallDate } from "../shared/walltime.js";
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
    this.xNote = h("span", { class: "tau-pane-xnote", "data-missing": "0" });
    this.div = h("div", { class: "tau-pane-plot" });
    this.el = el;
    this.el.querySelector(".tau-pane-metric-head").append(this.latest, this.badge, this.xNote);
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

  /** The axis drawn: a time axis only when the points carry wall times (TauGrid's v2 reads carry none); a metric
   *  axis once some drawn run has points of that metric (until then, and for a metric no run has, steps). */
  axis() {
    const axis = this.pane.settings.axis;
    const metric = axisMetric(axis);
    if (metric !== null) return this.runs().some((run) => this.xSeries(run)?.steps.length) ? axis : "step";
    return axis !== "step" && this.hasWall() ? axis : "step";
  }

  /** The x metric's series of `run` on a metric axis (held in the same store as the plotted ones), else null. */
  xSeries(run) {
    const metric = axisMetric(this.pane.settings.axis);
    return metric === null ? null : this.pane.store.series.get(seriesKey(run, metric)) || null;
  }

  /** The unit of a relative-time axis, from the longest drawn series' span. */
  relativeUnit() {
    let seconds = 0;
    for (const run of this.runs()) {
      const wall = this.series(run)?.wall;
      if (wall && wall.wall.length) seconds = Math.max(seconds, (wall.wall[wall.wall.length - 1] - wall.wall[0]) / 1e6);
    }
    return relativeUnit(seconds);
  }

  /**
   * The runs as one line and a band (shared/aggregate.js), aligned on the axis drawn; each run smoothed first
   * when smoothing is on. The non-finite marks of every run stay, each on its own trace after the band's.
   */
  aggregateTraces(agg) {
    const runs = this.runs();
    const color = this.pane.colors().get(runs[0]);
    const labels = this.pane.labels();
    const s = this.pane.settings;
    const input = [];
    const onMetric = axisMetric(this.axis()) !== null;
    for (const run of runs) {
      const series = this.series(run);
      if (!series) continue;
      const x = this.xFor(series, series.steps).map((v) => (v instanceof Date ? v.getTime() : v));
      const values = s.smoothing > 0 ? smooth(series.values, s.smoothing) : series.values;
      if (onMetric) {
        // Aligned on the metric (points without it left out, equal x last-wins); traces() checked it never goes down.
        input.push({ id: run, ...alignOnX(x, values) });
      } else input.push({ id: run, steps: x, values });
    }
    const result = aggregateRuns(input, agg);
    // Non-finite observations come as marks, not values: the band left them out, and says how many.
    for (const r of input) result.nonFinite[r.id] += this.series(r.id).nonFinite.steps.length;
    const wall = this.axis() === "wall";
    const x = [...result.steps].map((v) => (wall && v !== null ? new Date(v) : v));
    const names = input.map((r) => labels.get(r.id)?.label ?? r.id).join(", ");
    const edge = { type: "scatter", mode: "lines", x, line: { width: 0, color }, hoverinfo: "skip", showlegend: false };
    const traces = [];
    if (agg.spread !== "none") {
      traces.push({ ...edge, y: result.lower });
      traces.push({ ...edge, y: result.upper, fill: "tonexty", fillcolor: `${color}33` });
    }
    traces.push({ type: "scatter", mode: "lines", x, y: result.center, line: { color, width: 2 },
      name: bandLabel(this.metric, result, agg), showlegend: true, hoverinfo: "x+y+text",
      text: result.count.map((n) => `${n} of ${input.length} runs: ${names}`) });
    runs.forEach((run) => {
      traces.push({ type: "scatter", mode: "markers", ...this.marks(this.series(run) || EMPTY), yaxis: "y2",
        name: `${run} non-finite`, showlegend: false, hoverinfo: "text",
        marker: { symbol: "x-thin-open", size: 10, color: NON_FINITE_COLOR, line: { width: 2, color: NON_FINITE_COLOR } } });
    });
    for (const run of runs) {
      const series = this.series(run) || EMPTY;
      this.drawn.set(seriesKey(run, this.metric), { version: series.version, marksVersion: series.marksVersion,
        wallVersion: series.wallVersion, length: series.steps.length, smoother: createSmoother(s.smoothing),
        x: this.xState(run) });
    }
    traces.push(...this.checkpointMarks());
    return traces;
  }

  /**
   * The runs' checkpoints and retries as markers along the top: the primary run's (the `checkpoints` trait) and,
   * comparing, each compared run's (`compare_checkpoints`) in that run's colour; after every run's traces so
   * that their indices stay TRACES_PER_RUN apart. Drawn anew by a full redraw when they change.
   */
  checkpointMarks() {
    const runs = this.runs();
    const compared = this.pane.model.get("compare_checkpoints") || {};
    const colors = runs.length > 1 ? this.pane.colors() : null;
    const out = [];
    runs.forEach((run, i) => {
      const answer = i === 0 ? this.pane.model.get("checkpoints") || null : compared[run] || null;
      const series = this.series(run) || { ...EMPTY, run };
      out.push(...checkpointTraces(answer, (steps) => this.xFor(series, steps), run, colors ? colors.get(run) : null));
    });
    return out;
  }

  traces() {
    const s = this.pane.settings;
    this.unit = this.axis() === "relative" ? this.relativeUnit() : null;
    let agg = this.pane.aggregate();
    // A band aligns the runs on the x axis: an x metric that goes down in some run cannot be aligned on.
    this.unaligned = null;
    if (agg && axisMetric(this.axis()) !== null) {
      this.unaligned = this.runs().find((run) => {
        const series = this.series(run);
        return series && !alignOnX(this.xFor(series, series.steps), series.values);
      }) || null;
      if (this.unaligned) agg = null;
    }
    this.aggregated = !!agg;
    if (agg) return this.aggregateTraces(agg);
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
        wallVersion: series.wallVersion, length: series.steps.length, smoother, x: this.xState(run) });
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
    traces.push(...this.checkpointMarks());
    return traces;
  }

  /** The non-finite marks trace's data: an ✕ on the x axis per mark, its value and step in the hover. */
  marks(series) {
    const nf = series.nonFinite;
    return { x: this.xFor(series, nf.steps), y: nf.steps.map(() => 0.04),
      text: nf.steps.map((st, k) => `${formatNumber(nf.values[k])} at step ${formatNumber(st)}`) };
  }

  /** What a drawn series' x depended on, on a metric axis: the x series' version and last step (null: none). */
  xState(run) {
    const xs = this.xSeries(run);
    return xs ? { version: xs.version, last: xs.steps.length ? xs.steps[xs.steps.length - 1] : -Infinity } : null;
  }

  xFor(series, steps) {
    const axis = this.axis();
    if (axisMetric(axis) !== null) {
      const xs = this.xSeries(series.run);
      return xs ? joinX(steps, xs.steps, xs.values).x : steps.map(() => null);
    }
    const wall = series.wall;
    if (axis !== "step" && wall.steps.length) {
      const us = interpolate(steps, wall.steps, wall.wall);
      if (axis === "wall") return us.map(wallDate);
      // Relative time: since the series' first point (its earliest wall-time sample), so compared runs start at 0.
      const unit = this.unit || this.relativeUnit();
      return us.map((t) => (t - wall.wall[0]) / 1e6 / unit.seconds);
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
    const axis = this.axis();
    const wall = axis === "wall";
    return {
      height: 220, margin: { l: 55, r: 10, t: 8, b: 32 }, showlegend: this.runs().length > 1 || this.aggregated,
      legend: { orientation: "h", y: 1.15, x: 0 },
      xaxis: { title: { text: axisTitle(axis, this.unit), standoff: 4 }, type: wall ? "date" : "linear",
        autorange: true },
      yaxis: { type: s.logY ? "log" : "linear", autorange: true, zeroline: false },
      yaxis2: { overlaying: "y", range: [0, 1], visible: false, fixedrange: true },
      uirevision: `${axis}|${s.logY}|${this.aggregated}`,
      datarevision: Date.now(),
    };
  }

  full() {
    const config = { displaylogo: false, modeBarButtonsToRemove: ["select2d", "lasso2d"] };
    const p = Plotly.react(this.div, this.traces(), this.layout(), config);
    if (!this.ready) {
      this.ready = true;
      this.div.on("plotly_relayout", (ev) => this.onRelayout(ev));
      this.div.on("plotly_click", (ev) => this.onClick(ev));
    }
    return p;
  }

  /** A click on a point moves the pane's step cursor (the media cards follow) to that point's step. */
  onClick(ev) {
    const step = this.stepOfPoint(ev?.points?.[0]);
    if (step !== null) this.pane.moveCursor(step);
  }

  /** The step of a clicked point: each run's line, smoothed line and non-finite marks index its series' steps; a
   *  band's points are steps on the step axis only. */
  stepOfPoint(point) {
    if (!point || !Number.isInteger(point.pointIndex ?? point.pointNumber)) return null;
    const index = point.pointIndex ?? point.pointNumber;
    if (this.aggregated) return this.axis() === "step" && Number.isFinite(point.x) ? Math.round(point.x) : null;
    const runs = this.runs();
    const run = runs[Math.floor(point.curveNumber / TRACES_PER_RUN)];
    const series = run === undefined ? null : this.series(run);
    if (!series) return null;
    const steps = point.curveNumber % TRACES_PER_RUN === 2 ? series.nonFinite.steps : series.steps;
    return Number.isFinite(steps[index]) ? steps[index] : null;
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
    const axis = this.axis();
    if (axisMetric(axis) !== null) {
      // An x window maps to the steps of the pane's own run whose x lies in it.
      const series = this.series(this.runs()[0]);
      if (!series) return;
      range = stepsForX(series.steps, this.xFor(series, series.steps), Number(lo), Number(hi));
      if (!range) return;
    } else if (axis !== "step") {
      // A time window maps to the steps of the pane's own run that cover it.
      const wall = this.series(this.runs()[0])?.wall;
      if (!wall || !wall.steps.length) return;
      const ms = axis === "wall" ? [new Date(lo).getTime(), new Date(hi).getTime()]
        : [lo, hi].map((v) => wall.wall[0] / 1000 + Number(v) * (this.unit || this.relativeUnit()).seconds * 1000);
      range = stepsBetween(wall.steps, wall.wall.map((us) => us / 1000), ms[0], ms[1]);
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
    // One line with a band is recomputed whole; a relative axis whose unit changed is drawn anew.
    let needFull = !this.ready || this.aggregated !== (!!this.pane.aggregate() && !this.unaligned)
      || (this.axis() === "relative" && this.relativeUnit().seconds !== this.unit?.seconds);
    const ext = { x: [], y: [], idx: [] };
    const restyle = { x: [], y: [], text: [], idx: [] };
    const metricAxis = axisMetric(this.axis()) !== null;
    const wallAxis = this.axis() !== "step" && !metricAxis;
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
      if (metricAxis) {
        // The x metric's new points change the x of drawn points past its last step then (the last x carried
        // forward): redraw whole; an x that only grew past every drawn point leaves them as drawn.
        const xState = this.xState(run);
        const before = drawn.x;
        const drawnLast = drawn.length ? series.steps[drawn.length - 1] : -Infinity;
        const same = before === xState || (before && xState && before.version === xState.version);
        if (before === undefined || !same || (xState && xState.last !== before.last && drawnLast >= before.last)) {
          needFull = true;
        }
        drawn.x = xState;
      }
      if (this.aggregated) {
        if (series.steps.length !== drawn.length || drawn.marksVersion !== series.marksVersion
          || (wallAxis && drawn.wallVersion !== series.wallVersion)) needFull = true;
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
    if (!this.aggregated && big !== !!this.gl) needFull = true;
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
    // Points before the x metric's first value are not drawn: said, never silently hidden.
    const metric = axisMetric(this.axis());
    let missing = 0;
    if (metric !== null) {
      for (const run of runs) {
        const series = this.series(run);
        if (series) missing += this.xFor(series, series.steps).filter((v) => v === null).length;
      }
    }
    const notes = [];
    const wanted = axisMetric(this.pane.settings.axis);
    if (wanted !== null && metric === null) notes.push(`no points of ${wanted} yet: drawn against step`);
    if (missing) notes.push(missingNote(metric, missing));
    if (this.unaligned) notes.push(`each run its own line: ${metric} goes down in ${this.unaligned}, so no band`);
    this.xNote.dataset.missing = String(missing);
    this.xNote.textContent = notes.join("; ");
    const m = ((info[runs[0]] || {}).metrics || {})[this.metric] || {};
    this.latest.textContent = m.latest_step !== undefined && m.latest_step !== null
      ? `step ${formatNumber(m.latest_step)}: ${formatNumber(m.latest_value)}` : "";
    this.badge.setAttribute("data-nonfinite", String(nonFinite));
    this.badge.textContent = nonFinite
      ? `⚠ ${nonFinite} non-finite value${nonFinite === 1 ? "" : "s"}${where.length ? ` (${where.join(", ")})` : ""}`
      : "";
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
      this.xNote.remove();
    });
  }
}
