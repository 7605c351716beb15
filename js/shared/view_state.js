// A Stellar page's view as its address: the one encode/decode of what a shared link carries, for the run and
// compare page and for the runs listing (docs/comparing-runs.md, "Sharing a view").
//
// Decoding never fails: a parameter that is unknown, malformed or out of range is dropped (its default is used)
// and named in a notice, so a mangled link still opens a page. Encoding leaves out what equals its default, so a
// plain view has a short address.

import { parseStep } from "./step_cursor.js";

export const MAX_VALUE = 2000; // characters a parameter's value may have (a search text, a metric name)
export const MAX_TARGETS = 50; // runs a compare page draws (its address carries their ids)
export const MAX_PINS = 100;
export const MAX_ZOOMS = 100;
export const SMOOTHING_LIMIT = 0.999; // shared/smoothing.js's SMOOTHING_MAX
export const X_AXES = ["step", "relative", "wall"]; // and "metric:<name>"
export const AGGREGATES = ["", "mean", "median"];
export const BANDS = ["minmax", "std", "none"];
export const REDUCTIONS = ["final", "best", "latest"]; // the compare page's parameter-importance value
const ZOOM = "zoom."; // zoom.<metric>=<lo>..<hi> (in the chart's x axis units; wall time in epoch ms)

// Parameters the Portal reads itself, kept as they are.
const CARRIED = ["project", "source", "token"];

/** The run/compare page's view when its address says nothing (x axis: the caller's, e.g. the last chosen). */
export function defaultRunView(xAxis = "step") {
  return { targets: [], search: "", pins: [], smoothing: 0, xAxis, logY: false, aggregate: "", band: "minmax", zoom: {},
    onlyDiffering: false, importance: { metric: "", reduction: "final" }, step: null };
}

function tooLong(key, value, notices) {
  if (value.length <= MAX_VALUE) return false;
  notices.push(`${quoted(key)} is longer than ${MAX_VALUE} characters: ignored`);
  return true;
}

function quoted(value) {
  const text = String(value);
  return JSON.stringify(text.length > 40 ? `${text.slice(0, 40)}…` : text);
}

/** A finite number from the address, or null. "", "1e999", "0x10" and "NaN" are not numbers here. */
export function parseNumber(text) {
  const s = String(text).trim();
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(s)) return null;
  const n = Number(s);
  return Number.isFinite(n) ? n : null;
}

/** An x axis choice: step | relative | wall | metric:<name> (a name of at least one character). */
export function isXAxis(value) {
  return X_AXES.includes(value) || (typeof value === "string" && value.startsWith("metric:") && value.length > 7);
}

/** A zoom window "lo..hi" → [lo, hi] (finite numbers, lo < hi), else null. */
export function parseRange(text) {
  const parts = String(text).split("..");
  if (parts.length !== 2) return null;
  const [lo, hi] = parts.map(parseNumber);
  return lo !== null && hi !== null && lo < hi ? [lo, hi] : null;
}

function rangeText([lo, hi]) {
  return `${Number(lo)}..${Number(hi)}`;
}

/**
 * The run/compare page's view from its query (a URLSearchParams or string). `fallbackAxis` is the x axis when the
 * address names none. Returns { view, notices } (notices: sentences naming each parameter that was ignored).
 * Run ids come as target= (repeated or comma-separated) and compare=, first occurrence kept, as the Portal reads them.
 */
