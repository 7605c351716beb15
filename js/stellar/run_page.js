// The run page (/stellar?target=a[&compare=b,c]): a card per run and a chart per metric (in sections, fetched as
// they scroll into view), every run in its palette colour and named by what differs between the runs
// (shared/differing.js: lr=0.1 vs lr=0.03).
import { configKeys, differingKeys, runLabels, valueText } from "../shared/differing.js";
import { manyProjects } from "../shared/run_ref.js";
import { h } from "../shared/dom.js";
import { formatTime } from "../shared/format.js";
import { lifecycleText, resourcesText } from "../shared/job_words.js";
import { assignRunColors } from "../shared/palette.js";
import { SMOOTHING_MAX, SMOOTHING_STEP } from "../shared/smoothing.js";
import { METRIC_AXIS, axisMetric, saveAxis } from "../shared/time_axis.js";
import { xCandidates } from "../shared/x_metric.js";
import { id } from "../shared/urls.js";
import { annotations } from "./annotations.js";
import { copyLinkControl, showAddressNotices, writeView } from "./address.js";
import { api, explain, pageData } from "./api.js";
import { redrawAll, resetZooms, updateSummaries } from "./chart.js";
import { ChartSections } from "./chart_sections.js";
import { downloadControl } from "./download.js";
import { exportControl } from "./export_view.js";
import { errorBox, showError } from "./notices.js";
import { importancePanel } from "./importance_panel.js";
import { main, runRef, state } from "./page.js";
import { MediaSection } from "./media_section.js";
import { isLive } from "../shared/media/live.js";
import { isMarker, metricOrder } from "./series.js";
import { createStepCursor } from "../shared/step_cursor.js";

function controls() {
  const slider = h("input", { type: "range", min: "0", max: String(SMOOTHING_MAX), step: String(SMOOTHING_STEP),
    value: String(state.smoothing), id: "stellar-smoothing" });
  const shown = h("output", { id: "stellar-smoothing-value", text: String(state.smoothing) });
  slider.addEventListener("input", () => {
    state.smoothing = Number(slider.value);
    shown.textContent = slider.value;
    redrawAll();
    writeView();
  });
  const logY = h("input", { type: "checkbox", id: "stellar-log-y" });
  logY.checked = state.logY;
  logY.addEventListener("change", () => {
    state.logY = logY.checked;
    redrawAll();
    writeView();
  });
  // step, relative or wall time, or a metric of the runs (`metric:<name>`, joined by step: shared/x_metric.js);
  // the metrics are added when the runs' names are known (fillAxisMetrics).
  const xAxis = h("select", { id: "stellar-x-axis" });
  xAxis.append(h("option", { value: "step", text: "step" }), h("option", { value: "relative", text: "relative time" }),
    h("option", { value: "wall", text: "wall time" }));
  if (axisMetric(state.xAxis) !== null) xAxis.append(metricOption(axisMetric(state.xAxis)));
  xAxis.value = state.xAxis;
  xAxis.addEventListener("change", () => {
    state.xAxis = xAxis.value;
    saveAxis(state.xAxis); // kept for the next page and the next visit
    resetZooms(); // a window on one axis means nothing on another
    redrawAll();
    writeView();
  });
  // Compared runs (seeds of one configuration) as one line with a band: shared/aggregate.js.
  const aggregate = h("select", { id: "stellar-aggregate" });
  aggregate.append(h("option", { value: "", text: "each run" }), h("option", { value: "mean", text: "mean" }),
    h("option", { value: "median", text: "median" }));
  const band = h("select", { id: "stellar-band" });
  band.append(h("option", { value: "minmax", text: "min–max" }), h("option", { value: "std", text: "±1 std" }),
    h("option", { value: "none", text: "no band" }));
  aggregate.value = state.aggregate;
  band.value = state.band;
  aggregate.addEventListener("change", () => {
    state.aggregate = aggregate.value;
    resetZooms(); // the aggregate line is a new view of the chart (its zoom starts over)
    redrawAll();
    writeView();
  });
  band.addEventListener("change", () => {
    state.band = band.value;
    redrawAll();
    writeView();
  });
  const aggregateLabel = state.targets.length > 1
    ? h("label", { title: "draw the compared runs as one line (mean or median) with a band; steps are aligned as docs/comparing-runs.md says" },
      "runs as", aggregate, band)
    : null;
  return h(
    "div",
    { class: "stellar-controls" },
    h("label", {}, "Smoothing", slider, shown),
    h("label", {}, logY, "log y"),
    h("label", {}, "x axis", xAxis),
    aggregateLabel,
    copyLinkControl(),
    exportControl(),
    h("span", { class: "stellar-note", text: "Drag on a chart to zoom: the visible steps are fetched in full; double-click to reset." }),
  );
}

