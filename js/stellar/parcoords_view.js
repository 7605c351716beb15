// The parallel-coordinates view of the listed runs (a lazily loaded chunk): one axis per hyperparameter that
// varies, one for a metric's final or best value, a line per run coloured by that value.
//
// plotly's parcoords has no click on a line, so a line links to its run in two ways: hovering a line names
// the run (and a click then opens it), and brushing ranges on the axes narrows the runs table below to the
// lines kept, each row a link.
import Plotly from "../plotly/parcoords.js";
import { runLabels } from "../shared/differing.js";
import { h } from "../shared/dom.js";
import { formatNumber, plural } from "../shared/format.js";
import { bestDirection, brushedRuns, metricValue, parallelData } from "./parallel.js";

const UNHOVER_GRACE_MS = 800;

/** Whether this browser gives pages WebGL (parcoords draws its lines with it). */
function hasWebGL() {
  try {
    return !!document.createElement("canvas").getContext("webgl");
  } catch {
    return false;
  }
}

export function createParallelView(box, { onBrush, onOpen }) {
  if (!hasWebGL()) {
    throw new Error("they are drawn with WebGL, which this browser does not offer to the page (hardware acceleration "
      + "off, or a locked-down browser); the table below still lists, filters and sorts the runs");
  }
  const which = h("select", { id: "stellar-parallel-value", "aria-label": "metric value" },
    h("option", { value: "final", text: "final value" }), h("option", { value: "best", text: "best value" }));
  const best = h("select", { id: "stellar-parallel-best", "aria-label": "best is" },
    h("option", { value: "min", text: "lowest is best" }), h("option", { value: "max", text: "highest is best" }));
  const clear = h("button", { type: "button", id: "stellar-parallel-clear", text: "Clear brushing", disabled: true });
  const note = h("p", { class: "stellar-note", id: "stellar-parallel-note" });
  const plot = h("div", { class: "stellar-parallel-plot", id: "stellar-parallel-plot" });
  const tip = h("div", { class: "stellar-parallel-tip", id: "stellar-parallel-tip", role: "tooltip", hidden: true });
  box.replaceChildren(
    h("div", { class: "stellar-controls" }, h("label", {}, "each run's", which), h("label", {}, best), clear,
      h("span", { class: "stellar-note", text: "Drag along an axis to keep a range; hover a line to name its run, click it to open the run." })),
    note, plot, tip,
  );
  const view = { data: null, input: null, hovered: null, drawn: false, bestTouched: false };

  function draw() {
    const { runs, keys, metric } = view.input;
    if (!view.bestTouched) best.value = bestDirection(metric);
    best.hidden = which.value !== "best";
    const data = parallelData(runs, keys, metric, { which: which.value, best: best.value });
    view.data = data;
    view.labels = runLabels(data.runs.map((r) => r.run_id), Object.fromEntries(data.runs.map((r) => [r.run_id, r.config])));
    const problems = [];
    if (!metric) problems.push("No metric is recorded for these runs: the view needs one to draw.");
    else if (!keys.length) problems.push("No hyperparameter varies across the listed runs (or they have no config): only the metric is drawn.");
    if (data.left.length) {
      const shown = data.left.slice(0, 5).map((l) => `${l.run_id} (${l.reason})`).join(", ");
      problems.push(`${plural(data.left.length, "run")} not drawn: ${shown}${data.left.length > 5 ? ", …" : ""}.`);
    }
    if (data.hiddenKeys) problems.push(`${plural(data.hiddenKeys, "more hyperparameter")} not drawn (${data.axes.length} axes at most).`);
    note.textContent = problems.join(" ");
    note.hidden = !problems.length;
    const metricAxis = data.axes[data.axes.length - 1];
    const trace = {
      type: "parcoords",
      labelangle: -12,
      labelside: "top",
      line: {
        color: metricAxis.values,
        colorscale: "Viridis",
        // The best runs are drawn brightest: lowest values when lower is better.
        reversescale: (which.value === "best" ? best.value : bestDirection(metric)) === "min",
        showscale: data.runs.length > 0,
        colorbar: { title: { text: metricAxis.label, side: "right" }, thickness: 12 },
      },
      dimensions: data.axes.map((axis) => {
        const d = { label: axis.label, values: axis.values, range: axis.range };
        if (axis.tickvals) Object.assign(d, { tickvals: axis.tickvals, ticktext: axis.ticktext });
        return d;
      }),
    };
    const layout = { margin: { l: 70, r: 90, t: 60, b: 24 }, height: 380 };
    // plotGlPixelRatio 1: parcoords reads the hovered line's pick pixel at CSS coordinates, so a pick buffer
    // drawn at plotly's default ratio (2) names the line under another point, or none.
    const config = { responsive: true, displaylogo: false, plotGlPixelRatio: 1 };
    (view.drawn ? Plotly.react : Plotly.newPlot)(plot, [trace], layout, config);
    if (!view.drawn) {
      plot.on("plotly_restyle", onRestyle);
      plot.on("plotly_hover", onHover);
      // A line is a pixel or two wide: the pointer slips off it easily, so its name stays a moment (and a
      // click in that moment still opens it).
      plot.on("plotly_unhover", () => {
        clearTimeout(view.unhoverTimer);
        view.unhoverTimer = setTimeout(() => {
          view.hovered = null;
          tip.hidden = true;
          delete box.dataset.hovered;
        }, UNHOVER_GRACE_MS);
      });
      plot.addEventListener("mouseleave", () => {
        clearTimeout(view.unhoverTimer);
        view.hovered = null;
        tip.hidden = true;
      });
      plot.addEventListener("click", () => {
        if (view.hovered) onOpen(view.hovered);
      });
      view.drawn = true;
    }
    clear.disabled = true;
    box.dataset.lines = String(data.runs.length);
    box.dataset.axes = String(data.axes.length);
    box.dataset.state = "ready";
  }

  function constraints() {
    // Dragging an axis sideways reorders plotly's dimensions: match them to the axes by label.
    const byLabel = new Map((plot.data?.[0]?.dimensions || []).map((d) => [d.label, d.constraintrange]));
    return view.data.axes.map((axis) => byLabel.get(axis.label));
  }

  function onRestyle() {
    if (!view.data) return;
    const kept = brushedRuns(view.data, constraints());
    clear.disabled = !kept;
    box.dataset.brushed = kept ? String(kept.size) : "";
    onBrush(kept);
  }

  function onHover(event) {
    const run = view.data?.runs[event?.curveNumber];
    if (!run) return;
    clearTimeout(view.unhoverTimer);
    view.hovered = run;
    const label = view.labels.get(run.run_id)?.label;
    const value = metricValue(run, view.input.metric, which.value, best.value);
    tip.textContent = `${run.run_id}${label && label !== run.run_id ? ` · ${label}` : ""} · ${view.input.metric} `
      + `${formatNumber(value)} — click to open`;
    const rect = box.getBoundingClientRect();
    tip.style.left = `${Math.max(0, event.clientX - rect.left + 12)}px`;
    tip.style.top = `${Math.max(0, event.clientY - rect.top + 12)}px`;
    tip.hidden = false;
    box.dataset.hovered = run.run_id;
  }

  which.addEventListener("change", draw);
  best.addEventListener("change", () => {
    view.bestTouched = true;
    draw();
  });
  // A restyle emits plotly_restyle, which onRestyle answers as it answers a drag on an axis.
  clear.addEventListener("click", () => {
    const dims = plot.data[0].dimensions;
    Plotly.restyle(plot, Object.fromEntries(dims.map((_, i) => [`dimensions[${i}].constraintrange`, null])));
  });

  return {
    update(input) {
      view.input = input;
      draw();
    },
    /** For the UI tests: brush axis `index` to [lo, hi] in its drawn units, as a drag on the axis does. */
    brush(index, range) {
      return Plotly.restyle(plot, { [`dimensions[${index}].constraintrange`]: [range] });
    },
  };
}
