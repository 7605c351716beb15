// The run page's download control: a metric of a run as CSV or JSON, every stored point or the visible window.
import { h } from "../shared/dom.js";
import { id, portalUrl } from "../shared/urls.js";
import { root, state } from "./page.js";

/** The export's URL (the local Portal's /stellar/data/export/{run_id}); `range` [start, end] steps or null. */
export function exportUrl(runId, metric, format, range) {
  const query = { metric, format, project: state.project, source: state.source };
  if (range) Object.assign(query, { start_step: range[0], end_step: range[1] });
  return portalUrl(root, ["stellar", "data", "export", id(runId)], query);
}

/** The control: metric, format, window, and one link per run; the page's cookie carries the token. */
export function downloadControl(runIds, metricNames) {
  if (!runIds.length || !metricNames.length) return null;
  const metric = h("select", { id: "stellar-download-metric" });
  for (const name of metricNames) metric.append(h("option", { value: name, text: name }));
  const format = h("select", { id: "stellar-download-format" });
  format.append(h("option", { value: "csv", text: "CSV" }), h("option", { value: "json", text: "JSON" }));
  const visible = h("input", { type: "checkbox", id: "stellar-download-visible" });
  const links = runIds.map((runId) => {
    const link = h("a", { class: "stellar-download", "data-run": runId, text: runIds.length > 1 ? `download ${runId}` : "download" });
    // The href is made at the click, so it holds the chart's zoom of that moment.
    const update = () => {
      const series = state.charts[metric.value]?.series?.[runId];
      const range = visible.checked && series?.range ? series.range : null;
      link.href = exportUrl(runId, metric.value, format.value, range).href;
      link.download = `${runId}-${metric.value.replaceAll("/", "_")}.${format.value}`;
    };
    link.addEventListener("click", update);
    link.addEventListener("mouseenter", update);
    update();
    return link;
  });
  return h(
    "div",
    { class: "stellar-controls", id: "stellar-download" },
    h("label", {}, "Download", metric),
    h("label", {}, "as", format),
    h("label", { title: "only the steps the chart shows now (after a zoom); otherwise every stored point" }, visible, "visible window"),
    ...links,
  );
}