function metricOption(name) {
  return h("option", { value: `${METRIC_AXIS}${name}`, text: name, "data-metric": name });
}

/** The x axis menu's metrics: the runs' names, progress-like ones (tokens, epoch, samples…) first. */
function fillAxisMetrics(names) {
  const select = document.getElementById("stellar-x-axis");
  if (!select) return;
  const { names: offered, more } = xCandidates(names);
  const current = axisMetric(state.xAxis);
  const group = h("optgroup", { label: more ? `metric (first ${offered.length}; ${more} more not listed)` : "metric" });
  for (const name of offered) group.append(metricOption(name));
  if (current !== null && !offered.includes(current)) group.append(metricOption(current));
  select.querySelectorAll("option[data-metric], optgroup").forEach((node) => node.remove());
  select.append(group);
  select.value = state.xAxis;
}

function configLine(config, differing) {
  // The config's fields, those that differ between the compared runs first and in bold; with the page's
  // "only what differs" toggle, those alone.
  const keys = configKeys(config, differing, state.onlyDiffering);
  const dd = h("dd", { class: "stellar-config" });
  if (!keys.length) dd.append(h("span", { class: "stellar-note", text: "nothing differs" }));
  keys.forEach((key, i) => {
    const text = `${key}=${valueText(config[key])}`;
    dd.append(differing.has(key) ? h("span", { class: "stellar-differs", text }) : text);
    if (i < keys.length - 1) dd.append(", ");
  });
  return dd;
}

function runCard(run, entry, differing) {
  const { color, label, config } = entry;
  const dl = h("dl");
  const add = (term, value, title = null) => {
    if (value === undefined || value === null || value === "") return;
    dl.append(h("dt", { text: term }), h("dd", { text: String(value), title }));
  };
  const addTime = (term, raw) => raw && add(term, formatTime(raw), String(raw));
  const stateText = run.lifecycle_state && run.lifecycle_state !== run.state ? `${run.state} (${run.lifecycle_state})` : run.state;
  dl.append(h("dt", { text: "state" }), h("dd", {}, h("span", { class: "stellar-state", "data-state": run.state || "", text: stateText || "unknown" })));
  add("project", run.project);
  add("experiment", run.experiment_id);
  add("group", run.run_group_id);
  add("parent", run.parent_run_id);
  add("owner", run.owner);
  addTime("created", run.created_at);
  addTime("started", run.started_at);
  addTime("completed", run.completed_at);
  if (run.successful !== undefined && run.state !== "running") add("successful", run.successful ? "yes" : "no");
  add("code", run.code_sha);
  add("image", run.image_digest);
  add("result", run.result_uri);
  if (config && Object.keys(config).length) dl.append(h("dt", { text: "config" }), configLine(config, differing));
  add("metrics", (run.metric_names || []).filter((name) => !isMarker(name)).length);
  return h(
    "section",
    { class: "stellar-run", "data-run-id": run.run_id, "data-run-key": entry.key, "data-project": run.project || "", "data-color": color, "data-label": label },
    h("h2", {}, h("span", { class: "stellar-swatch", style: `background:${color}` }), run.run_id,
      entry.showProject ? h("span", { class: "stellar-run-project", text: run.project || "" }) : null,
      label !== run.run_id ? h("span", { class: "stellar-run-label", text: label }) : null),
    dl,
  );
}

/** A run's checkpoints arrived: kept for its charts, counted on its card, and the drawn charts redrawn. */
function showCheckpoints(runId, body) {
  state.runs[runId].checkpoints = body;
  checkpointLine(runId);
  redrawAll();
}

/** "checkpoints: 3, the last at step 300 · 1 retry" on the run's card, once both the card and the answer exist. */
function checkpointLine(runId) {
  const body = state.runs[runId]?.checkpoints;
  const card = document.querySelector(`.stellar-run[data-run-id="${CSS.escape(runId)}"] dl`);
  if (!body || !card || card.querySelector(".stellar-checkpoints")) return;
  const saved = (body.checkpoints || []).filter((c) => !c.deleted);
  if (saved.length || (body.retries || []).length) {
    const last = saved.filter((c) => c.step !== null).at(-1);
    const text = `${saved.length}${last ? `, the last at step ${last.step}` : ""}`
      + ((body.retries || []).length ? ` · ${body.retries.length} retr${body.retries.length === 1 ? "y" : "ies"}` : "");
    card.append(h("dt", { text: "checkpoints" }), h("dd", { class: "stellar-checkpoints", text,
      title: last ? last.uri : "" }));
  }
}