export function decodeRunView(query, fallbackAxis = "step") {
  const params = query instanceof URLSearchParams ? query : new URLSearchParams(query);
  const view = defaultRunView(isXAxis(fallbackAxis) ? fallbackAxis : "step");
  const notices = [];
  const seen = new Set();
  for (const [key, value] of params) {
    if (key === "target" || key === "compare") {
      for (const part of value.split(",")) {
        const runId = part.trim();
        if (!runId || view.targets.includes(runId)) continue;
        if (tooLong(key, runId, notices)) continue;
        if (view.targets.length >= MAX_TARGETS) {
          if (!seen.has("too-many")) notices.push(`more than ${MAX_TARGETS} runs in the address: the first ${MAX_TARGETS} are drawn`);
          seen.add("too-many");
          continue;
        }
        view.targets.push(runId);
      }
      continue;
    }
    if (CARRIED.includes(key)) continue;
    if (key.length > MAX_VALUE) {
      notices.push(`a parameter named ${quoted(key)} is longer than ${MAX_VALUE} characters: ignored`);
      continue;
    }
    if (tooLong(key, value, notices)) continue;
    if (key.startsWith(ZOOM)) {
      const metric = key.slice(ZOOM.length);
      const range = parseRange(value);
      if (!metric || !range) notices.push(`${key}=${quoted(value)} is not a zoom window (lo..hi, two numbers, lo < hi): ignored`);
      else if (Object.keys(view.zoom).length >= MAX_ZOOMS) notices.push(`more than ${MAX_ZOOMS} zoomed charts: ${quoted(metric)} ignored`);
      else view.zoom[metric] = range;
      continue;
    }
    if (seen.has(key) && key !== "pin") {
      notices.push(`"${key}" is given more than once: the first is used`);
      continue;
    }
    seen.add(key);
    switch (key) {
      case "q":
        view.search = value;
        break;
      case "pin":
        if (!value) break;
        if (view.pins.length >= MAX_PINS) notices.push(`more than ${MAX_PINS} pinned metrics: ${quoted(value)} ignored`);
        else if (!view.pins.includes(value)) view.pins.push(value);
        break;
      case "smooth": {
        const n = parseNumber(value);
        if (n === null || n < 0 || n > SMOOTHING_LIMIT) notices.push(`smooth=${quoted(value)} is not a smoothing weight in [0, ${SMOOTHING_LIMIT}]: ignored`);
        else view.smoothing = n;
        break;
      }
      case "x":
        if (isXAxis(value)) view.xAxis = value;
        else notices.push(`x=${quoted(value)} is not an x axis (step, relative, wall or metric:<name>): ignored`);
        break;
      case "y":
        if (value === "log" || value === "linear") view.logY = value === "log";
        else notices.push(`y=${quoted(value)} is not a y scale (linear or log): ignored`);
        break;
      case "agg":
        if (AGGREGATES.includes(value)) view.aggregate = value;
        else notices.push(`agg=${quoted(value)} is not an aggregation (mean or median): ignored`);
        break;
      case "band":
        if (BANDS.includes(value)) view.band = value;
        else notices.push(`band=${quoted(value)} is not a band (minmax, std or none): ignored`);
        break;
      case "diff":
        if (value === "1" || value === "0") view.onlyDiffering = value === "1";
        else notices.push(`diff=${quoted(value)} is not 1 (only the config keys that differ) or 0: ignored`);
        break;
      case "importance":
        view.importance.metric = value;
        break;
      case "step": {
        // The media cards' step cursor (shared/step_cursor.js): an int64 step.
        const parsed = parseStep(value);
        if (parsed.step === null) notices.push(`step=${quoted(value)} is not a step for the media cards (${parsed.why}): ignored`);
        else view.step = parsed.step;
        break;
      }
      case "reduction":
        if (REDUCTIONS.includes(value)) view.importance.reduction = value;
        else notices.push(`reduction=${quoted(value)} is not a value of a run (final, best or latest): ignored`);
        break;
      default:
        notices.push(`the address parameter "${key}" is not one this page knows: ignored`);
    }
  }
  return { view, notices };
}

/**
 * The query of a run/compare page's `view` (plus `project` and `source` when set), defaults left out.
 * The x axis is written unless it is `defaultAxis`: a page without x= starts on the axis last chosen in the
 * browser that opens it, so a link to share names its axis (the default, null, always writes it).
 */
