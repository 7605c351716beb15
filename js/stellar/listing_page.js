// The runs listing (/stellar/runs): every run of the workspace with its metrics' counts, and a way to open
// one or compare several.
import { h } from "../shared/dom.js";
import { formatNumber, formatTime, plural } from "../shared/format.js";
import { id, stellarUrl } from "../shared/urls.js";
import { api, explain, pageData } from "./api.js";
import { errorBox, showError } from "./notices.js";
import { main, root, state } from "./page.js";
import { metricOrder } from "./series.js";

async function allRuns() {
  // v2 lists runs per experiment; the page data names the experiments of this workspace.
  const listing = await pageData(["experiments"], { project: state.project });
  const runs = [];
  for (const experiment of listing.experiments || []) {
    const experimentId = experiment.experiment_id;
    if (!experimentId) continue;
    let cursor = null;
    for (let page = 0; page < 50; page++) {
      const body = await api(["experiments", id(experimentId), "runs"], { limit: 200, cursor, project: experiment.project });
      runs.push(...(body.runs || []));
      cursor = body.next_cursor;
      if (!cursor) break;
    }
  }
  const seen = new Set();
  return runs
    .filter((run) => !seen.has(run.run_id) && seen.add(run.run_id))
    .sort((a, b) => String(b.created_at || "").localeCompare(String(a.created_at || "")));
}

export async function listingPage() {
  const box = errorBox();
  let runs;
  try {
    runs = await allRuns();
  } catch (err) {
    showError(explain(err, "The runs could not be listed"), err, box);
    main.append(h("p", { class: "stellar-note", text: "A run can still be opened directly at stellar?target=<run_id>&project=<project>." }));
    document.getElementById("stellar-loading")?.remove();
    state.ready = true;
    main.dataset.state = "error";
    return;
  }
  const compare = h("button", { type: "button", id: "stellar-compare", text: "Compare selected runs", disabled: true });
  const selected = new Set();
  compare.addEventListener("click", () => {
    const picked = runs.filter((r) => selected.has(r.run_id));
    const projects = new Set(picked.map((r) => r.project));
    window.location.href = stellarUrl(root, picked.map((r) => r.run_id), projects.size === 1 ? [...projects][0] : null, undefined, state.source).href;
  });
  const table = h("table", { class: "stellar-table", id: "stellar-run-table" });
  table.append(
    h(
      "thead",
      {},
      h("tr", {}, ...["", "Run / metric", "State", "Points", "Finite", "Non-finite", "Steps", "Min", "Max", "Latest"].map((label) => h("th", { text: label }))),
    ),
  );
  const tbody = h("tbody");
  table.append(tbody);
  main.append(h("div", { class: "stellar-controls" }, compare, h("span", { class: "stellar-note", text: `${plural(runs.length, "run")}` })), table);
  if (!runs.length) main.append(h("p", { class: "stellar-note", id: "stellar-no-runs", text: "No runs in this workspace yet." }));
  state.runs = {};
  const rows = runs.map((run) => {
    const check = h("input", { type: "checkbox", title: `select ${run.run_id} for comparison` });
    check.addEventListener("change", () => {
      if (check.checked) selected.add(run.run_id);
      else selected.delete(run.run_id);
      compare.disabled = selected.size < 1;
      compare.textContent = selected.size > 1 ? `Compare ${selected.size} runs` : "Open selected run";
    });
    const link = h("a", { href: stellarUrl(root, [run.run_id], run.project, undefined, state.source).href, text: run.run_id });
    const where = [run.project, run.experiment_id, run.run_group_id].filter(Boolean).join(" / ");
    const tr = h(
      "tr",
      { class: "stellar-run-row", "data-run-id": run.run_id, "data-state": run.state || "" },
      h("td", {}, check),
      h("td", {}, link, h("div", { class: "stellar-note", text: `${where}${run.created_at ? ` · created ${formatTime(run.created_at)}` : ""}` })),
      h("td", {}, h("span", { class: "stellar-state", "data-state": run.state || "", text: run.state || "unknown" })),
      h("td", { colSpan: 7 }),
    );
    tbody.append(tr);
    state.runs[run.run_id] = { run, metrics: null };
    return tr;
  });
  document.getElementById("stellar-loading")?.remove();
  // A handful of metric reads at a time keeps a long listing from flooding the Portal.
  let next = 0;
  const worker = async () => {
    while (next < runs.length) {
      const i = next++;
      await listMetrics(runs[i], rows[i]);
    }
  };
  await Promise.all(Array.from({ length: 6 }, worker));
  state.ready = true;
  main.dataset.state = "ready";
}

async function listMetrics(run, row) {
  let body;
  try {
    body = await api(["runs", id(run.run_id), "metrics"], { project: run.project });
  } catch (err) {
    row.lastChild.append(h("span", { class: "stellar-error", text: explain(err, "metrics could not be loaded") }));
    return;
  }
  const metrics = (body.metrics || []).slice().sort((a, b) => metricOrder(a.name, b.name));
  state.runs[run.run_id].metrics = metrics;
  if (!metrics.length) row.lastChild.textContent = "no metrics yet";
  let after = row;
  for (const m of metrics) {
    const steps = m.min_step !== undefined ? `${formatNumber(m.min_step)}–${formatNumber(m.max_step)}` : "–";
    const latest = m.latest_value !== undefined ? `${formatNumber(m.latest_value)} @ ${formatNumber(m.latest_step)}` : m.latest_step !== undefined ? `– @ ${formatNumber(m.latest_step)}` : "–";
    const nonFinite = Number(m.non_finite_count || 0);
    const tr = h(
      "tr",
      { class: "stellar-metric-row", "data-run-id": run.run_id, "data-metric": m.name, "data-non-finite": String(nonFinite) },
      h("td"),
      h("td", { text: m.name }),
      h("td"),
      h("td", { class: "num", text: formatNumber(m.count) }),
      h("td", { class: "num", text: formatNumber(m.finite_count) }),
      h("td", { class: `num${nonFinite ? " bad" : ""}`, text: formatNumber(nonFinite) }),
      h("td", { class: "num", text: steps }),
      h("td", { class: "num", text: formatNumber(m.min_value) }),
      h("td", { class: "num", text: formatNumber(m.max_value) }),
      h("td", { class: "num", text: latest }),
    );
    after.after(tr);
    after = tr;
  }
}
