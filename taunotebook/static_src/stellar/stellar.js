// Draws the Stellar pages (run charts, comparison, runs listing) from the Portal's v2 Stellar API.
//
// Everything is fetched same-origin with paths relative to the page's root (config.root), so the
// pages work both at the Portal's own origin and behind jupyter-server-proxy at {base_url}tau-portal/.
// Test hooks: window.__stellar (state), data-state / data-points / data-non-finite on elements.

const config = JSON.parse(document.getElementById("stellar-config").textContent);
const root = new URL(config.root, window.location.href);
const main = document.getElementById("stellar");
const MAX_POINTS_CAP = 12000; // TauGrid's series limit
const PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"];
const NUMBER = new Intl.NumberFormat("en-US");

// A token in the page URL authenticates this page's API calls; the Portal also turns it into a
// cookie. It is dropped from the address bar so that it does not end up in bookmarks or screenshots.
const pageParams = new URLSearchParams(window.location.search);
const urlToken = pageParams.get("token");
if (urlToken !== null) {
  pageParams.delete("token");
  const query = pageParams.toString();
  window.history.replaceState(null, "", window.location.pathname + (query ? `?${query}` : "") + window.location.hash);
}

const state = {
  mode: config.mode,
  targets: config.targets,
  project: config.project,
  ready: false,
  errors: [],
  runs: {},
  metrics: {},
  charts: {},
  smoothing: 0,
  logY: false,
  xAxis: "step",
  requests: [],
};
window.__stellar = state;

class StellarError extends Error {
  constructor(status, code, message, envelope = null) {
    super(message);
    this.status = status;
    this.code = code;
    this.envelope = envelope;
  }
}

// -- the API -------------------------------------------------------------------------------------

// TauGrid's v2 Stellar reads.
function api(path, query = {}) {
  return request(`api/v2/stellar/${path}`, query);
}

// The local Portal's page data: what v2 does not carry (experiment ids, non-finite positions, wall times).
function pageData(path, query = {}) {
  return request(`stellar/data/${path}`, query);
}

async function request(path, query) {
  const url = new URL(path, root);
  for (const [key, value] of Object.entries(query)) {
    if (value !== undefined && value !== null && value !== "") url.searchParams.set(key, String(value));
  }
  const headers = { Accept: "application/json" };
  if (urlToken) headers.Authorization = `Bearer ${urlToken}`;
  let response;
  try {
    response = await fetch(url, { headers, credentials: "same-origin" });
  } catch (err) {
    state.requests.push({ path, query, status: 0 });
    throw new StellarError(0, "NETWORK", `the Portal could not be reached (${err.message}); is it still running?`);
  }
  state.requests.push({ path, query, status: response.status });
  const text = await response.text();
  let body = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = null;
  }
  if (!response.ok) {
    // TauGrid's v2 envelope {"error":{code,message,...}}, else its Portal-boundary shapes.
    const envelope = body && body.error && typeof body.error === "object" ? body.error : null;
    const code = envelope?.code || (typeof body?.code === "string" ? body.code : `HTTP_${response.status}`);
    const message =
      envelope?.message ||
      body?.detail ||
      body?.reason ||
      (typeof body?.error === "string" ? body.error : "") ||
      text.slice(0, 300) ||
      response.statusText;
    throw new StellarError(response.status, code, message, envelope);
  }
  if (body === null) {
    throw new StellarError(response.status, "BAD_RESPONSE", `the Portal answered ${path} with something that is not JSON`);
  }
  return body;
}

function explain(err, what) {
  if (!(err instanceof StellarError)) return `${what}: ${err.message || err}`;
  const head = `${what}: ${err.message}`;
  const tail = {
    0: "",
    401: "The Portal needs its token: open the link it printed at start-up (it carries ?token=…).",
    403: "This Portal serves another workspace.",
    404: "Check the run id and project in the address.",
    503: "The data source is unavailable right now; reload to try again.",
  }[err.status];
  const status = err.status ? ` (HTTP ${err.status} ${err.code})` : ` (${err.code})`;
  return `${head}${status}.${tail ? ` ${tail}` : ""}`;
}

function showError(text, err = null, container = errorBox()) {
  const p = document.createElement("p");
  p.className = "stellar-error";
  p.setAttribute("role", "alert");
  p.textContent = text;
  if (err instanceof StellarError) {
    p.dataset.status = String(err.status);
    p.dataset.code = err.code;
  }
  container.append(p);
  state.errors.push({ text, status: err?.status ?? null, code: err?.code ?? null });
  return p;
}

