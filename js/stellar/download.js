// The run page's download control: a metric of a run as CSV or JSON, every stored point or the visible window.
import { h } from "../shared/dom.js";
import { id, portalUrl } from "../shared/urls.js";
import { suggestMetrics } from "./metric_suggestions.js";
import { root, runRef, state } from "./page.js";

/** The export's URL (the local Portal's /stellar/data/export/{run_id}); `range` [start, end] steps or null. */
export function exportUrl(runId, metric, format, range) {
  const query = { metric, format, project: runRef(runId).project, source: state.source };
  if (range) Object.assign(query, { start_step: range[0], end_step: range[1] });
  return portalUrl(root, ["stellar", "data", "export", id(runRef(runId).runId)], query);
}

/** The control: metric, format, window, and one link per run; the page's cookie carries the token. The metric
 *  is a text box with a datalist of the first matches of what is typed (not one option per metric). */
export function downloadControl(runIds, metricNames) {
  if (!runIds.length || !metricNames.length) return null;
  const known = new Set(metricNames);
  const suggestions = h("datalist", { id: "stellar-download-metrics" });
  const metric = h("input", {
    id: "stellar-download-metric", type: "text", value: metricNames[0], autocomplete: "off", spellcheck: false,
    placeholder: "metric name", size: 32,
  });
  metric.setAttribute("list", suggestions.id); // `list` is a read-only property: only the attribute sets it
  const suggest = () => {
    // Typing a known name whole offers everything again (a datalist filters by the box's text itself).
    const text = known.has(metric.value) ? "" : metric.value;
    suggestions.replaceChildren(...suggestMetrics(metricNames, text).map((name) => h("option", { value: name })));
  };
  metric.addEventListener("input", suggest);
  suggest();
  const format = h("select", { id: "stellar-download-format" });
  format.append(h("option", { value: "csv", text: "CSV" }), h("option", { value: "json", text: "JSON" }));
  const visible = h("input", { type: "checkbox", id: "stellar-download-visible" });
  const links = runIds.map((runId) => {
    const link = h("a", { class: "stellar-download", "data-run": runId, text: runIds.length > 1 ? `download ${runId}` : "download" });
    // The href is made at the click, so it holds the chart's zoom of that moment.
    const update = () => {
      if (!known.has(metric.value)) {  // nothing to save: say why instead of a link to an error
        link.removeAttribute("href");
        link.setAttribute("aria-disabled", "true");
        link.title = `the run has no metric named "${metric.value}"`;
        return;
      }
      link.removeAttribute("aria-disabled");
      link.title = "";
      const series = state.charts[metric.value]?.series?.[runId];
      const range = visible.checked && series?.range ? series.range : null;
      link.href = exportUrl(runId, metric.value, format.value, range).href;
      link.download = `${runId}-${metric.value.replaceAll("/", "_")}.${format.value}`;
    };
    metric.addEventListener("input", update);
    link.addEventListener("click", update);
    link.addEventListener("mouseenter", update);
    update();
    return link;
  });
  return h(
    "div",
    { class: "stellar-controls", id: "stellar-download" },
    h("label", {}, "Download", metric, suggestions),
    h("label", {}, "as", format),
    h("label", { title: "only the steps the chart shows now (after a zoom); otherwise every stored point" }, visible, "visible window"),
    ...links,
  );
}
