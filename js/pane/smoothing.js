// TensorBoard's debiased exponential moving average, incremental so appended points extend the smoothed trace.

/** A smoother state: feed values in step order; `value` is the debiased EMA after each finite input. */
export function createSmoother(weight) {
  return { weight, last: 0, count: 0 };
}

/** Smooth `values` (appending to `out`), continuing from `state`; non-finite inputs pass through unsmoothed. */
export function smoothInto(state, values, out) {
  const w = state.weight;
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (!Number.isFinite(v)) {
      out.push(v);
      continue;
    }
    state.last = state.last * w + (1 - w) * v;
    state.count += 1;
    const debias = w === 0 ? 1 : 1 - Math.pow(w, state.count);
    out.push(state.last / debias);
  }
  return out;
}

/** The whole smoothed series at once. */
export function smooth(values, weight) {
  return smoothInto(createSmoother(weight), values, []);
}
