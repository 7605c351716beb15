// One chart per metric on the run page: each run's line in its colour, smoothed as in the pane, non-finite
// marks on the x axis, and zooming that reads the visible steps again at full fidelity. On a metric x axis
// (`metric:tokens`) the x metric is read for the same steps with the same point budget and joined by step
// (shared/x_metric.js).
import Plotly from "../plotly/index.js";
import { h } from "../shared/dom.js";
import { formatNumber, plural } from "../shared/format.js";
import { aggregateRuns, bandLabel } from "../shared/aggregate.js";
import { checkpointTraces } from "../shared/checkpoint_marks.js";
import { NON_FINITE_COLOR } from "../shared/palette.js";
import { smooth } from "../shared/smoothing.js";
import { axisMetric, axisTitle, relativeUnit, timeValues } from "../shared/time_axis.js";
import { interpolate } from "../shared/walltime.js";
import { alignOnX, joinX, missingNote, stepsForX } from "../shared/x_metric.js";
import { id } from "../shared/urls.js";
import { writeView } from "./address.js";
import { api, explain, pageData } from "./api.js";
import { runRef, state } from "./page.js";
import { mergeExtras, parsePoints } from "./series.js";

const MAX_POINTS_CAP = 12000; // TauGrid's series limit

/** A run's catalog entries by name (its names alone until the catalog arrives), built once per list. */
function metricsByName(runId) {
  const entry = state.runs[runId];
  if (entry.byNameOf !== entry.metrics) {
    entry.byName = new Map(entry.metrics.map((m) => [m.name, m]));
    entry.byNameOf = entry.metrics;
  }
  return entry.byName;
}

export function createChart(metric, runIds, container) {
  const summaries = {};
  for (const runId of runIds) {
    const summary = metricsByName(runId).get(metric);
    if (summary) summaries[runId] = summary;
  }
  const plot = h("div", { class: "stellar-plot" });
  const nonFinite = h("p", { class: "stellar-nonfinite", hidden: true });
  const status = h("p", { class: "stellar-chart-status" });
  const section = h(
    "section",
    { class: "stellar-chart", "data-metric": metric, "data-state": "loading", "data-points": "0", "data-traces": "0" },
    h("h3", { text: metric }),
    nonFinite,
    status,
    plot,
  );
  container.append(section);
  const chart = { metric, section, plot, status, nonFinite, summaries, runIds: Object.keys(summaries), series: {}, origins: {}, view: null, generation: 0, fetches: 0, drawn: false };
  state.charts[metric] = chart;
  return chart;
}

function maxPoints(chart) {
  // Four points per pixel column keep every spike under M4 reduction.
  const width = chart.plot.clientWidth || 800;
  return Math.max(200, Math.min(MAX_POINTS_CAP, Math.round(width * 4)));
}

function stepRange(chart, runId, view) {
  if (!view) return null;
  if (view.axis === "step") return [Math.floor(view.range[0]), Math.ceil(view.range[1])];
  if (axisMetric(view.axis) !== null) {
    // A window of the x metric maps to the steps of this run whose joined x lies in it.
    const series = chart.series[runId];
    if (!series?.xJoin || series.xJoin.metric !== axisMetric(view.axis)) return null;
    return stepsForX(series.step, series.xJoin.x, Number(view.range[0]), Number(view.range[1]));
  }
  // A wall-time (or relative-time) window maps to steps through the points this run already has.
  const series = chart.series[runId];
  if (!series || !series.hasWallTime) return null;
  let [lo, hi] = view.range.map((d) => (typeof d === "number" ? d : Date.parse(String(d).replace(" ", "T"))));
  if (view.axis === "relative") {
    const origin = chart.origins[runId];
    if (!Number.isFinite(origin)) return null;
    [lo, hi] = [origin + Number(view.range[0]) * view.unitSeconds * 1000, origin + Number(view.range[1]) * view.unitSeconds * 1000];
  }
  let start = null;
  let end = null;
  for (let i = 0; i < series.step.length; i++) {
    if (series.wall[i] >= lo && start === null) start = i > 0 ? series.step[i - 1] : series.step[i];
    if (series.wall[i] <= hi) end = i + 1 < series.step.length ? series.step[i + 1] : series.step[i];
  }
  if (start === null || end === null || end < start) return null;
  return [start, end];
}