export function encodeRunView(view, { project = null, source = null, defaultAxis = null } = {}) {
  const p = new URLSearchParams();
  for (const runId of view.targets || []) p.append("target", runId);
  if (project) p.set("project", project);
  if (source) p.set("source", source);
  if (view.search) p.set("q", view.search);
  for (const name of view.pins || []) p.append("pin", name);
  if (view.smoothing) p.set("smooth", String(view.smoothing));
  if (view.xAxis && view.xAxis !== defaultAxis) p.set("x", view.xAxis);
  if (view.logY) p.set("y", "log");
  if (view.aggregate) p.set("agg", view.aggregate);
  if (view.band && view.band !== "minmax") p.set("band", view.band);
  for (const [metric, range] of Object.entries(view.zoom || {})) {
    if (range && Number.isFinite(Number(range[0])) && Number.isFinite(Number(range[1]))) p.set(`${ZOOM}${metric}`, rangeText(range));
  }
  if (view.onlyDiffering) p.set("diff", "1");
  if (view.importance?.metric) p.set("importance", view.importance.metric);
  if (view.importance?.reduction && view.importance.reduction !== "final") p.set("reduction", view.importance.reduction);
  if (view.step !== null && view.step !== undefined) p.set("step", String(view.step));
  return p;
}

// -- the runs listing ------------------------------------------------------------------------------------

export const LISTING_FILTERS = ["state", "project", "experiment", "group", "tag"];
const LISTING_KEYS = ["q", "note", ...LISTING_FILTERS, "config", "metric", "sort", "dir", "group_by", "constant", "view", "source", "token"];

/** The runs listing's view from its query: { view, notices }, as decodeRunView. */
export function decodeListingView(query) {
  const p = query instanceof URLSearchParams ? query : new URLSearchParams(query);
  const notices = [];
  const get = (key) => {
    const value = p.get(key);
    if (value === null) return "";
    return tooLong(key, value, notices) ? "" : value;
  };
  for (const key of new Set(p.keys())) {
    if (!LISTING_KEYS.includes(key)) notices.push(`the address parameter "${key}" is not one this page knows: ignored`);
  }
  const sort = get("sort") || "created_at";
  const dir = get("dir");
  if (dir && dir !== "asc" && dir !== "desc") notices.push(`dir=${quoted(dir)} is not a sort direction (asc or desc): ignored`);
  const groupBy = get("group_by");
  if (groupBy && groupBy !== "experiment" && groupBy !== "group") notices.push(`group_by=${quoted(groupBy)} is not a grouping (experiment or group): ignored`);
  let note = get("note").trim();
  if (/[\u0000-\u001f\u007f]/.test(note)) {
    notices.push(`note=${quoted(note)} holds control characters, which no note filter can match: ignored`);
    note = "";
  }
  const viewName = get("view");
  if (viewName && viewName !== "parallel" && viewName !== "table") notices.push(`view=${quoted(viewName)} is not a view (table or parallel): ignored`);
  return {
    view: {
      search: get("q"),
      note,
      filters: Object.fromEntries(LISTING_FILTERS.map((f) => [f, get(f)])),
      configText: get("config"),
      metric: get("metric"),
      sort: { column: sort, direction: dir === "asc" || (dir !== "desc" && sort !== "created_at") ? "asc" : "desc" },
      groupBy: groupBy === "experiment" || groupBy === "group" ? groupBy : "",
      showConstant: get("constant") === "1",
      parallel: viewName === "parallel",
    },
    notices,
  };
}

/** The query of a runs listing's `view` (as decodeListingView returns it), defaults left out. */
export function encodeListingView(t, { project = null, source = null } = {}) {
  const p = new URLSearchParams();
  if (project) p.set("project", project);
  if (source) p.set("source", source);
  if (t.search) p.set("q", t.search);
  if (t.note) p.set("note", t.note);
  for (const f of LISTING_FILTERS) if (t.filters[f]) p.set(f, t.filters[f]); // a project filter names the page's project
  if (t.configText) p.set("config", t.configText);
  if (t.metric) p.set("metric", t.metric);
  if (t.sort.column !== "created_at" || t.sort.direction !== "desc") {
    p.set("sort", t.sort.column);
    p.set("dir", t.sort.direction);
  }
  if (t.groupBy) p.set("group_by", t.groupBy);
  if (t.showConstant) p.set("constant", "1");
  if (t.parallel) p.set("view", "parallel");
  return p;
}

/** "path?query" for history.replaceState / pushState ("path" alone when the query is empty). */
export function addressOf(pathname, params, hash = "") {
  const query = params.toString();
  return pathname + (query ? `?${query}` : "") + hash;
}
