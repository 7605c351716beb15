// A histogram tag's card (docs/media.md, "The cards"): each run's distribution over steps (TensorBoard's nested
// percentile bands, or a steps × values heat map), side by side, with the cursor's step marked, and below them the
// histograms at the cursor step overlaid, one outline per run, each labelled with the step it shows.
//
// Plotly is passed in (with the `heatmap` trace registered for the heat map); the reads are passed in too.
import { h } from "../dom.js";
import { nearestStep } from "../step_cursor.js";
import { cardFrame, cardState, errorText, isSuperseded, showPanelError, stepLabel } from "./card.js";
import { cursorShapes, cursorShapesY, distributionTraces, heatmapTrace, overlayTraces } from "./histogram_traces.js";

export const VIEWS = { bands: "distribution bands", heatmap: "heat map" };
const CONFIG = { responsive: true, displaylogo: false };

/** Steps one read of the gap around the cursor asks for: all of a gap this small comes back (not `reduced`). */
export const GAP_STEPS = 8;

/**
 * The histogram of `series` (a `…/histograms` answer) at the stored step nearest `step` (the earlier on a tie):
 * { step, buckets }. When the answer holds every step of the tag (not `reduced`) it is picked from it; otherwise
 * the tag is read (`readRange(query)` → an answer) in the gap of the view around `step` (between the answer's own
 * steps on either side: stored steps of the tag, so the nearest lies between them; never to the run's end, which
 * costs as much as the whole view): one read of at most GAP_STEPS steps keeping `step`, whose answer holds the
 * nearest when it holds `step` itself or the whole gap (not `reduced`). Only a gap wider than that around an
 * unstored step takes the two bounded reads of the steps at or after `step` and at or before it.
 */
export async function histogramNear(series, step, readRange) {
  const steps = series?.steps || [];
  const local = () => {
    const at = nearestStep(steps, step);
    return at === null ? null : { step: at, buckets: series.buckets?.[steps.indexOf(at)] ?? null };
  };
  if (!series?.reduced && series?.buckets) return local();
  if (steps.includes(step) && series?.buckets) return local();
  const next = steps.find((s) => s >= step);
  const previous = steps.findLast((s) => s <= step);
  const bounds = { ...(previous === undefined ? {} : { step_min: previous }),
    ...(next === undefined ? {} : { step_max: next }) };
  const gap = await readRange({ ...bounds, max_steps: GAP_STEPS, keep: step });
  const found = gap?.steps || [];
  if (found.includes(step) || (gap && !gap.reduced && found.length)) {
    const at = nearestStep(found, step);
    return { step: at, buckets: gap.buckets?.[found.indexOf(at)] ?? null };
  }
  if (gap && !gap.reduced) return null; // the tag holds no step in the gap: none at all
  const [after, before] = await Promise.all([
    readRange({ step_min: step, ...(next === undefined ? {} : { step_max: next }), max_steps: 1 }),
    readRange({ ...(previous === undefined ? {} : { step_min: previous }), step_max: step, max_steps: 2 }),
  ]);
  const candidates = [];
  if (after?.steps?.length) candidates.push({ step: after.steps[0], buckets: after.buckets?.[0] ?? null });
  if (before?.steps?.length) {
    const i = before.steps.length - 1;
    candidates.push({ step: before.steps[i], buckets: before.buckets?.[i] ?? null });
  }
  if (!candidates.length) return null;
  candidates.sort((a, b) => Math.abs(a.step - step) - Math.abs(b.step - step) || a.step - b.step);
  return candidates[0];
}

function bandsLayout(step) {
  return { margin: { l: 56, r: 12, t: 8, b: 36 }, xaxis: { title: { text: "step" }, zeroline: false },
    yaxis: { zeroline: false, exponentformat: "e" }, showlegend: false, hovermode: "closest", height: 240,
    shapes: cursorShapes(step) };
}

function heatmapLayout(step) {
  return { margin: { l: 56, r: 12, t: 8, b: 36 }, xaxis: { title: { text: "value" } }, yaxis: { title: { text: "step" } },
    hovermode: "closest", height: 240, shapes: cursorShapesY(step) };
}