export async function loadChart(chart, view) {
  const generation = ++chart.generation;
  chart.section.dataset.state = "loading";
  const requested = maxPoints(chart);
  const results = await Promise.all(
    chart.runIds.map(async (runId) => {
      const range = stepRange(chart, runId, view);
      const query = { target: runRef(runId).runId, metric: chart.metric, max_points: requested, project: runRef(runId).project };
      if (range) {
        query.start_step = Math.max(0, range[0]);
        query.end_step = Math.max(query.start_step, range[1]);
      }
      const extrasQuery = { metric: chart.metric, start_step: query.start_step, end_step: query.end_step, project: runRef(runId).project };
      const [series, extras] = await Promise.allSettled([
        api(["runs", id(runRef(runId).runId), "series"], query),
        pageData(["runs", id(runRef(runId).runId), "points"], extrasQuery),
      ]);
      if (series.status === "rejected") return [runId, { error: series.reason }];
      // Without page data (e.g. another Portal) the chart still draws; it just cannot place non-finite marks.
      const extra = extras.status === "fulfilled" ? extras.value : null;
      return [runId, { ...mergeExtras(parsePoints(series.value.points), extra), range, body: series.value, extrasOk: !!extra }];
    }),
  );
  if (generation !== chart.generation) return; // a newer zoom superseded this one
  const xMetric = axisMetric(state.xAxis);
  if (xMetric !== null) await joinXMetric(chart, results, xMetric);
  if (generation !== chart.generation) return;
  chart.fetches += 1;
  chart.view = view;
  chart.series = {};
  const problems = [];
  for (const [runId, result] of results) {
    if (result.error) problems.push(explain(result.error, `${chart.metric} of ${runId} could not be loaded`));
    else chart.series[runId] = result;
    // Relative time counts from the series' first point, taken from the full range (a zoom keeps it).
    if (!view && result.hasWallTime && result.wall.length) chart.origins[runId] = result.wall[0];
  }
  chart.section.querySelectorAll(".stellar-error").forEach((node) => node.remove());
  for (const text of problems) {
    const p = h("p", { class: "stellar-error", role: "alert", text });
    chart.section.insertBefore(p, chart.plot);
    state.errors.push({ text, metric: chart.metric });
  }
  describe(chart);
  draw(chart);
  chart.section.dataset.fetches = String(chart.fetches);
  chart.section.dataset.view = view ? `${view.axis}:${view.range.join("..")}` : "full";
  chart.section.dataset.state = Object.keys(chart.series).length ? "ready" : "error";
}

/**
 * Reads the x metric of each run for the steps its y read covered (the same range and point budget, so the x read
 * is reduced by the same step columns: reads stay proportional to what is drawn) and joins it by step into
 * `series.xJoin` ({metric, x, missing, absent, reduced}). A run without the metric reads nothing: all its points
 * are missing.
 */
