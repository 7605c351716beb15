// The compare page's parameter importance: for a chosen metric and reduction (final, best, latest), each
// hyperparameter's random-forest importance and correlation with the metric's value over the runs of the
// compared runs' experiments, computed by the Portal (GET api/v2/stellar/parameter-importance;
// docs/comparing-runs.md says how).
import { h } from "../shared/dom.js";
import { api, explain } from "./api.js";
import { writeView } from "./address.js";
import { runRef, state } from "./page.js";

function fixed(value) {
  return value === null || value === undefined ? "–" : value.toFixed(3);
}

function table(body) {
  const rows = body.parameters.map((p) => h("tr", { "data-parameter": p.name },
    h("td", { text: p.name }),
    h("td", {}, h("span", { class: "stellar-importance-bar", style: `width:${Math.round(p.importance * 100)}px` }),
      h("span", { text: ` ${fixed(p.importance)}` })),
    h("td", { text: fixed(p.correlation) + (p.correlation_value ? ` (= ${p.correlation_value})` : ""),
      title: p.spearman !== null ? `Spearman ${fixed(p.spearman)}` : "" }),
    h("td", { text: String(p.runs) })));
  return h("table", { class: "stellar-importance-table", id: "stellar-importance-table" },
    h("thead", {}, h("tr", {}, ...["parameter", "importance", "correlation", "runs"].map((t) => h("th", { text: t })))),
    h("tbody", {}, ...rows));
}

/** The panel, or null when the compared runs belong to no experiment. `metrics`: the metric names offered. */
export function importancePanel(runIds, metrics) {
  const experiments = [...new Set(runIds.map((key) => state.runs[key]?.run?.experiment_id).filter(Boolean))];
  // An offline export carries no scores (it answers only the reads it recorded): no panel there.
  if (!experiments.length || !metrics.length || state.offline) return null;
  const projects = [...new Set(runIds.map((key) => state.runs[key]?.run?.project).filter(Boolean))];
  const metric = h("select", { id: "stellar-importance-metric" });
  for (const name of metrics) metric.append(h("option", { value: name, text: name }));
  const reduction = h("select", { id: "stellar-importance-reduction" });
  for (const [value, text] of [["final", "final"], ["best", "best"], ["latest", "latest"]]) {
    reduction.append(h("option", { value, text }));
  }
  const out = h("div", { id: "stellar-importance-result" });
  const panel = h("section", { class: "stellar-importance", id: "stellar-importance" },
    h("h2", { text: "Parameter importance" }),
    h("div", { class: "stellar-controls" }, h("label", {}, "metric", metric), h("label", {}, "value", reduction),
      h("span", { class: "stellar-note", text: `over the runs of ${experiments.join(", ")}` })),
    out);
  const initial = state.importance || {};
  if (initial.metric && metrics.includes(initial.metric)) metric.value = initial.metric;
  if (initial.reduction) reduction.value = initial.reduction;
  let generation = 0;
  async function load() {
    const mine = ++generation;
    state.importance = { metric: metric.value, reduction: reduction.value };
    panel.dataset.state = "loading";
    const query = { metric: metric.value, reduction: reduction.value, experiment_id: experiments };
    // One project: the Portal reads that project's runs only (several: every project's runs of the experiments).
    if (projects.length === 1) query.project = projects[0];
    else if (state.project && !runIds.some((key) => runRef(key).project !== state.project)) query.project = state.project;
    try {
      const body = await api(["parameter-importance"], query);
      if (mine !== generation) return;
      const reasons = body.metadata?.availability?.state === "unavailable" ? body.metadata.availability.reasons || [] : [];
      const said = [...(body.metadata?.warnings || []), ...reasons.filter((r) => !(body.metadata?.warnings || []).includes(r))];
      out.replaceChildren(
        h("p", { class: "stellar-note", text: `${body.valued_run_count} of ${body.run_count} runs have a ${body.reduction} value` +
          (body.reduction === "best" ? ` (${body.goal}imum)` : "") + "." }),
        ...said.map((text) => h("p", { class: "stellar-note stellar-importance-reason", text })),
        body.parameters.length ? table(body) : "");
      panel.dataset.state = "ready";
    } catch (err) {
      if (mine !== generation) return;
      out.replaceChildren(h("p", { class: "stellar-error", text: explain(err, "Parameter importance could not be computed") }));
      panel.dataset.state = "error";
    }
  }
  // The chosen metric and value are part of the page's view (its address: importance=, reduction=).
  const chosen = () => {
    load();
    writeView();
  };
  metric.addEventListener("change", chosen);
  reduction.addEventListener("change", chosen);
  panel.load = load;
  return panel;
}