/**
 * The job's lifecycle in its backend's words and the resources it asked for (page data `runs/{id}/job`), added
 * to the run's card; a Portal without that page data (TauGrid's: 404) leaves the card as it is.
 */
async function addJob(runId, card) {
  let body;
  try {
    body = await pageData(["runs", id(runRef(runId).runId), "job"], { project: runRef(runId).project });
  } catch (err) {
    return;
  }
  const dl = card.querySelector("dl");
  const lifecycle = lifecycleText(body.lifecycle);
  if (lifecycle) {
    dl.append(h("dt", { text: "lifecycle" }), h("dd", { class: "stellar-lifecycle", "data-phase": body.lifecycle.phase, text: lifecycle }));
  }
  const resources = resourcesText(body.resources);
  if (resources) {
    const where = body.backend ? ` (${body.backend})` : "";
    dl.append(h("dt", { text: "asked for" }), h("dd", { class: "stellar-resources", text: resources + where }));
  }
  for (const fault of body.faults || []) {
    dl.append(h("dt", { text: "fault" }), h("dd", { class: "stellar-fault", title: fault.time, text: fault.message }));
  }
}

/**
 * The runs' config fields from the page data (null for a run without one). None when the Portal has no page
 * data (TauGrid's: 404) or the read fails (said in `box`): the runs keep their ids as names.
 */
async function runConfigs(runIds, box) {
  try {
    // By id in every project: the runs compared may be in different ones.
    const refs = runIds.map((key) => [key, runRef(key)]);
    const body = await pageData(["runs"], { run_id: [...new Set(refs.map(([, ref]) => ref.runId))] });
    const rows = body.runs || [];
    const out = new Map();
    for (const [key, ref] of refs) {
      const row = rows.find((r) => r.run_id === ref.runId && (!ref.project || r.project === ref.project));
      if (row) out.set(key, row.config ?? null);
    }
    return out;
  } catch (err) {
    if (err.status !== 404) {
      box.append(h("p", { class: "stellar-note", id: "stellar-configs-failed",
        text: `The runs' configurations could not be read (${err.message}): they are named by their ids.` }));
    }
    return new Map();
  }
}

/** The compare page's "only the config keys that differ" toggle: redraws each card's config line. */
function diffToggle(runIds, differing) {
  const box = h("input", { type: "checkbox", id: "stellar-config-diff" });
  box.checked = Boolean(state.onlyDiffering);
  box.addEventListener("change", () => {
    state.onlyDiffering = box.checked;
    writeView();
    for (const runId of runIds) {
      const entry = state.runs[runId];
      const old = document.querySelector(`.stellar-run[data-run-key="${CSS.escape(runId)}"] dd.stellar-config`);
      if (old && entry.config) old.replaceWith(configLine(entry.config, differing));
    }
  });
  return h("label", { class: "stellar-controls", title: `${differing.size} config keys differ between these runs` },
    box, `only the config keys that differ (${differing.size})`);
}

