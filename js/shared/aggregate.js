// Runs drawn as one line with a band: the seeds of one configuration as W&B's grouped lines draw them. One
// implementation for the pane and the compare page.
//
// The alignment rule (docs/comparing-runs.md): the aggregate is computed at every step any run has (the union
// of their steps). At a step a run has, its own value counts; at a step it lacks but lies strictly between two
// of its finite points, its value there is interpolated linearly between those two; outside its first and
// last finite point it does not count, so the band holds only the runs that reached that step and says how
// many did. Runs logged at the same steps are therefore aggregated exactly, point for point.
//
// Non-finite values never poison a band: they count for nobody's mean, min, max, std or median, are never
// interpolated across as if they were values (a run's neighbours around one are its finite points), and are
// counted per run so the legend can say how many were left out.

/** The centres a band can be drawn around, and the spreads it can show. */
export const CENTERS = ["mean", "median"];
export const SPREADS = ["minmax", "std", "none"];

/**
 * The aggregate of `runs` (each `{id, steps, values}`, steps ascending, one value a step) as
 * `{steps, center, lower, upper, count, runIds, nonFinite}`: per union step the centre (mean or median) of
 * the runs that count there, the band's lower and upper edge (min/max, centre ± one population standard
 * deviation, or the centre itself), and how many runs count; `nonFinite` maps a run id to how many of its
 * values were left out.
 */
export function aggregateRuns(runs, { center = "mean", spread = "minmax" } = {}) {
  if (!CENTERS.includes(center)) throw new RangeError(`center must be one of ${CENTERS.join(", ")}, got ${center}`);
  if (!SPREADS.includes(spread)) throw new RangeError(`spread must be one of ${SPREADS.join(", ")}, got ${spread}`);
  const finite = runs.map(finitePoints);
  const steps = unionSteps(finite.map((f) => f.steps));
  const n = steps.length;
  const out = {
    steps,
    center: new Array(n),
    lower: new Array(n),
    upper: new Array(n),
    count: new Array(n),
    runIds: runs.map((r) => r.id),
    nonFinite: Object.fromEntries(runs.map((r, i) => [r.id, finite[i].dropped])),
  };
  const cursors = finite.map(() => 0);
  const at = new Array(runs.length);
  for (let k = 0; k < n; k++) {
    const step = steps[k];
    let m = 0;
    for (let r = 0; r < finite.length; r++) {
      const v = valueAt(finite[r], step, cursors, r);
      if (v !== undefined) at[m++] = v;
    }
    out.count[k] = m;
    if (m === 0) {
      out.center[k] = out.lower[k] = out.upper[k] = NaN;
      continue;
    }
    const values = at.slice(0, m);
    const c = center === "mean" ? mean(values) : median(values);
    out.center[k] = c;
    if (spread === "minmax") {
      out.lower[k] = Math.min(...values);
      out.upper[k] = Math.max(...values);
    } else if (spread === "std") {
      const sd = std(values);
      out.lower[k] = c - sd;
      out.upper[k] = c + sd;
    } else {
      out.lower[k] = out.upper[k] = c;
    }
  }
  return out;
}

/** A run's finite points, and how many values it had that were not. */
function finitePoints(run) {
  const steps = [];
  const values = [];
  let dropped = 0;
  for (let i = 0; i < run.steps.length; i++) {
    const v = run.values[i];
    if (Number.isFinite(v)) {
      steps.push(Number(run.steps[i]));
      values.push(v);
    } else dropped++;
  }
  return { steps, values, dropped };
}

/** The sorted union of ascending step lists. */
function unionSteps(lists) {
  const all = new Set();
  for (const list of lists) for (const s of list) all.add(s);
  return Float64Array.from(all).sort();
}

/**
 * Run r's value at `step` by the alignment rule, or undefined where it does not count. Steps are visited in
 * ascending order, so a cursor per run makes the whole aggregation linear in the points.
 */
function valueAt(run, step, cursors, r) {
  const { steps, values } = run;
  let i = cursors[r];
  while (i < steps.length && steps[i] < step) i++;
  cursors[r] = i;
  if (i < steps.length && steps[i] === step) return values[i];
  if (i === 0 || i >= steps.length) return undefined;
  const s0 = steps[i - 1];
  const s1 = steps[i];
  return values[i - 1] + ((values[i] - values[i - 1]) * (step - s0)) / (s1 - s0);
}

function mean(values) {
  let sum = 0;
  for (const v of values) sum += v;
  return sum / values.length;
}

function median(values) {
  const sorted = Float64Array.from(values).sort();
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** The population standard deviation (of the runs drawn, not an estimate of a larger population's). */
function std(values) {
  const m = mean(values);
  let sq = 0;
  for (const v of values) sq += (v - m) * (v - m);
  return Math.sqrt(sq / values.length);
}

/** The legend's words for a band: what it holds and what it left out. */
export function bandLabel(name, agg, { center = "mean", spread = "minmax" } = {}) {
  const runs = agg.runIds.length;
  const spreadText = spread === "minmax" ? ", min–max" : spread === "std" ? ", ±1 std" : "";
  const left = Object.values(agg.nonFinite).reduce((a, b) => a + b, 0);
  const nonFinite = left ? `, ${left} non-finite left out` : "";
  return `${name} (${center} of ${runs} run${runs === 1 ? "" : "s"}${spreadText}${nonFinite})`;
}