function errorBox() {
  let box = document.getElementById("stellar-errors");
  if (!box) {
    box = document.createElement("div");
    box.id = "stellar-errors";
    main.prepend(box);
  }
  return box;
}

// -- values --------------------------------------------------------------------------------------

function readValue(point) {
  // JSON has no NaN: a non-finite point may come as null, as a string, or with a non_finite label.
  const label = typeof point.non_finite === "string" ? point.non_finite : null;
  let value = point.value;
  if (typeof value === "string") {
    const word = value.trim().toLowerCase().replace(/^\+/, "");
    if (word === "nan") return [NaN, "NaN"];
    if (word === "inf" || word === "infinity") return [Infinity, "+Inf"];
    if (word === "-inf" || word === "-infinity") return [-Infinity, "-Inf"];
    value = Number(value);
  }
  if (value === null || value === undefined || point.non_finite === true || label) {
    return [NaN, label || "NaN"];
  }
  if (typeof value !== "number" || !Number.isFinite(value)) return [NaN, "NaN"];
  return [value, null];
}

function readWallTime(point) {
  const raw = point.wall_time ?? point.wall_time_us ?? point.timestamp ?? point.time;
  if (raw === undefined || raw === null) return null;
  if (typeof raw === "string") {
    const parsed = Date.parse(raw);
    return Number.isNaN(parsed) ? null : parsed;
  }
  if (typeof raw !== "number" || !Number.isFinite(raw)) return null;
  // µs (TauGrid's latest_wall_time unit), ms, or s since the epoch.
  if (raw > 1e14) return raw / 1000;
  if (raw > 1e11) return raw;
  return raw * 1000;
}

function parsePoints(points) {
  const step = [];
  const value = [];
  const wall = [];
  const nonFinite = [];
  for (const point of points || []) {
    const [v, kind] = readValue(point);
    step.push(Number(point.step));
    value.push(v);
    wall.push(readWallTime(point));
    if (kind) nonFinite.push({ step: Number(point.step), kind, wallMs: readWallTime(point) });
  }
  return { step, value, wall, nonFinite, hasWallTime: wall.length > 0 && wall.every((w) => w !== null) };
}

// Adds what the page-data read knows to a parsed v2 series: non-finite positions and wall times.
function mergeExtras(series, extras) {
  if (!extras) return series;
  if (extras.non_finite?.length || extras.non_finite_count) {
    series.nonFinite = extras.non_finite.map((p) => ({ step: Number(p.step), kind: p.value, wallMs: readWallTime(p) }));
    series.nonFiniteCount = Number(extras.non_finite_count || series.nonFinite.length);
  }
  const samples = extras.wall_time;
  if (!series.hasWallTime && samples?.step?.length) {
    series.wall = interpolate(series.step, samples.step, samples.wall_time.map((w) => w / 1000));
    series.hasWallTime = true;
  }
  return series;
}

// Linear interpolation of ys (sorted by xs) at each x, clamped to the ends.
function interpolate(at, xs, ys) {
  const out = new Array(at.length);
  let j = 0;
  for (let i = 0; i < at.length; i++) {
    const x = at[i];
    while (j + 1 < xs.length && xs[j + 1] <= x) j++;
    if (x <= xs[0]) out[i] = ys[0];
    else if (j + 1 >= xs.length) out[i] = ys[xs.length - 1];
    else out[i] = ys[j] + ((ys[j + 1] - ys[j]) * (x - xs[j])) / (xs[j + 1] - xs[j] || 1);
  }
  return out;
}

// TensorBoard's classic smoothing: a debiased exponential moving average. Non-finite values pass
// through without touching the average, and a constant series is left as is.
export function smooth(values, weight) {
  if (!values.length) return [];
  const isConstant = values.every((v) => v === values[0]);
  let last = 0;
  let numAccum = 0;
  return values.map((next) => {
    if (isConstant || !Number.isFinite(next)) return next;
    last = last * weight + (1 - weight) * next;
    numAccum += 1;
    const debiasWeight = weight === 1 ? 1 : 1 - weight ** numAccum;
    return last / debiasWeight;
  });
}

