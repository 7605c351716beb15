// TensorBoard's smoothing (a debiased exponential moving average), one implementation for the pane and the
// Stellar pages: the same series and weight give the same curve in both, bit for bit.
//
// As TensorBoard does: non-finite values pass through without touching the average, a series whose values
// are all equal is drawn as is, and a weight of 1 skips the debiasing. The incremental form (a smoother fed
// chunk by chunk, as the pane receives points) gives exactly what smoothing the whole series at once gives.

/** The slider's range and step in both places (TensorBoard's). */
export const SMOOTHING_MAX = 0.999;
export const SMOOTHING_STEP = 0.001;

/** A smoother for one series; feed it with smoothInto, values in step order. */
export function createSmoother(weight) {
  if (!(weight >= 0 && weight <= 1)) throw new RangeError(`smoothing weight must be within [0, 1], got ${weight}`);
  return { weight, last: 0, count: 0, seen: 0, first: undefined, constant: true };
}

/**
 * Appends the smoothed `values` to `out`, continuing from `state`. Returns false when these values end a
 * constant series: the points smoothed before them then change too, and the caller smooths the whole series
 * again with a new smoother.
 */
export function smoothInto(state, values, out) {
  let restart = false;
  if (state.constant) {
    // A series is constant only if all its values are: decide for this chunk before smoothing it.
    for (let i = 0; i < values.length; i++) {
      if (state.seen === 0 && i === 0) state.first = values[0];
      else if (values[i] !== state.first) {
        state.constant = false;
        restart = state.seen > 0;
        break;
      }
    }
  }
  const w = state.weight;
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (state.constant || !Number.isFinite(v)) {
      out.push(v);
      continue;
    }
    state.last = state.last * w + (1 - w) * v;
    state.count += 1;
    out.push(state.last / (w === 1 ? 1 : 1 - Math.pow(w, state.count)));
  }
  state.seen += values.length;
  return !restart;
}

/** The whole series smoothed at once. */
export function smooth(values, weight) {
  const out = [];
  smoothInto(createSmoother(weight), values, out);
  return out;
}
