// A histogram tag's plotly traces from the Portal's `…/histograms` answers (docs/media.md, "The cards"): TensorBoard's
// distribution bands over steps, the histogram at the cursor step (one trace per run), and a steps × values heat map.
//
// Pure: answers in, trace and layout objects out; the caller draws them with its own plotly (the heat map needs
// plotly's `heatmap` trace registered). An answer is `{steps, summary: [[count, min, max, p…]], basis_points,
// buckets: [[[left, right, count], …] per step] | null}`; bucket edges may be "Infinity"/"-Infinity" strings.

const SUMMARY_LEAD = 3; // count, min, max come before the percentiles in a summary row
export const HEATMAP_BINS = 64; // value bins the heat map resamples every step's buckets onto

/** A bucket edge or count as a number ("Infinity", "-Infinity", "NaN" strings included). */
export function num(value) {
  if (typeof value === "number") return value;
  if (value === "Infinity" || value === "inf") return Infinity;
  if (value === "-Infinity" || value === "-inf") return -Infinity;
  return value === null || value === undefined || value === "" ? NaN : Number(value);
}

/** "#1f77b4" (or "#17c") with `alpha` as an rgba() colour; anything else is returned unchanged. */
export function withAlpha(color, alpha) {
  let hex = String(color).trim();
  if (!/^#([0-9a-f]{3}|[0-9a-f]{6})$/i.test(hex)) return color;
  if (hex.length === 4) hex = `#${hex[1]}${hex[1]}${hex[2]}${hex[2]}${hex[3]}${hex[3]}`;
  const [r, g, b] = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
  return `rgba(${r},${g},${b},${alpha})`;
}

/**
 * The nested bands of `basisPoints` as TensorBoard's Distributions tab draws them: pairs of summary columns
 * [lowColumn, highColumn, lowBp, highBp], outermost first, each percentile paired with its mirror (bp and
 * 10000 − bp), plus the median's column (or null). Columns index a summary row (after count, min, max).
 */
export function bandPairs(basisPoints) {
  const bps = (basisPoints || []).map(Number);
  const pairs = [];
  for (let i = 0; i < bps.length; i++) {
    const lo = bps[i];
    if (lo >= 5000) continue;
    const j = bps.indexOf(10000 - lo);
    if (j > i) pairs.push([SUMMARY_LEAD + i, SUMMARY_LEAD + j, lo, 10000 - lo]);
  }
  pairs.sort((a, b) => a[2] - b[2]);
  const m = bps.indexOf(5000);
  return { pairs, median: m >= 0 ? SUMMARY_LEAD + m : null };
}

/** "p6.68" for 668 basis points, "min"/"max" for 0/10000, "median" for 5000. */
export function bpName(bp) {
  if (bp === 0) return "min";
  if (bp === 10000) return "max";
  if (bp === 5000) return "median";
  return `p${(bp / 100).toFixed(2).replace(/\.?0+$/, "")}`;
}

/**
 * The distribution bands of one run's `answer` over its steps, in `color`: for each nested pair (outermost first)
 * a lower edge and an upper edge filled to it, darker toward the median, then the median line. `name` labels the
 * run in hovers and the legend (shown once per run).
 */
export function distributionTraces(answer, { color = "#1f77b4", name = "", legendgroup = name } = {}) {
  const steps = answer?.steps || [];
  const rows = answer?.summary || [];
  const { pairs, median } = bandPairs(answer?.basis_points);
  const column = (c) => rows.map((row) => num(row[c]));
  const out = [];
  pairs.forEach(([lo, hi, loBp, hiBp], i) => {
    const alpha = (0.15 + (0.45 * (i + 1)) / pairs.length).toFixed(2);
    const common = { type: "scatter", mode: "lines", x: steps, line: { width: 0, color }, legendgroup, showlegend: false,
      hoverinfo: "skip" };
    out.push({ ...common, y: column(lo), meta: { role: "band-low", bp: loBp } });
    out.push({ ...common, y: column(hi), fill: "tonexty", fillcolor: withAlpha(color, alpha),
      name: `${name ? `${name} ` : ""}${bpName(loBp)}–${bpName(hiBp)}`, meta: { role: "band-high", bp: hiBp } });
  });
  if (median !== null) {
    out.push({ type: "scatter", mode: steps.length === 1 ? "markers" : "lines", x: steps, y: column(median),
      line: { color, width: 1.5 }, marker: { color, size: 5 }, name: name || "median", legendgroup, showlegend: Boolean(name),
      hovertemplate: `${name ? `${name}<br>` : ""}step %{x}<br>median %{y:.6g}<extra></extra>`, meta: { role: "median" } });
  }
  return out;
}

/** The buckets of `answer` at its `index`-th step as finite [left, right, count] rows (an infinite edge is
 *  closed at its finite one: the bucket drawn with no width). */
export function finiteBuckets(buckets) {
  const rows = (buckets || []).map(([l, r, c]) => [num(l), num(r), num(c)]);
  return rows.map(([l, r, c]) => {
    const left = Number.isFinite(l) ? l : r;
    const right = Number.isFinite(r) ? r : left;
    return [left, right, Number.isFinite(c) ? c : 0];
  }).filter(([l, r]) => Number.isFinite(l) && Number.isFinite(r));
}

/**
 * The histogram at one step as a stepped outline (x: bucket edges, y: count per bucket), the shape TensorBoard's
 * Histograms tab draws. `histograms` is [{ buckets, name, color, step }], one per run: one trace each.
 */
export function overlayTraces(histograms) {
  return histograms.filter((h) => h && h.buckets).map(({ buckets, name = "", color = "#1f77b4", step = null }) => {
    // A closed outline: each bucket a flat top; gaps between buckets (none in TensorBoard's) stay open.
    const outline = { x: [], y: [] };
    const rows = finiteBuckets(buckets);
    rows.forEach(([left, right, count], i) => {
      if (i === 0) { outline.x.push(left); outline.y.push(0); }
      else if (rows[i - 1][1] !== left) { outline.x.push(rows[i - 1][1], left); outline.y.push(0, 0); }
      outline.x.push(left, right);
      outline.y.push(count, count);
      if (i === rows.length - 1) { outline.x.push(right); outline.y.push(0); }
    });
    const label = `${name}${step !== null && step !== undefined ? `${name ? " " : ""}step ${step}` : ""}`;
    return { type: "scatter", mode: "lines", x: outline.x, y: outline.y, fill: "tozeroy", fillcolor: withAlpha(color, 0.2),
      line: { color, width: 1.5, shape: "linear" }, name: label || "histogram",
      hovertemplate: `${label ? `${label}<br>` : ""}%{x:.6g}: %{y:.6g}<extra></extra>`, meta: { role: "overlay", step } };
  });
}

/** `bins` + 1 equal-width edges over [lo, hi] (a single value gets a unit-wide range around it). */
export function binEdges(lo, hi, bins = HEATMAP_BINS) {
  if (!(Number.isFinite(lo) && Number.isFinite(hi))) return [];
  if (hi <= lo) {
    const pad = Math.abs(lo) > 0 ? Math.abs(lo) * 0.5 : 0.5;
    [lo, hi] = [lo - pad, hi + pad];
  }
  return Array.from({ length: bins + 1 }, (_, i) => lo + ((hi - lo) * i) / bins);
}

/** A step's buckets resampled onto `edges`: each bucket's count spread over the bins it overlaps in proportion
 *  (a zero-width bucket falls wholly into its bin). The counts' sum is kept. */
export function resample(buckets, edges) {
  const bins = Math.max(0, edges.length - 1);
  const out = new Array(bins).fill(0);
  if (!bins) return out;
  const lo = edges[0];
  const width = (edges[bins] - lo) / bins;
  const binOf = (x) => Math.min(bins - 1, Math.max(0, Math.floor((x - lo) / width)));
  for (const [left, right, count] of finiteBuckets(buckets)) {
    if (!count) continue;
    if (right <= left) {
      out[binOf(left)] += count;
      continue;
    }
    const first = binOf(left);
    const last = binOf(right);
    for (let b = first; b <= last; b++) {
      const overlap = Math.min(right, edges[b + 1]) - Math.max(left, edges[b]);
      if (overlap > 0) out[b] += (count * overlap) / (right - left);
    }
  }
  return out;
}

/**
 * The steps × values heat map of `answer` (its `buckets`, one list per step): every step resampled onto `bins`
 * common value bins over the range all steps cover, a row per step; null when the answer holds no buckets.
 */
export function heatmapTrace(answer, { bins = HEATMAP_BINS, name = "", colorscale = "Viridis" } = {}) {
  if (!answer?.buckets) return null;
  let lo = Infinity;
  let hi = -Infinity;
  for (const buckets of answer.buckets) {
    for (const [left, right] of finiteBuckets(buckets)) {
      lo = Math.min(lo, left);
      hi = Math.max(hi, right);
    }
  }
  const edges = binEdges(lo, hi, bins);
  if (!edges.length) return null;
  const x = edges.slice(0, -1).map((e, i) => (e + edges[i + 1]) / 2);
  return { type: "heatmap", x, y: answer.steps, z: answer.buckets.map((b) => resample(b, edges)), colorscale,
    name, colorbar: { title: { text: "count" }, thickness: 10 },
    hovertemplate: `${name ? `${name}<br>` : ""}step %{y}<br>value %{x:.4g}<br>count %{z:.4g}<extra></extra>`,
    meta: { role: "heatmap" } };
}

/** A vertical line at `step` across a plot (a layout shape), or none when there is no step. */
export function cursorShapes(step, color = "#444") {
  if (step === null || step === undefined) return [];
  return [{ type: "line", xref: "x", yref: "paper", x0: step, x1: step, y0: 0, y1: 1,
    line: { color, width: 1, dash: "dot" } }];
}

/** A horizontal line at `step` (the heat map's steps run up the y axis). */
export function cursorShapesY(step, color = "#fff") {
  if (step === null || step === undefined) return [];
  return [{ type: "line", xref: "paper", yref: "y", x0: 0, x1: 1, y0: step, y1: step, line: { color, width: 1, dash: "dot" } }];
}