function fmt(value) {
  if (value === undefined || value === null || value === "") return "–";
  const n = Number(value);
  if (!Number.isFinite(n)) return String(value);
  if (Number.isInteger(n) && Math.abs(n) < 1e15) return NUMBER.format(n);
  const abs = Math.abs(n);
  if (abs !== 0 && (abs < 1e-3 || abs >= 1e6)) return n.toExponential(4);
  return String(Number(n.toPrecision(6)));
}

function plural(n, word) {
  return `${NUMBER.format(n)} ${word}${n === 1 ? "" : "s"}`;
}

function metricOrder(a, b) {
  const rank = (name) => (name === "loss" ? 0 : name.startsWith("tau/") ? 3 : /loss/i.test(name) ? 1 : 2);
  return rank(a) - rank(b) || a.localeCompare(b);
}

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("data-")) node.setAttribute(key, value);
    else node[key] = value;
  }
  for (const child of children) if (child !== null && child !== undefined) node.append(child);
  return node;
}

function stellarHref(targets, project) {
  const url = new URL("stellar", root);
  for (const target of targets) url.searchParams.append("target", target);
  if (project) url.searchParams.set("project", project);
  return url.href;
}

// -- run page ------------------------------------------------------------------------------------

function controls() {
  const slider = el("input", { type: "range", min: "0", max: "0.999", step: "0.001", value: "0", id: "stellar-smoothing" });
  const shown = el("output", { id: "stellar-smoothing-value", text: "0" });
  slider.addEventListener("input", () => {
    state.smoothing = Number(slider.value);
    shown.textContent = slider.value;
    redrawAll();
  });
  const logY = el("input", { type: "checkbox", id: "stellar-log-y" });
  logY.addEventListener("change", () => {
    state.logY = logY.checked;
    redrawAll();
  });
  const xAxis = el("select", { id: "stellar-x-axis" });
  xAxis.append(el("option", { value: "step", text: "step" }), el("option", { value: "wall", text: "wall time" }));
  xAxis.addEventListener("change", () => {
    state.xAxis = xAxis.value;
    redrawAll();
  });
  return el(
    "div",
    { class: "stellar-controls" },
    el("label", {}, "Smoothing", slider, shown),
    el("label", {}, logY, "log y"),
    el("label", {}, "x axis", xAxis),
    el("span", { class: "stellar-note", text: "Drag on a chart to zoom: the visible steps are fetched in full; double-click to reset." }),
  );
}

function runCard(run, color) {
  const dl = el("dl");
  const add = (term, value) => {
    if (value === undefined || value === null || value === "") return;
    dl.append(el("dt", { text: term }), el("dd", { text: String(value) }));
  };
  const stateText = run.lifecycle_state && run.lifecycle_state !== run.state ? `${run.state} (${run.lifecycle_state})` : run.state;
  dl.append(el("dt", { text: "state" }), el("dd", {}, el("span", { class: "stellar-state", "data-state": run.state || "", text: stateText || "unknown" })));
  add("project", run.project);
  add("experiment", run.experiment_id);
  add("group", run.run_group_id);
  add("parent", run.parent_run_id);
  add("owner", run.owner);
  add("created", run.created_at);
  add("started", run.started_at);
  add("completed", run.completed_at);
  if (run.successful !== undefined && run.state !== "running") add("successful", run.successful ? "yes" : "no");
  add("code", run.code_sha);
  add("image", run.image_digest);
  add("result", run.result_uri);
  const tags = Object.entries(run.tags || {}).map(([k, v]) => `${k}=${v}`);
  if (tags.length) add("tags", tags.join(", "));
  add("metrics", (run.metric_names || []).length);
  return el(
    "section",
    { class: "stellar-run", "data-run-id": run.run_id },
    el("h2", {}, el("span", { class: "stellar-swatch", style: `background:${color}` }), run.run_id),
    dl,
  );
}