export async function runPage() {
  const box = errorBox();
  const runsBox = h("div", { class: "stellar-runs", id: "stellar-runs" });
  const chartsBox = h("div", { class: "stellar-sections", id: "stellar-charts" });
  const mediaBox = h("section", { class: "stellar-media", id: "stellar-media", hidden: true });
  const controlsBox = controls();
  main.append(controlsBox, runsBox, chartsBox, mediaBox);
  // One step cursor for the page: a click on a loss curve, the Media section's step box or a card's slider.
  state.cursor = createStepCursor(state.step);
  showAddressNotices(box);
  // The listed order (target, then compare) is the order the pane lists the same runs in: same colours.
  const colors = assignRunColors(state.targets);
  const configsRead = runConfigs(state.targets, box);
  // The page is drawn from each run's own answer, whose metric_names list every metric; the metric catalog
  // (its summaries: counts, non-finite counts; 2.9 MB for 10,000 metrics) follows and fills them in.
  const catalogs = [];
  const loaded = await Promise.all(
    state.targets.map(async (runId) => {
      try {
        const runBody = await api(["runs", id(runRef(runId).runId)], { project: runRef(runId).project });
        const run = runBody.run;
        const names = (run.metric_names || []).map((name) => ({ name }));
        state.runs[runId] = { run, color: colors.get(runId), metrics: names, metadata: runBody.metadata };
        // Its checkpoints and retries, marked on every chart (our route: another Portal answers 404, no marks).
        catalogs.push(api(["runs", id(runRef(runId).runId), "checkpoints"], { project: runRef(runId).project }).then(
          (body) => showCheckpoints(runId, body),
          (err) => err.status === 404 || showError(explain(err, `The checkpoints of ${runId} could not be loaded`),
            err, box)));
        catalogs.push(api(["runs", id(runRef(runId).runId), "metrics"], { project: runRef(runId).project }).then(
          (body) => updateSummaries(runId, body.metrics || []),
          (err) => showError(explain(err, `The metric summaries of ${runId} could not be loaded`), err, box)));
        return runId;
      } catch (err) {
        showError(explain(err, `Run ${runId} could not be loaded`), err, box);
        return null;
      }
    }),
  );
  const ok = loaded.filter(Boolean);
  const annotationsRead = [];
  const configs = await configsRead;
  const labels = runLabels(ok, configs);
  const differing = new Set(differingKeys(ok.map((runId) => configs.get(runId) ?? null)));
  const jobs = [];
  // Runs of several projects (the address names them project/run): each card says its project.
  const showProject = manyProjects(ok.map((runId) => state.runs[runId].run.project));
  state.projects = [...new Set(ok.map((runId) => state.runs[runId].run.project).filter(Boolean))];
  for (const runId of ok) {
    const entry = state.runs[runId];
    entry.showProject = showProject;
    entry.key = runId;
    entry.label = labels.get(runId).label;
    entry.config = configs.get(runId) ?? null;
    const card = runCard(entry.run, entry, differing);
    runsBox.append(card);
    // Its notes, tags and the notifications it sent (annotations.js): read beside the charts, never before them.
    annotationsRead.push(annotations(entry.run).then((section) => card.append(section)));
    jobs.push(addJob(runId, card));
    checkpointLine(runId);
    for (const warning of entry.metadata?.warnings || []) {
      box.append(h("p", { class: "stellar-note", text: `${runId}: ${warning}` }));
    }
  }
  if (ok.length > 1) runsBox.before(diffToggle(ok, differing));
  // tau/ markers (the collector's run status) are the run's state, shown in words on its card, not charts.
  const names = new Set();
  for (const runId of ok) for (const m of state.runs[runId].metrics) if (!isMarker(m.name)) names.add(m.name);
  const importance = ok.length > 1 ? importancePanel(ok, [...names].sort(metricOrder)) : null;
  if (importance) {
    runsBox.after(importance);
    importance.load();
  }
  if (ok.length && !names.size) {
    chartsBox.append(h("p", { class: "stellar-note", id: "stellar-no-metrics", text: "No metrics have been recorded for this run yet." }));
  }
  fillAxisMetrics([...names]);
  // In sections, behind a search box; a chart is fetched when it scrolls into view (chart_sections.js).
  // An offline export draws the charts it carries (those the page had drawn).
  if (state.offline) for (const name of [...names]) if (!state.offline.metrics.includes(name)) names.delete(name);
  const ordered = [...names].sort(metricOrder);
  const sections = new ChartSections(ordered, ok, chartsBox);
  if (names.size) controlsBox.insertBefore(sections.control, controlsBox.lastChild);
  const download = state.offline ? null : downloadControl(ok, ordered);
  if (download) chartsBox.before(download);
  writeView(); // the address names its axis and drops what it got wrong
  document.getElementById("stellar-loading")?.remove();
  // The runs' histograms, images and text (media_section.js): read beside the charts, never before them.
  // An offline export draws the media it carries (taunotebook export-view reads them; `offline.media` lists them).
  const media = state.offline && !state.offline.media?.length ? null : new MediaSection(ok, mediaBox, state.cursor);
  state.media = media; // its cards drawn are what "Export HTML" carries (export_view.js)
  const mediaRead = media ? media.load().then((shown) => {
    main.dataset.media = shown ? "shown" : "none";
    sections.filterListeners.push((filter) => media.setFilter(filter));
    if (shown && !names.size) controlsBox.insertBefore(sections.control, controlsBox.lastChild);
    // A live run's new media steps and tags follow while the page is open (shared/media/live.js).
    media.follow(ok.filter((runId) => isLive(state.runs[runId].run)));
  }, (err) => {
    main.dataset.media = "error";
    showError(explain(err, "The media section failed"), err, box);
  }) : Promise.resolve();
  await sections.start();
  state.ready = true;
  main.dataset.state = ok.length ? "ready" : "error";
  await Promise.all(catalogs);
  main.dataset.catalog = "loaded";
  await Promise.allSettled(annotationsRead);
  main.dataset.annotations = "loaded";
  await Promise.all(jobs);
  main.dataset.job = "loaded";
  await mediaRead;
}
