// Wall time at any step, from the (step, wall time) samples a Portal sends: linear between samples, the
// first or last sample's time outside them.

// JavaScript dates reach ±8.64e15 ms (year 275,760); int64 microseconds reach year ~294,247.
const MAX_DATE_MS = 8.64e15;

/** A wall time in µs as a Date, or null past what a Date holds (the point is left off a wall-time axis, not
 * drawn at an Invalid Date). */
export function wallDate(us) {
  const ms = us / 1000;
  return Number.isFinite(ms) && Math.abs(ms) <= MAX_DATE_MS ? new Date(ms) : null;
}

/** ys interpolated at each of `at`, where (xs, ys) are samples sorted by x; an empty array without samples. */
export function interpolate(at, xs, ys) {
  if (!xs.length) return [];
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

/** The step range [lo, hi] whose wall times cover [fromMs, toMs], from samples (steps, wall ms); null without any. */
export function stepsBetween(steps, wallMs, fromMs, toMs) {
  if (!steps.length) return null;
  let lo = steps[0];
  let hi = steps[steps.length - 1];
  for (let i = 0; i < steps.length; i++) {
    if (wallMs[i] <= fromMs) lo = steps[i];
    if (wallMs[i] >= toMs) {
      hi = steps[i];
      break;
    }
  }
  return [lo, Math.max(lo, hi)];
}