async function joinXMetric(chart, results, metric) {
  await Promise.all(results.map(async ([runId, series]) => {
    if (series.error) return;
    const names = metricsByName(runId);
    if (!names.has(metric)) {
      series.xJoin = { metric, x: series.step.map(() => null), missing: series.step.length, absent: true, reduced: false };
      return;
    }
    const query = { target: runRef(runId).runId, metric, max_points: series.body?.max_points ?? maxPoints(chart), project: runRef(runId).project };
    if (series.range) {
      query.start_step = Math.max(0, series.range[0]);
      query.end_step = Math.max(query.start_step, series.range[1]);
    }
    try {
      // A window that starts past step 0 also reads the x value carried into it: the last one before its start
      // (max_points=1 answers the last point), so the window's first points are not taken for points without x.
      const carried = query.start_step > 0
        ? api(["runs", id(runRef(runId).runId), "series"], { target: runRef(runId).runId, metric, end_step: query.start_step - 1, max_points: 1,
          project: runRef(runId).project })
        : null;
      const [body, before] = await Promise.all([api(["runs", id(runRef(runId).runId), "series"], query), carried]);
      const xs = parsePoints([...(before?.points || []), ...body.points]);
      const joined = joinX(series.step, xs.step, xs.value);
      series.xJoin = { metric, ...joined, absent: false,
        reduced: Number(body.returned_points) < Number(body.source_points) };
    } catch (err) {
      series.xJoin = { metric, x: series.step.map(() => null), missing: series.step.length, absent: false,
        error: explain(err, `${metric} of ${runId} (the x axis) could not be loaded`) };
    }
  }));
}

/** The x axis became a metric this chart has not joined yet: read it for the points held, then draw. */
export async function ensureX(chart) {
  const metric = axisMetric(state.xAxis);
  if (metric === null || !chart.drawn) return;
  const missing = Object.entries(chart.series).filter(([, s]) => s.xJoin?.metric !== metric);
  if (!missing.length) return;
  const generation = chart.generation;
  chart.section.dataset.state = "loading";
  await joinXMetric(chart, missing, metric);
  if (generation !== chart.generation) return;
  describe(chart);
  draw(chart);
  chart.section.dataset.state = "ready";
}

/** A run's metric catalog arrived: the charts' summaries (non-finite counts) follow it. */
export function updateSummaries(runId, metrics) {
  state.runs[runId].metrics = metrics;
  const byName = new Map(metrics.map((m) => [m.name, m]));
  for (const chart of Object.values(state.charts)) {
    const summary = byName.get(chart.metric);
    if (!summary || !chart.runIds.includes(runId)) continue;
    chart.summaries[runId] = summary;
    if (chart.fetches) describe(chart);
  }
}

function describe(chart) {
  const parts = [];
  const nf = [];
  let nonFiniteTotal = 0;
  for (const runId of chart.runIds) {
    const series = chart.series[runId];
    const summary = chart.summaries[runId] || {};
    const label = chart.runIds.length > 1 ? `${runName(runId)}: ` : "";
    if (series) {
      const { returned_points: returned, source_points: source } = series.body;
      const span = series.range ? `steps ${formatNumber(series.range[0])}–${formatNumber(series.range[1])}, ` : "";
      const reduced = returned < source ? `${formatNumber(returned)} of ${formatNumber(source)} points, reduced to keep every spike; zoom in for full detail` : `all ${plural(returned, "point")}`;
      parts.push(`${label}${span}${reduced}`);
      const join = series.xJoin;
      if (join && axisMetric(chartAxis(chart)) === join.metric) {
        if (join.error) parts.push(`${label}${join.error}`);
        else if (join.absent) parts.push(`${label}no metric ${join.metric} in this run: its ${plural(join.missing, "point")} not drawn`);
        else if (join.missing) parts.push(`${label}${missingNote(join.metric, join.missing)}`);
      }
    }
    // In a zoomed view the count is the view's; otherwise the run's catalog count.
    const inView = series && (series.nonFiniteCount ?? series.nonFinite.length);
    const count = series?.range ? inView : Number(summary.non_finite_count ?? 0) || inView || 0;
    if (count > 0) {
      nonFiniteTotal += count;
      let text = `${label}${plural(count, "non-finite value")}`;
      const seen = series ? series.nonFinite : [];
      if (seen.length) {
        const shown = seen.slice(0, 5).map((p) => `${p.kind} at step ${formatNumber(p.step)}`).join(", ");
        text += ` (${shown}${seen.length > 5 ? ", …" : ""})`;
      }
      nf.push(seen.length ? `${text}, marked ✕ on the x axis` : text);
    }
  }
  chart.status.textContent = parts.join(" · ");
  chart.nonFinite.hidden = nf.length === 0;
  chart.nonFinite.textContent = nf.join("; ");
  chart.section.dataset.nonFinite = String(nonFiniteTotal);
}