async function runPage() {
  const box = errorBox();
  const runsBox = el("div", { class: "stellar-runs", id: "stellar-runs" });
  const chartsBox = el("div", { class: "stellar-charts", id: "stellar-charts" });
  main.append(controls(), runsBox, chartsBox);
  if (!window.Plotly) {
    showError(`The chart library is missing: build it with ${config.buildHint} and reload.`, null, box);
  }
  const loaded = await Promise.all(
    state.targets.map(async (runId, i) => {
      const color = PALETTE[i % PALETTE.length];
      try {
        const [runBody, metricsBody] = await Promise.all([
          api(`runs/${encodeURIComponent(runId)}`, { project: state.project }),
          api(`runs/${encodeURIComponent(runId)}/metrics`, { project: state.project }),
        ]);
        const run = runBody.run;
        state.runs[runId] = { run, color, metrics: metricsBody.metrics || [], metadata: runBody.metadata };
        return runId;
      } catch (err) {
        showError(explain(err, `Run ${runId} could not be loaded`), err, box);
        return null;
      }
    }),
  );
  const ok = loaded.filter(Boolean);
  for (const runId of ok) {
    const entry = state.runs[runId];
    runsBox.append(runCard(entry.run, entry.color));
    for (const warning of entry.metadata?.warnings || []) {
      box.append(el("p", { class: "stellar-note", text: `${runId}: ${warning}` }));
    }
  }
  const names = new Set();
  for (const runId of ok) for (const m of state.runs[runId].metrics) names.add(m.name);
  if (ok.length && !names.size) {
    chartsBox.append(el("p", { class: "stellar-note", id: "stellar-no-metrics", text: "No metrics have been recorded for this run yet." }));
  }
  const charts = [...names].sort(metricOrder).map((name) => createChart(name, ok, chartsBox));
  document.getElementById("stellar-loading")?.remove();
  await Promise.all(charts.map((chart) => loadChart(chart, null)));
  state.ready = true;
  main.dataset.state = ok.length ? "ready" : "error";
}

function createChart(metric, runIds, container) {
  const summaries = {};
  for (const runId of runIds) {
    const summary = state.runs[runId].metrics.find((m) => m.name === metric);
    if (summary) summaries[runId] = summary;
  }
  const plot = el("div", { class: "stellar-plot" });
  const nonFinite = el("p", { class: "stellar-nonfinite", hidden: true });
  const status = el("p", { class: "stellar-chart-status" });
  const section = el(
    "section",
    { class: "stellar-chart", "data-metric": metric, "data-state": "loading", "data-points": "0", "data-traces": "0" },
    el("h3", { text: metric }),
    nonFinite,
    status,
    plot,
  );
  container.append(section);
  const chart = { metric, section, plot, status, nonFinite, summaries, runIds: Object.keys(summaries), series: {}, view: null, generation: 0, fetches: 0, drawn: false };
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
  // A wall-time window maps to steps through the points this run already has.
  const series = chart.series[runId];
  if (!series || !series.hasWallTime) return null;
  const [lo, hi] = view.range.map((d) => (typeof d === "number" ? d : Date.parse(String(d).replace(" ", "T"))));
  let start = null;
  let end = null;
  for (let i = 0; i < series.step.length; i++) {
    if (series.wall[i] >= lo && start === null) start = i > 0 ? series.step[i - 1] : series.step[i];
    if (series.wall[i] <= hi) end = i + 1 < series.step.length ? series.step[i + 1] : series.step[i];
  }
  if (start === null || end === null || end < start) return null;
  return [start, end];
}

async function loadChart(chart, view) {
  const generation = ++chart.generation;
  chart.section.dataset.state = "loading";
  const requested = maxPoints(chart);
  const results = await Promise.all(
    chart.runIds.map(async (runId) => {
      const range = stepRange(chart, runId, view);
      const query = { target: runId, metric: chart.metric, max_points: requested, project: state.project };
      if (range) {
        query.start_step = Math.max(0, range[0]);
        query.end_step = Math.max(query.start_step, range[1]);
      }
      const extrasQuery = { metric: chart.metric, start_step: query.start_step, end_step: query.end_step, project: state.project };
      const [series, extras] = await Promise.allSettled([
        api(`runs/${encodeURIComponent(runId)}/series`, query),
        pageData(`runs/${encodeURIComponent(runId)}/points`, extrasQuery),
      ]);
      if (series.status === "rejected") return [runId, { error: series.reason }];
      // Without page data (e.g. another Portal) the chart still draws; it just cannot place non-finite marks.
      const extra = extras.status === "fulfilled" ? extras.value : null;
      return [runId, { ...mergeExtras(parsePoints(series.value.points), extra), range, body: series.value, extrasOk: !!extra }];
    }),
  );
  if (generation !== chart.generation) return; // a newer zoom superseded this one
  chart.fetches += 1;
  chart.view = view;
  chart.series = {};
  const problems = [];
  for (const [runId, result] of results) {
    if (result.error) problems.push(explain(result.error, `${chart.metric} of ${runId} could not be loaded`));
    else chart.series[runId] = result;
  }
  chart.section.querySelectorAll(".stellar-error").forEach((node) => node.remove());
  for (const text of problems) {
    const p = el("p", { class: "stellar-error", role: "alert", text });
    chart.section.insertBefore(p, chart.plot);
    state.errors.push({ text, metric: chart.metric });
  }
  describe(chart);
  draw(chart);
  chart.section.dataset.fetches = String(chart.fetches);
  chart.section.dataset.view = view ? `${view.axis}:${view.range.join("..")}` : "full";
  chart.section.dataset.state = Object.keys(chart.series).length ? "ready" : "error";
}

