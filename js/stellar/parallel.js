// The parallel-coordinates view's data, without plotly: one axis per hyperparameter that varies across the
// runs plus one for a metric's final or best value; text values as categories, values spanning decades on
// a log axis; and which runs the brushed ranges keep.
import { valueText } from "../shared/differing.js";
import { naturalCompare } from "./runs_table.js";

export const MAX_AXES = 30; // plotly's parcoords draws 2..60; past ~30 axes the labels cannot be read
const LOG_SPAN = 100; // positive values whose max/min reach this are drawn on a log axis

/** "min" for metrics where lower is better (loss, error, perplexity…), else "max". */
export function bestDirection(metric) {
  return /loss|err|perplexity|ppl|mse|mae|rmse|regret|wer|cer|time|latency/i.test(metric || "") ? "min" : "max";
}

/** The metric value a run is drawn with: "final" (latest) or "best" (min or max by `best`); undefined if none. */
export function metricValue(run, metric, which = "final", best = bestDirection(metric)) {
  const m = run.metrics?.[metric];
  if (!m) return undefined;
  const v = which === "best" ? (best === "min" ? m.min_value : m.max_value) : m.latest_value;
  return typeof v === "number" && Number.isFinite(v) ? v : undefined;
}

function decadeTicks(lo, hi) {
  const vals = [];
  for (let k = Math.floor(Math.log10(lo)); k <= Math.ceil(Math.log10(hi)); k++) vals.push(k);
  return { tickvals: vals, ticktext: vals.map((k) => valueText(Number(`1e${k}`))) };
}

function axis(key, label, raw) {
  // Text (or mixed) values become categories in natural order; numbers stay numbers, on a log axis when
  // they are all positive and span at least two decades.
  const numeric = raw.every((v) => typeof v === "number" && Number.isFinite(v));
  if (!numeric) {
    const texts = raw.map((v) => valueText(v));
    const categories = [...new Set(texts)].sort(naturalCompare);
    const code = new Map(categories.map((c, i) => [c, i]));
    return { key, label, kind: "category", values: texts.map((t) => code.get(t)), tickvals: categories.map((_, i) => i),
      ticktext: categories, range: [0, Math.max(1, categories.length - 1)] };
  }
  const lo = Math.min(...raw);
  const hi = Math.max(...raw);
  if (lo > 0 && hi / lo >= LOG_SPAN) {
    return { key, label: `${label} (log)`, kind: "log", values: raw.map(Math.log10), ...decadeTicks(lo, hi),
      range: [Math.log10(lo), Math.log10(hi)] };
  }
  return { key, label, kind: "number", values: raw.slice(), range: lo === hi ? [lo - 1, hi + 1] : [lo, hi] };
}

/**
 * The axes for `runs`: the config `keys` (those that vary), then the metric. Runs without the metric value,
 * or without a numeric key another run has as a number, cannot be placed on every axis: they are left out
 * and listed in `left` with the reason.
 */
export function parallelData(runs, keys, metric, { which = "final", best = bestDirection(metric) } = {}) {
  const left = [];
  const shownKeys = keys.slice(0, MAX_AXES - 1);
  const numericKeys = new Set(
    shownKeys.filter((key) => runs.some((r) => typeof r.config?.[key] === "number") &&
      runs.every((r) => !r.config || !(key in r.config) || typeof r.config[key] === "number")),
  );
  const placed = runs.filter((run) => {
    if (metricValue(run, metric, which, best) === undefined) {
      left.push({ run_id: run.run_id, reason: `no ${which === "best" ? `${best}imum` : "final"} value of ${metric}` });
      return false;
    }
    const missing = [...numericKeys].find((key) => typeof run.config?.[key] !== "number");
    if (missing) {
      left.push({ run_id: run.run_id, reason: `no value of ${missing}` });
      return false;
    }
    return true;
  });
  const axes = shownKeys.map((key) => axis(key, key, placed.map((r) => r.config?.[key])));
  const metricLabel = which === "best" ? `${metric} (${best})` : `${metric} (final)`;
  axes.push({ ...axis(`metric:${metric}`, metricLabel, placed.map((r) => metricValue(r, metric, which, best))),
    metric: true });
  return { axes, runs: placed, left, hiddenKeys: keys.length - shownKeys.length };
}

/** A parcoords constraintrange ([lo, hi] or [[lo, hi], ...], or none) as a list of ranges. */
function ranges(constraint) {
  if (!Array.isArray(constraint) || !constraint.length) return null;
  return Array.isArray(constraint[0]) ? constraint : [constraint];
}

/**
 * The ids of the placed runs inside every brushed range; null when nothing is brushed. `constraints` holds
 * each axis's constraintrange, in the order of `data.axes`. A category axis keeps a run whose category
 * code lies in the range (plotly snaps category brushes to whole codes).
 */
export function brushedRuns(data, constraints) {
  const active = constraints.map(ranges);
  if (!active.some(Boolean)) return null;
  const kept = new Set();
  data.runs.forEach((run, i) => {
    const inside = data.axes.every((axis, a) => {
      const spans = active[a];
      if (!spans) return true;
      const v = axis.values[i];
      return spans.some(([lo, hi]) => v >= Math.min(lo, hi) && v <= Math.max(lo, hi));
    });
    if (inside) kept.add(run.run_id);
  });
  return kept;
}