/** A run as its legend shows it: named by what differs from the runs beside it, else its id. */
function runName(runId) {
  return state.runs[runId].label || runId;
}

/**
 * The x axis a chart is drawn on: a time axis only when its runs' points carry wall times; a metric axis only
 * when some run's points have a value of the metric (else steps, and the chart says why).
 */
function chartAxis(chart) {
  const metric = axisMetric(state.xAxis);
  if (metric !== null) {
    const any = chart.runIds.some((runId) => {
      const join = chart.series[runId]?.xJoin;
      return join && join.metric === metric && join.missing < join.x.length;
    });
    return any ? state.xAxis : "step";
  }
  const anyWall = chart.runIds.some((runId) => chart.series[runId]?.hasWallTime);
  return state.xAxis !== "step" && anyWall ? state.xAxis : "step";
}

/** A run's x on a metric axis at `steps` (null where none): its joined x for its points, joined anew for marks. */
function metricX(chart, runId, steps) {
  const series = chart.series[runId];
  if (steps === series.step) return series.xJoin.x;
  // Marks: the x of the point at or before each mark's step, from the run's joined points.
  const known = series.step.filter((_, i) => series.xJoin.x[i] !== null);
  const values = series.xJoin.x.filter((v) => v !== null);
  return joinX(steps, known, values).x;
}

/** The unit of a relative-time axis: what keeps the longest series' numbers readable. */
function relativeUnitOf(chart) {
  let seconds = 0;
  for (const runId of chart.runIds) {
    const series = chart.series[runId];
    const origin = chart.origins[runId];
    if (series?.hasWallTime && series.wall.length && Number.isFinite(origin)) {
      seconds = Math.max(seconds, (series.wall[series.wall.length - 1] - origin) / 1000);
    }
  }
  return relativeUnit(seconds);
}

/** x of points at `steps` with wall times `wallMs` (ms, null where unknown) on the chart's axis. */
function xValues(chart, axis, unit, runId, steps, wallMs) {
  if (axis === "step") return steps;
  if (axisMetric(axis) !== null) return metricX(chart, runId, steps);
  const origin = chart.origins[runId];
  return wallMs.map((ms, i) => {
    if (ms === null || ms === undefined) return axis === "wall" ? steps[i] : null;
    return axis === "wall" ? new Date(ms) : timeValues("relative", [ms], origin, unit)?.[0] ?? null;
  });
}

/** "#1f77b4" → "rgba(31,119,180,a)": a band in its run's colour, light enough to see the lines through. */
function translucent(hex, alpha) {
  const n = Number.parseInt(hex.slice(1), 16);
  return `rgba(${(n >> 16) & 255},${(n >> 8) & 255},${n & 255},${alpha})`;
}

/**
 * The runs as one line and a band (shared/aggregate.js), aligned on the chart's axis: by step, or on relative
 * or wall time. Each run is smoothed first when smoothing is on; non-finite values stay out and are counted.
 */