function describe(chart) {
  const parts = [];
  const nf = [];
  let nonFiniteTotal = 0;
  for (const runId of chart.runIds) {
    const series = chart.series[runId];
    const summary = chart.summaries[runId] || {};
    const label = chart.runIds.length > 1 ? `${runId}: ` : "";
    if (series) {
      const { returned_points: returned, source_points: source } = series.body;
      const span = series.range ? `steps ${fmt(series.range[0])}–${fmt(series.range[1])}, ` : "";
      const reduced = returned < source ? `${fmt(returned)} of ${fmt(source)} points, reduced to keep every spike; zoom in for full detail` : `all ${plural(returned, "point")}`;
      parts.push(`${label}${span}${reduced}`);
    }
    // In a zoomed view the count is the view's; otherwise the run's catalog count.
    const inView = series && (series.nonFiniteCount ?? series.nonFinite.length);
    const count = series?.range ? inView : Number(summary.non_finite_count ?? 0) || inView || 0;
    if (count > 0) {
      nonFiniteTotal += count;
      let text = `${label}${plural(count, "non-finite value")}`;
      const seen = series ? series.nonFinite : [];
      if (seen.length) {
        const shown = seen.slice(0, 5).map((p) => `${p.kind} at step ${fmt(p.step)}`).join(", ");
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

function traces(chart) {
  const out = [];
  const useWall = state.xAxis === "wall";
  let drawnPoints = 0;
  let rawTraces = 0;
  for (const runId of chart.runIds) {
    const series = chart.series[runId];
    if (!series) continue;
    const color = state.runs[runId].color;
    const x = useWall && series.hasWallTime ? series.wall.map((ms) => new Date(ms)) : series.step;
    const y = series.value.map((v) => (Number.isFinite(v) ? v : null));
    const smoothing = state.smoothing > 0;
    out.push({
      type: "scatter",
      mode: x.length === 1 ? "markers" : "lines",
      name: runId,
      legendgroup: runId,
      x,
      y,
      customdata: series.step,
      connectgaps: false,
      line: { color, width: 1.5 },
      marker: { color, size: 5 },
      opacity: smoothing ? 0.3 : 1,
      showlegend: !smoothing,
      hovertemplate: `${runId}<br>step %{customdata}<br>%{y:.6g}<extra></extra>`,
      meta: { role: "raw", runId },
    });
    drawnPoints += x.length;
    rawTraces += 1;
    if (smoothing) {
      const smoothed = smooth(series.value, state.smoothing).map((v) => (Number.isFinite(v) ? v : null));
      out.push({
        type: "scatter",
        mode: x.length === 1 ? "markers" : "lines",
        name: runId,
        legendgroup: runId,
        x,
        y: smoothed,
        customdata: series.step,
        connectgaps: false,
        line: { color, width: 2 },
        marker: { color, size: 5 },
        hovertemplate: `${runId} (smoothed)<br>step %{customdata}<br>%{y:.6g}<extra></extra>`,
        meta: { role: "smoothed", runId },
      });
    }
    if (series.nonFinite.length) {
      out.push({
        type: "scatter",
        mode: "markers",
        name: `${runId} non-finite`,
        legendgroup: runId,
        showlegend: false,
        x: series.nonFinite.map((p) => (useWall && p.wallMs !== null ? new Date(p.wallMs) : p.step)),
        y: series.nonFinite.map(() => 0),
        yaxis: "y2",
        cliponaxis: false,
        marker: { symbol: "x-thin-open", size: 10, color: "#b3261e", line: { width: 2, color: "#b3261e" } },
        text: series.nonFinite.map((p) => `${runId}: ${p.kind} at step ${p.step}`),
        hovertemplate: "%{text}<extra></extra>",
        meta: { role: "non-finite", runId },
      });
    }
  }
  return { data: out, drawnPoints, rawTraces };
}

function draw(chart) {
  if (!window.Plotly) return;
  const { data, drawnPoints, rawTraces } = traces(chart);
  const anyWall = chart.runIds.some((id) => chart.series[id]?.hasWallTime);
  const useWall = state.xAxis === "wall" && anyWall;
  const layout = {
    margin: { l: 60, r: 16, t: 8, b: 44 },
    xaxis: { title: { text: useWall ? "wall time" : "step" }, type: useWall ? "date" : "linear", zeroline: false },
    yaxis: { type: state.logY ? "log" : "linear", exponentformat: "e", zeroline: false },
    yaxis2: { overlaying: "y", range: [0, 1], visible: false, fixedrange: true },
    showlegend: chart.runIds.length > 1,
    legend: { orientation: "h", x: 0, y: 1.08 },
    hovermode: "closest",
    // Keeps the user's zoom across redraws; a new x axis kind starts a new view.
    uirevision: `${chart.metric}:${useWall ? "wall" : "step"}`,
  };
  if (!chart.drawn) {
    window.Plotly.newPlot(chart.plot, data, layout, { responsive: true, displaylogo: false });
    chart.plot.on("plotly_relayout", (event) => onRelayout(chart, event));
    chart.drawn = true;
  } else {
    window.Plotly.react(chart.plot, data, layout, { responsive: true, displaylogo: false });
  }
  chart.section.dataset.points = String(drawnPoints);
  chart.section.dataset.traces = String(rawTraces);
  if (state.xAxis === "wall" && !anyWall) {
    chart.status.textContent += " · this Portal sends no wall times with the points, so the axis stays on steps";
  }
  if (state.logY) {
    const nonPositive = chart.runIds.reduce((n, id) => n + (chart.series[id]?.value.filter((v) => v <= 0).length || 0), 0);
    if (nonPositive) chart.status.textContent += ` · ${plural(nonPositive, "value")} ≤ 0 not shown on the log axis`;
  }
}

function onRelayout(chart, event) {
  if (event["xaxis.autorange"] === true) {
    if (chart.view) loadChart(chart, null);
    return;
  }
  let range = null;
  if ("xaxis.range[0]" in event && "xaxis.range[1]" in event) range = [event["xaxis.range[0]"], event["xaxis.range[1]"]];
  else if (Array.isArray(event["xaxis.range"])) range = event["xaxis.range"];
  if (!range) return;
  const axis = state.xAxis === "wall" && chart.runIds.some((id) => chart.series[id]?.hasWallTime) ? "wall" : "step";
  loadChart(chart, { axis, range });
}

function redrawAll() {
  for (const chart of Object.values(state.charts)) {
    describe(chart);
    draw(chart);
  }
}

// -- runs listing --------------------------------------------------------------------------------

async function allRuns() {
  // v2 lists runs per experiment; the page data names the experiments of this workspace.
  const listing = await pageData("experiments", { project: state.project });
  const runs = [];
  for (const experiment of listing.experiments || []) {
    const id = experiment.experiment_id;
    if (!id) continue;
    let cursor = null;
    for (let page = 0; page < 50; page++) {
      const body = await api(`experiments/${encodeURIComponent(id)}/runs`, { limit: 200, cursor, project: experiment.project });
      runs.push(...(body.runs || []));
      cursor = body.next_cursor;
      if (!cursor) break;
    }
  }
  const seen = new Set();
  return runs
    .filter((run) => !seen.has(run.run_id) && seen.add(run.run_id))
    .sort((a, b) => String(b.created_at || "").localeCompare(String(a.created_at || "")));
}

async function listingPage() {
  const box = errorBox();
  let runs;
  try {
    runs = await allRuns();
  } catch (err) {
    showError(explain(err, "The runs could not be listed"), err, box);
    main.append(el("p", { class: "stellar-note", text: "A run can still be opened directly at stellar?target=<run_id>&project=<project>." }));
    document.getElementById("stellar-loading")?.remove();
    state.ready = true;
    main.dataset.state = "error";
    return;
  }
  const compare = el("button", { type: "button", id: "stellar-compare", text: "Compare selected runs", disabled: true });
  const selected = new Set();
  compare.addEventListener("click", () => {
    const picked = runs.filter((r) => selected.has(r.run_id));
    const projects = new Set(picked.map((r) => r.project));
    window.location.href = stellarHref(picked.map((r) => r.run_id), projects.size === 1 ? [...projects][0] : null);
  });
  const table = el("table", { class: "stellar-table", id: "stellar-run-table" });
  table.append(
    el(
      "thead",
      {},
      el("tr", {}, ...["", "Run / metric", "State", "Points", "Finite", "Non-finite", "Steps", "Min", "Max", "Latest"].map((h) => el("th", { text: h }))),
    ),
  );
  const tbody = el("tbody");
  table.append(tbody);
  main.append(el("div", { class: "stellar-controls" }, compare, el("span", { class: "stellar-note", text: `${plural(runs.length, "run")}` })), table);
  if (!runs.length) main.append(el("p", { class: "stellar-note", id: "stellar-no-runs", text: "No runs in this workspace yet." }));
  state.runs = {};
  const rows = runs.map((run) => {
    const check = el("input", { type: "checkbox", title: `select ${run.run_id} for comparison` });
    check.addEventListener("change", () => {
      if (check.checked) selected.add(run.run_id);
      else selected.delete(run.run_id);
      compare.disabled = selected.size < 1;
      compare.textContent = selected.size > 1 ? `Compare ${selected.size} runs` : "Open selected run";
    });
    const link = el("a", { href: stellarHref([run.run_id], run.project), text: run.run_id });
    const where = [run.project, run.experiment_id, run.run_group_id].filter(Boolean).join(" / ");
    const tr = el(
      "tr",
      { class: "stellar-run-row", "data-run-id": run.run_id, "data-state": run.state || "" },
      el("td", {}, check),
      el("td", {}, link, el("div", { class: "stellar-note", text: `${where}${run.created_at ? ` · created ${run.created_at}` : ""}` })),
      el("td", {}, el("span", { class: "stellar-state", "data-state": run.state || "", text: run.state || "unknown" })),
      el("td", { colSpan: 7 }),
    );
    tbody.append(tr);
    state.runs[run.run_id] = { run, metrics: null };
    return tr;
  });
  document.getElementById("stellar-loading")?.remove();
  // A handful of metric reads at a time keeps a long listing from flooding the Portal.
  let next = 0;
  const worker = async () => {
    while (next < runs.length) {
      const i = next++;
      await listMetrics(runs[i], rows[i]);
    }
  };
  await Promise.all(Array.from({ length: 6 }, worker));
  state.ready = true;
  main.dataset.state = "ready";
}

async function listMetrics(run, row) {
  let body;
  try {
    body = await api(`runs/${encodeURIComponent(run.run_id)}/metrics`, { project: run.project });
  } catch (err) {
    row.lastChild.append(el("span", { class: "stellar-error", text: explain(err, "metrics could not be loaded") }));
    return;
  }
  const metrics = (body.metrics || []).slice().sort((a, b) => metricOrder(a.name, b.name));
  state.runs[run.run_id].metrics = metrics;
  if (!metrics.length) row.lastChild.textContent = "no metrics yet";
  let after = row;
  for (const m of metrics) {
    const steps = m.min_step !== undefined ? `${fmt(m.min_step)}–${fmt(m.max_step)}` : "–";
    const latest = m.latest_value !== undefined ? `${fmt(m.latest_value)} @ ${fmt(m.latest_step)}` : m.latest_step !== undefined ? `– @ ${fmt(m.latest_step)}` : "–";
    const nonFinite = Number(m.non_finite_count || 0);
    const tr = el(
      "tr",
      { class: "stellar-metric-row", "data-run-id": run.run_id, "data-metric": m.name, "data-non-finite": String(nonFinite) },
      el("td"),
      el("td", { text: m.name }),
      el("td"),
      el("td", { class: "num", text: fmt(m.count) }),
      el("td", { class: "num", text: fmt(m.finite_count) }),
      el("td", { class: `num${nonFinite ? " bad" : ""}`, text: fmt(nonFinite) }),
      el("td", { class: "num", text: steps }),
      el("td", { class: "num", text: fmt(m.min_value) }),
      el("td", { class: "num", text: fmt(m.max_value) }),
      el("td", { class: "num", text: latest }),
    );
    after.after(tr);
    after = tr;
  }
}

// -- start ---------------------------------------------------------------------------------------

async function start() {
  try {
    if (state.mode === "runs") await runPage();
    else await listingPage();
  } catch (err) {
    showError(`The page failed: ${err.message || err}`);
    state.ready = true;
    main.dataset.state = "error";
  }
}

start();
