// A metric of the run as the x axis (tokens seen, epoch, samples): each point of a series takes the x metric's
// value at its step — one join rule for the pane and the Stellar pages (docs/loss-pane.md says it in words).
//
// The rule is W&B's `define_metric(name, step_metric=x)` with its default `step_sync=True`: the last value of the
// step metric is carried into rows that lack it. So a point at step s takes the x metric's last finite value at a
// step ≤ s (at s itself when both were logged there). Points before the x metric's first finite value have no x:
// they are not drawn, and the chart says how many ("12 points without tokens not drawn"). Non-finite x values are
// skipped: the finite value before them carries on.
//
// Points keep their step order: an x that goes down (an epoch counter that restarts, a metric that falls) draws
// the line back across the axis the way the run went, never re-sorted by x.

/** Names that usually count progress, offered first as x axes. */
const X_LIKE = /(^|[/_.\-\s])(tokens?|epochs?|samples?|examples?|steps?|iters?|iterations?|seen|flops|images|batch(es)?|updates?)($|[/_.\-\s])/i;

/**
 * The x of each point at `steps` from the x metric's points (`xSteps` ascending, `xValues`): `{x, missing}`, x
 * null where the point has none (before the x metric's first finite value), missing how many.
 */
export function joinX(steps, xSteps, xValues) {
  const fs = [];
  const fv = [];
  for (let i = 0; i < xSteps.length; i++) {
    const v = xValues[i];
    if (v !== null && Number.isFinite(v)) {
      fs.push(Number(xSteps[i]));
      fv.push(v);
    }
  }
  const x = new Array(steps.length);
  let missing = 0;
  for (let i = 0; i < steps.length; i++) {
    const j = lastAtOrBefore(fs, Number(steps[i]));
    if (j < 0) {
      x[i] = null;
      missing += 1;
    } else x[i] = fv[j];
  }
  return { x, missing };
}

/** The index of the last of ascending `sorted` ≤ `s`, -1 if none. */
function lastAtOrBefore(sorted, s) {
  let lo = 0;
  let hi = sorted.length; // answer in [lo - 1, hi - 1]
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid] <= s) lo = mid + 1;
    else hi = mid;
  }
  return lo - 1;
}

/** Whether the (non-null) x values never go down. */
export function nonDecreasing(x) {
  let last = -Infinity;
  for (const v of x) {
    if (v === null || v === undefined) continue;
    if (v < last) return false;
    last = v;
  }
  return true;
}

/**
 * A run's points as shared/aggregate.js aligns them on a metric axis: points without x left out, points sharing
 * an x value collapsed to the last of them (last wins, as for a step written twice). Null when x goes down
 * somewhere: runs cannot be aligned on an axis their points do not follow.
 */
export function alignOnX(x, values) {
  if (!nonDecreasing(x)) return null;
  const steps = [];
  const out = [];
  for (let i = 0; i < x.length; i++) {
    if (x[i] === null || x[i] === undefined) continue;
    if (steps.length && steps[steps.length - 1] === x[i]) out[out.length - 1] = values[i];
    else {
      steps.push(x[i]);
      out.push(values[i]);
    }
  }
  return { steps, values: out };
}

/**
 * The step window a zoom to [xLo, xHi] on a metric axis reads again: from the step before the first point whose x
 * lies inside to the step after the last one (an x that goes down may enter the window more than once: the window
 * covers all of them). Null when no point's x lies inside.
 */
export function stepsForX(steps, x, xLo, xHi) {
  const lo = Math.min(xLo, xHi);
  const hi = Math.max(xLo, xHi);
  let first = -1;
  let last = -1;
  for (let i = 0; i < steps.length; i++) {
    if (x[i] === null || x[i] === undefined || x[i] < lo || x[i] > hi) continue;
    if (first < 0) first = i;
    last = i;
  }
  if (first < 0) return null;
  return [Number(steps[Math.max(0, first - 1)]), Number(steps[Math.min(steps.length - 1, last + 1)])];
}

/** The words a chart shows for points it could not place: "12 points without tokens not drawn". */
export function missingNote(metric, missing) {
  if (!missing) return "";
  return `${missing} point${missing === 1 ? "" : "s"} without ${metric} not drawn (logged before its first value)`;
}

/** The metric names a menu offers as x axes: progress-like names (tokens, epoch, samples…) first, then the rest,
 *  alphabetically, at most `max`; `more` counts those left out. */
export function xCandidates(names, max = 200) {
  const unique = [...new Set(names)].filter((n) => !String(n).startsWith("tau/"));
  const like = unique.filter((n) => X_LIKE.test(n)).sort();
  const rest = unique.filter((n) => !X_LIKE.test(n)).sort();
  const all = like.concat(rest);
  return { names: all.slice(0, max), more: Math.max(0, all.length - max) };
}