function aggregateTraces(chart, axis, unit) {
  const runs = [];
  const metric = axisMetric(axis);
  for (const runId of chart.runIds) {
    const series = chart.series[runId];
    if (!series) continue;
    let x = series.step;
    if (axis === "wall") x = series.wall;
    else if (axis === "relative") x = series.wall.map((ms) => (ms - chart.origins[runId]) / 1000 / unit.seconds);
    let values = state.smoothing > 0 ? smooth(series.value, state.smoothing) : series.value;
    if (metric !== null) {
      // Aligned on the metric: points without it left out, equal x values last-wins; an x that goes down cannot
      // be aligned on (null: the caller draws each run its own line and says why).
      const aligned = alignOnX(series.xJoin.x, values);
      if (!aligned) return { unaligned: runId };
      ({ steps: x, values } = aligned);
    }
    runs.push({ id: runId, steps: x, values });
  }
  const agg = aggregateRuns(runs, { center: state.aggregate, spread: state.band });
  // The v2 points are finite; the page data's non-finite marks are what the band left out.
  for (const r of runs) agg.nonFinite[r.id] += chart.series[r.id].nonFiniteCount ?? chart.series[r.id].nonFinite.length;
  const x = [...agg.steps].map((v) => (axis === "wall" ? new Date(v) : v));
  const color = state.runs[chart.runIds[0]].color;
  const names = runs.map((r) => runName(r.id));
  const text = agg.count.map((n) => `${n} of ${runs.length} runs: ${names.join(", ")}`);
  const edge = { type: "scatter", mode: "lines", x, line: { width: 0, color }, hoverinfo: "skip", showlegend: false,
    legendgroup: "aggregate" };
  const out = [];
  if (state.band !== "none") {
    out.push({ ...edge, y: agg.lower, meta: { role: "band-lower" } });
    out.push({ ...edge, y: agg.upper, fill: "tonexty", fillcolor: translucent(color, 0.2), meta: { role: "band-upper" } });
  }
  out.push({ type: "scatter", mode: x.length === 1 ? "markers" : "lines", x, y: agg.center, text,
    name: bandLabel(chart.metric, agg, { center: state.aggregate, spread: state.band }), legendgroup: "aggregate",
    line: { color, width: 2 }, marker: { color, size: 5 }, showlegend: true,
    hovertemplate: `${state.aggregate} %{y:.6g}<br>%{text}<extra></extra>`, meta: { role: "aggregate" } });
  return { data: out, drawnPoints: x.length, rawTraces: 1 };
}

function traces(chart) {
  const out = [];
  const axis = chartAxis(chart);
  const unit = axis === "relative" ? relativeUnitOf(chart) : null;
  let aggregate = state.aggregate && chart.runIds.length > 1;
  let base = aggregate ? aggregateTraces(chart, axis, unit) : null;
  chart.unaligned = base?.unaligned ?? null;
  if (chart.unaligned) {
    aggregate = false;
    base = null;
  }
  if (base) out.push(...base.data);
  let drawnPoints = base ? base.drawnPoints : 0;
  let rawTraces = 0;
  for (const runId of chart.runIds) {
    const series = chart.series[runId];
    if (!series) continue;
    const color = state.runs[runId].color;
    const name = runName(runId);
    const who = name === runId ? runId : `${name}<br>${runId}`;
    let x = series.hasWallTime || axisMetric(axis) !== null
      ? xValues(chart, axis, unit, runId, series.step, series.wall) : series.step;
    let y = series.value.map((v) => (Number.isFinite(v) ? v : null));
    let steps = series.step;
    let smoothedAll = state.smoothing > 0 && !aggregate
      ? smooth(series.value, state.smoothing).map((v) => (Number.isFinite(v) ? v : null)) : null;
    if (axisMetric(axis) !== null) {
      // Points without x are not drawn (the status line counts them); smoothing ran over every point, in step order.
      const keep = x.map((v) => v !== null);
      const pick = (arr) => arr.filter((_, i) => keep[i]);
      [x, y, steps] = [pick(x), pick(y), pick(steps)];
      if (smoothedAll) smoothedAll = pick(smoothedAll);
    }
    const smoothing = state.smoothing > 0;
    if (!aggregate) out.push({
      type: "scatter",
      mode: x.length === 1 ? "markers" : "lines",
      name,
      legendgroup: runId,
      x,
      y,
      customdata: steps,
      connectgaps: false,
      line: { color, width: 1.5 },
      marker: { color, size: 5 },
      opacity: smoothing ? 0.3 : 1,
      showlegend: !smoothing,
      hovertemplate: `${who}<br>step %{customdata}<br>%{y:.6g}<extra></extra>`,
      meta: { role: "raw", runId },
    });
    if (!aggregate) {
      drawnPoints += x.length;
      rawTraces += 1;
    }
    if (smoothing && !aggregate) {
      const smoothed = smoothedAll;
      out.push({
        type: "scatter",
        mode: x.length === 1 ? "markers" : "lines",
        name,
        legendgroup: runId,
        x,
        y: smoothed,
        customdata: steps,
        connectgaps: false,
        line: { color, width: 2 },
        marker: { color, size: 5 },
        hovertemplate: `${who} (smoothed)<br>step %{customdata}<br>%{y:.6g}<extra></extra>`,
        meta: { role: "smoothed", runId },
      });
    }
    if (series.nonFinite.length) {
      out.push({
        type: "scatter",
        mode: "markers",
        name: `${name} non-finite`,
        legendgroup: runId,
        showlegend: false,
        x: xValues(chart, axis, unit, runId, series.nonFinite.map((p) => p.step), series.nonFinite.map((p) => p.wallMs)),
        y: series.nonFinite.map(() => 0),
        yaxis: "y2",
        cliponaxis: false,
        marker: { symbol: "x-thin-open", size: 10, color: NON_FINITE_COLOR, line: { width: 2, color: NON_FINITE_COLOR } },
        text: series.nonFinite.map((p) => `${runId}: ${p.kind} at step ${p.step}`),
        hovertemplate: "%{text}<extra></extra>",
        meta: { role: "non-finite", runId },
      });
    }
  }
  // Each run's checkpoints (a triangle at each one's step) and retries (a diamond where one resumed).
  for (const runId of chart.runIds) {
    const series = chart.series[runId];
    const saved = state.runs[runId]?.checkpoints;
    if (!series || !saved) continue;
    const xOf = (steps) => {
      if (axis === "step") return steps;
      if (axisMetric(axis) !== null) return xValues(chart, axis, unit, runId, steps, null); // x carried to each step
      return series.hasWallTime ? xValues(chart, axis, unit, runId, steps, interpolate(steps, series.step, series.wall))
        : steps;
    };
    const color = chart.runIds.length > 1 ? state.runs[runId]?.color || null : null; // compared: the run's colour
    out.push(...checkpointTraces(saved, xOf, runId, color));
  }
  return { data: out, drawnPoints, rawTraces: base ? base.rawTraces : rawTraces };
}

