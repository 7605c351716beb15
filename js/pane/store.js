// The pane's point store: what one pane model holds in the page, the series Python sent, applied in order and
// shared by all views of the model.
//
// The message shape is written down in taunotebook/pane.py: a header {type:"points", seq, op, run, metric, n,
// start_step, end_step, sent_at} and two buffers, n × int64 steps and n × float64 values (little-endian).

const stores = new WeakMap();

export function seriesKey(run, metric) {
  return `${run}\u0000${metric}`;
}

export function newSeries(run, metric) {
  // version changes whenever held points change other than by a plain append (views then redraw fully);
  // marksVersion when the non-finite marks change (views restyle the marks trace alone) and wallVersion when
  // wall times arrive (only a wall-time axis redraws): neither costs a full redraw of the lines.
  return { run, metric, steps: [], values: [], version: 0, marksVersion: 0, wallVersion: 0,
           nonFinite: { steps: [], values: [] }, wall: { steps: [], wall: [] }, pendingMarks: [] };
}

function readSteps(view, n) {
  const out = new Array(n);
  for (let i = 0; i < n; i++) out[i] = Number(view.getBigInt64(i * 8, true));
  return out;
}

function readValues(view, n) {
  const out = new Array(n);
  for (let i = 0; i < n; i++) out[i] = view.getFloat64(i * 8, true);
  return out;
}

function asDataView(buf) {
  if (buf instanceof DataView) return buf;
  if (buf instanceof ArrayBuffer) return new DataView(buf);
  return new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
}

/** Apply one points message to a series; returns what changed ("append" keeps earlier points as drawn). */
export function applyPoints(series, msg, steps, values) {
  switch (msg.op) {
    case "reset":
      series.steps = steps;
      series.values = values;
      series.version += 1;
      return "full";
    case "append": {
      if (!steps.length) return "none";
      let cut = series.steps.length;
      while (cut > 0 && series.steps[cut - 1] >= steps[0]) cut--;
      const full = cut < series.steps.length;
      series.steps.length = cut;
      series.values.length = cut;
      for (let i = 0; i < steps.length; i++) {
        series.steps.push(steps[i]);
        series.values.push(values[i]);
      }
      if (full) series.version += 1; // a step was rewritten (last wins): drawn points changed
      return full ? "full" : "append";
    }
    case "range": {
      // A missing bound is open: the range reaches that end of the series.
      const start = msg.start_step ?? -Infinity, end = msg.end_step ?? Infinity;
      const lo = [], loV = [], hi = [], hiV = [];
      for (let i = 0; i < series.steps.length; i++) {
        const s = series.steps[i];
        if (s < start) { lo.push(s); loV.push(series.values[i]); }
        else if (s > end) { hi.push(s); hiV.push(series.values[i]); }
      }
      series.steps = lo.concat(steps, hi);
      series.values = loV.concat(values, hiV);
      series.version += 1;
      return "full";
    }
    case "nonfinite":
      series.nonFinite = { steps, values };
      series.marksVersion += 1;
      return "marks";
    case "walltime": {
      const merged = new Map();
      series.wall.steps.forEach((s, i) => merged.set(s, series.wall.wall[i]));
      steps.forEach((s, i) => merged.set(s, values[i]));
      const keys = [...merged.keys()].sort((a, b) => a - b);
      series.wall = { steps: keys, wall: keys.map((k) => merged.get(k)) };
      series.wallVersion += 1;
      return "wall";
    }
    default:
      return "none";
  }
}

/** The per-model store; created once (anywidget's initialize) so no message is lost before a view renders. */
export function storeFor(model) {
  let store = stores.get(model);
  if (store) return store;
  store = { series: new Map(), listeners: new Set(), lastSeq: 0, gaps: 0, received: 0 };
  stores.set(model, store);
  model.on("msg:custom", (msg, buffers) => {
    if (!msg || msg.type !== "points") return;
    const receivedAt = performance.timeOrigin + performance.now();
    if (store.lastSeq && msg.seq !== store.lastSeq + 1) store.gaps += 1;
    store.lastSeq = msg.seq;
    store.received += 1;
    const n = msg.n | 0;
    const steps = readSteps(asDataView(buffers[0]), n);
    const values = readValues(asDataView(buffers[1]), n);
    const key = seriesKey(msg.run, msg.metric);
    let series = store.series.get(key);
    if (!series) {
      series = newSeries(msg.run, msg.metric);
      store.series.set(key, series);
    }
    const change = applyPoints(series, msg, steps, values);
    if ((change === "append" || msg.op === "reset") && steps.length) {
      // Latency marks (the views add when they drew them): appends for write → drawn, resets for the first draw.
      series.pendingMarks.push({ op: msg.op, run: msg.run, metric: msg.metric, seq: msg.seq, first_step: steps[0],
        last_step: steps[steps.length - 1], n: steps.length, sent_at: msg.sent_at, received_at: receivedAt });
    }
    for (const listener of store.listeners) listener(series, change);
  });
  return store;
}

/** Drop what the page holds of a metric no view shows any more (the kernel forgets it too, and sends a fresh
 *  reset when it is shown again). */
export function forgetMetric(store, metric) {
  for (const [key, series] of store.series) if (series.metric === metric) store.series.delete(key);
}

export function totalPoints(store) {
  let n = 0;
  for (const s of store.series.values()) n += s.steps.length;
  return n;
}