function overlayLayout(many) {
  return { margin: { l: 56, r: 12, t: 8, b: 36 }, xaxis: { title: { text: "value" }, zeroline: false },
    yaxis: { title: { text: "count" }, zeroline: false }, showlegend: many,
    legend: { orientation: "h", x: 0, y: 1.02, yanchor: "bottom" }, hovermode: "closest", height: 220 };
}

/**
 * A card for histogram tag `tag` of `runs` ([{ key, label, color, missing }]). `fetchSeries(runKey, { buckets })`
 * reads the tag over all its steps (`…/histograms?tag=`: the bands without buckets, `buckets: true` for the heat
 * map, read when it is first shown), `readRange(runKey, query)` reads it with `query`'s
 * step_min / step_max / max_steps, `onStep(step)` is told when a plot is clicked; `view` is "bands" or "heatmap".
 * `show(step)` reads each run's series once, marks `step` on it and overlays the histograms at the nearest steps;
 * `refresh(step)` reads them again (a live tag grew).
 */
export function createHistogramCard({ tag, runs, Plotly, fetchSeries, readRange, onStep = () => {}, view = "bands" }) {
  const select = h("select", { class: "media-view", "aria-label": "histogram view" },
    ...Object.entries(VIEWS).map(([value, text]) => h("option", { value, text })));
  select.value = view;
  const frame = cardFrame("histograms", tag, runs, [h("label", { class: "media-view-box" }, "view ", select)]);
  const overlay = h("div", { class: "media-overlay", "data-traces": "0" });
  const overlayNote = h("p", { class: "media-note media-overlay-note" });
  frame.el.append(h("div", { class: "media-overlay-box" }, overlayNote, overlay));
  const series = new Map(); // run key → the bands' answer, without buckets (or { error })
  const heat = new Map(); // run key → the heat map's answer, with buckets (or { error })
  const at = new Map(); // run key → { step, buckets } at the cursor
  const newest = new Map(); // run key → the panel's newest read ({ buckets, settled })
  let step = null;
  let drawnOverlay = false;
  frame.el.dataset.view = select.value;

  function plotOf(panel) {
    if (!panel.plot) {
      panel.plot = h("div", { class: "media-plot" });
      panel.body.append(panel.plot);
    }
    return panel.plot;
  }

  function drawRun(panel) {
    const heatmap = select.value === "heatmap";
    const answer = (heatmap ? heat : series).get(panel.run.key);
    if (!answer || typeof answer.then === "function" || answer.superseded) return; // not read yet
    if (answer.error) {
      showPanelError(panel, answer.error);
      return;
    }
    const plot = plotOf(panel);
    if (panel.drawn === answer && panel.drawnView === select.value && typeof Plotly.relayout === "function") {
      // The same answer in the same view, only the cursor moved: its line moved, the traces left as drawn (a full
      // redraw of the bands takes the page's main thread 50-250 ms a card).
      Plotly.relayout(plot, { shapes: panel.el.dataset.view === "heatmap" ? cursorShapesY(step) : cursorShapes(step) });
      return;
    }
    const trace = heatmap ? heatmapTrace(answer, { name: panel.run.label || "" }) : null;
    const data = trace ? [trace] : distributionTraces(answer, { color: panel.run.color, name: runs.length > 1 ? panel.run.label : "" });
    const layout = trace ? heatmapLayout(step) : bandsLayout(step);
    Plotly.react(plot, data, layout, CONFIG);
    panel.drawn = answer;
    panel.drawnView = select.value;
    panel.el.dataset.traces = String(data.length);
    panel.el.dataset.view = trace ? "heatmap" : "bands";
    panel.el.dataset.steps = String(answer.steps.length);
    if (!panel.listening && typeof plot.on === "function") {
      panel.listening = true;
      plot.on("plotly_click", (event) => {
        const point = event?.points?.[0];
        const clicked = point ? (panel.el.dataset.view === "heatmap" ? point.y : point.x) : null;
        if (Number.isFinite(Number(clicked))) onStep(Math.round(Number(clicked)));
      });
    }
  }

  function drawOverlay() {
    const shown = [];
    const notes = [];
    for (const panel of frame.panels.values()) {
      const hist = at.get(panel.run.key);
      panel.step.textContent = hist ? stepLabel(hist.step, step) : panel.step.textContent;
      if (hist) panel.el.dataset.step = String(hist.step);
      if (!hist?.buckets) continue;
      shown.push({ buckets: hist.buckets, name: runs.length > 1 ? panel.run.label || panel.run.key : "", color: panel.run.color,
        step: hist.step });
      notes.push(stepLabel(hist.step, step));
    }
    const data = overlayTraces(shown);
    overlay.dataset.traces = String(data.length);
    overlayNote.textContent = data.length ? `the histogram at the cursor: ${[...new Set(notes)].join(" · ")}` : "";
    if (!data.length && !drawnOverlay) return;
    Plotly.react(overlay, data, overlayLayout(runs.length > 1), CONFIG);
    drawnOverlay = true;
  }

  // One read of a panel's series. A read that a newer read of the same panel superseded (the pane's feed answers
  // one read per panel: the heat map picked before the bands' first answer) takes the newer read's answer (its
  // buckets serve the bands too; read again when this one wants buckets the newer has not); one superseded by a read
  // this card did not make answers { superseded }: never an error, read again on the next show.
  function read(panel, withBuckets) {
    const key = panel.run.key;
    const entry = { buckets: withBuckets, settled: null };
    newest.set(key, entry);
    entry.settled = fetchSeries(key, { buckets: withBuckets }).catch(async (err) => {
      if (!isSuperseded(err)) return { error: err };
      const newer = newest.get(key);
      if (!newer || newer === entry) return { superseded: true };
      const answer = await newer.settled;
      if (answer.error || answer.superseded || !withBuckets || newer.buckets) return answer;
      return read(panel, withBuckets).settled;
    });
    return entry;
  }

  async function load(panel, withBuckets = false) {
    const cache = withBuckets ? heat : series;
    if (!cache.has(panel.run.key)) {
      // The read in flight, then its answer: a second show waits for the same read.
      const pending = read(panel, withBuckets).settled;
      cache.set(panel.run.key, pending);
      pending.then((answer) => {
        if (cache.get(panel.run.key) !== pending) return;
        if (answer.superseded) cache.delete(panel.run.key);
        else cache.set(panel.run.key, answer);
      });
    }
    return cache.get(panel.run.key);
  }

  async function showRun(panel, wanted) {
    panel.el.dataset.state = "loading";
    const answer = await load(panel);
    if (select.value === "heatmap") await load(panel, true);
    if (answer.superseded) return; // waiting: the next show reads again
    if (answer.error) {
      showPanelError(panel, answer.error);
      return;
    }
    let hist;
    try {
      hist = await histogramNear(answer, wanted, (query) => readRange(panel.run.key, query));
    } catch (err) {
      if (wanted !== step || isSuperseded(err)) return; // a newer move's read replaces it (aborted or answered)
      showPanelError(panel, err);
      return;
    }
    if (wanted !== step) return; // the cursor moved on meanwhile
    showPanelError(panel, null);
    if (hist) at.set(panel.run.key, hist);
    else at.delete(panel.run.key);
    drawRun(panel);
    panel.el.dataset.state = "ready";
  }

  select.addEventListener("change", async () => {
    frame.el.dataset.view = select.value;
    frame.el.dataset.state = "loading";
    const shown = [...frame.panels.values()].filter((p) => !p.run.missing);
    if (select.value === "heatmap") await Promise.all(shown.map((panel) => load(panel, true)));
    for (const panel of shown) drawRun(panel);
    frame.el.dataset.state = cardState(frame.panels);
  });

  const card = {
    el: frame.el,
    panels: frame.panels,
    select,
    overlay,
    series,
    heat,
    async show(wanted) {
      step = wanted;
      frame.el.dataset.state = "loading";
      frame.el.dataset.requested = String(wanted);
      await Promise.all([...frame.panels.values()].filter((p) => !p.run.missing).map((p) => showRun(p, wanted)));
      if (wanted !== step) return;
      drawOverlay();
      frame.el.dataset.state = cardState(frame.panels);
    },
    /** The tag grew (a live run's new steps): each run's series is read again and drawn at `wanted` (by default
     *  the step shown). A card never shown only forgets what it read. */
    async refresh(wanted = step) {
      series.clear();
      heat.clear();
      frame.el.dataset.refreshed = String(Number(frame.el.dataset.refreshed || 0) + 1);
      if (wanted !== null) await card.show(wanted);
    },
    errorText,
  };
  return card;
}