function draw(chart) {
  const { data, drawnPoints, rawTraces } = traces(chart);
  const axis = chartAxis(chart);
  const unit = axis === "relative" ? relativeUnitOf(chart) : null;
  const layout = {
    margin: { l: 60, r: 16, t: 8, b: 44 },
    xaxis: { title: { text: axisTitle(axis, unit) }, type: axis === "wall" ? "date" : "linear", zeroline: false },
    yaxis: { type: state.logY ? "log" : "linear", exponentformat: "e", zeroline: false },
    yaxis2: { overlaying: "y", range: [0, 1], visible: false, fixedrange: true },
    showlegend: chart.runIds.length > 1,
    // Above the plot, pushing it down as the names of many runs wrap (never over the lines).
    legend: { orientation: "h", x: 0, y: 1.02, yanchor: "bottom" },
    hovermode: "closest",
    // Keeps the user's zoom across redraws; a new x axis kind starts a new view.
    uirevision: `${chart.metric}:${axis}:${state.aggregate}`,
  };
  if (!chart.drawn) {
    Plotly.newPlot(chart.plot, data, layout, { responsive: true, displaylogo: false });
    chart.plot.on("plotly_relayout", (event) => onRelayout(chart, event));
    // A click on a point moves the page's step cursor: every media card goes to its nearest step.
    chart.plot.on("plotly_click", (event) => {
      const step = curveStep(event?.points?.[0]);
      if (step !== null) state.cursor?.set(step, "curve");
    });
    chart.drawn = true;
  } else {
    Plotly.react(chart.plot, data, layout, { responsive: true, displaylogo: false });
  }
  chart.section.dataset.points = String(drawnPoints);
  chart.section.dataset.traces = String(rawTraces);
  const xMetric = axisMetric(state.xAxis);
  chart.section.dataset.axis = axis;
  if (xMetric !== null && axis === "step" && chart.fetches) {
    chart.status.textContent += ` · no run here has ${xMetric} at these steps, so the axis stays on steps`;
  } else if (xMetric === null && state.xAxis !== "step" && axis === "step") {
    chart.status.textContent += " · this Portal sends no wall times with the points, so the axis stays on steps";
  }
  if (chart.unaligned) {
    chart.status.textContent += ` · runs drawn each as its own line: ${xMetric} goes down in ${runName(chart.unaligned)}, so the runs cannot be aligned on it for a band`;
  }
  if (state.logY) {
    const nonPositive = chart.runIds.reduce((n, id) => n + (chart.series[id]?.value.filter((v) => v <= 0).length || 0), 0);
    if (nonPositive) chart.status.textContent += ` · ${plural(nonPositive, "value")} ≤ 0 not shown on the log axis`;
  }
}

