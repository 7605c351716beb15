// The x axis a chart is drawn against — step, relative time, wall time or a metric of the run (`metric:<name>`,
// joined by step: shared/x_metric.js) — one rule for the pane and the Stellar pages, and the choice kept across
// reloads.
//
// Relative time is the time since the run's own first point (as W&B's "Relative Time (Wall)"), so runs
// compared on it line up at zero whenever each started. It is drawn in seconds, minutes or hours, whichever
// keeps the longest run's numbers readable.

export const AXES = ["step", "relative", "wall"];
export const METRIC_AXIS = "metric:"; // `metric:<name>`: the values of that metric of each run, joined by step
const STORAGE_KEY = "taunotebook.xAxis";

/** Whether `axis` names an axis: one of AXES, or `metric:` and a metric's name. */
export function isAxis(axis) {
  return AXES.includes(axis) || (typeof axis === "string" && axis.startsWith(METRIC_AXIS) && axis.length > METRIC_AXIS.length);
}

/** The metric a `metric:<name>` axis draws against, else null. */
export function axisMetric(axis) {
  return typeof axis === "string" && axis.startsWith(METRIC_AXIS) && axis.length > METRIC_AXIS.length
    ? axis.slice(METRIC_AXIS.length) : null;
}

/** The axis a page starts on: the one last chosen in this browser, else step. */
export function loadAxis(storage = globalThis.localStorage) {
  try {
    const saved = storage?.getItem(STORAGE_KEY);
    return isAxis(saved) ? saved : "step";
  } catch {
    return "step"; // storage refused (a sandboxed frame): the default, every time
  }
}

/** Remembers the chosen axis for the next page. */
export function saveAxis(axis, storage = globalThis.localStorage) {
  if (!isAxis(axis)) {
    throw new RangeError(`axis must be one of ${AXES.join(", ")}, got ${axis} (or metric:<name> for a metric's values)`);
  }
  try {
    storage?.setItem(STORAGE_KEY, axis);
  } catch {
    // storage refused: the choice lasts as long as the page
  }
}

/** The unit relative times spanning `maxSeconds` are drawn in: {name, seconds}. */
export function relativeUnit(maxSeconds) {
  if (maxSeconds >= 2 * 3600) return { name: "hours", seconds: 3600 };
  if (maxSeconds >= 2 * 60) return { name: "minutes", seconds: 60 };
  return { name: "seconds", seconds: 1 };
}

/**
 * The x values of points at `wallMs` (each point's wall time, ms) on `axis`: Date objects for wall time, time
 * since `originMs` in `unit` for relative time; null when the axis needs wall times the points lack.
 */
export function timeValues(axis, wallMs, originMs, unit = { seconds: 1 }) {
  if (axis === "wall") return wallMs.map((ms) => new Date(ms));
  if (axis === "relative") {
    if (!Number.isFinite(originMs)) return null;
    return wallMs.map((ms) => (ms - originMs) / 1000 / unit.seconds);
  }
  throw new RangeError(`timeValues is for the time axes, got ${axis}`);
}

/** The axis title: a metric axis is titled by the metric's name. */
export function axisTitle(axis, unit) {
  const metric = axisMetric(axis);
  if (metric !== null) return metric;
  if (axis === "wall") return "wall time";
  if (axis === "relative") return `relative time (${unit?.name ?? "seconds"})`;
  return "step";
}
