// A chart's series as the pages hold it: the v2 read's points, plus the page data's non-finite marks and
// wall times; and the order metrics are listed in.
import { epochMs } from "../shared/format.js";
import { interpolate } from "../shared/walltime.js";

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
  return epochMs(point.wall_time ?? point.wall_time_us ?? point.timestamp ?? point.time);
}

/** A v2 series read's points as columns: step, value (NaN where non-finite), wall (ms or null), nonFinite marks. */
export function parsePoints(points) {
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

/** Adds what the page-data read knows to a parsed v2 series: non-finite positions and wall times. */
export function mergeExtras(series, extras) {
  if (!extras) return series;
  if (extras.non_finite?.length || extras.non_finite_count) {
    series.nonFinite = (extras.non_finite || []).map((p) => ({ step: Number(p.step), kind: p.value, wallMs: readWallTime(p) }));
    series.nonFiniteCount = Number(extras.non_finite_count || series.nonFinite.length);
  }
  const samples = extras.wall_time;
  if (!series.hasWallTime && samples?.step?.length) {
    series.wall = interpolate(series.step, samples.step, samples.wall_time.map((w) => w / 1000));
    series.hasWallTime = true;
  }
  return series;
}

/** A collector's marker (tau/run_status): the run's state as a metric, shown in words, never drawn. */
export function isMarker(name) {
  return String(name).startsWith("tau/");
}

/** loss first, then other …loss metrics, then the rest, tau/ markers last; alphabetical within each. */
export function metricOrder(a, b) {
  const rank = (name) => (name === "loss" ? 0 : name.startsWith("tau/") ? 3 : /loss/i.test(name) ? 1 : 2);
  return rank(a) - rank(b) || a.localeCompare(b);
}