/** The step of a clicked point of a curve (its customdata: the traces carry each point's step), else null. */
export function curveStep(point) {
  if (!point) return null;
  const step = Array.isArray(point.customdata) ? point.customdata[0] : point.customdata;
  return Number.isInteger(Number(step)) && step !== null && step !== "" ? Number(step) : null;
}

/** A zoom window as the address keeps it: wall time in epoch ms, relative time in seconds, else the axis' numbers. */
function addressRange(axis, range, unitSeconds) {
  const ms = (d) => (typeof d === "number" ? d : Date.parse(String(d).replace(" ", "T")));
  if (axis === "wall") return range.map(ms);
  if (axis === "relative") return range.map((v) => Number(v) * unitSeconds);
  return range.map(Number);
}

/** Applies the zoom the address names for this chart (after its whole series is drawn), as a user's zoom. */
export function restoreZoom(chart) {
  const range = state.zoom[chart.metric];
  if (!range || !chart.drawn) return Promise.resolve();
  const axis = chartAxis(chart);
  const shown = axis === "relative" ? range.map((v) => v / relativeUnitOf(chart).seconds) : range;
  return Plotly.relayout(chart.plot, { "xaxis.range": shown });
}

/** Every chart back to its whole series (the x axis or the aggregation changed: a window means nothing there). */
export function resetZooms() {
  state.zoom = {};
  for (const chart of Object.values(state.charts)) if (chart.view) loadChart(chart, null);
}

function onRelayout(chart, event) {
  if (event["xaxis.autorange"] === true) {
    delete state.zoom[chart.metric];
    writeView();
    if (chart.view) loadChart(chart, null);
    return;
  }
  let range = null;
  if ("xaxis.range[0]" in event && "xaxis.range[1]" in event) range = [event["xaxis.range[0]"], event["xaxis.range[1]"]];
  else if (Array.isArray(event["xaxis.range"])) range = event["xaxis.range"];
  if (!range) return;
  const axis = chartAxis(chart);
  // A relative-time window is each run's own: its origin plus the window (stepRange).
  const unitSeconds = axis === "relative" ? relativeUnitOf(chart).seconds : undefined;
  const kept = addressRange(axis, range, unitSeconds);
  if (kept.every(Number.isFinite) && kept[0] < kept[1]) state.zoom[chart.metric] = kept;
  writeView();
  loadChart(chart, { axis, range, unitSeconds });
}

export function redrawAll() {
  const metric = axisMetric(state.xAxis);
  const reads = [];
  for (const chart of Object.values(state.charts)) {
    if (!chart.drawn) continue; // not fetched yet (off screen): drawn with the settings when it is
    if (metric !== null && Object.values(chart.series).some((s) => s.xJoin?.metric !== metric)) {
      reads.push(ensureX(chart)); // a new x metric: read it for the points held, then draw
      continue;
    }
    describe(chart);
    draw(chart);
  }
  return Promise.all(reads);
}
