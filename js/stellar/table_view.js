// The runs table's DOM: a sticky header whose cells sort, and a body that draws only the rows in view (plus
// a margin) between two spacers, so a thousand runs scroll as smoothly as ten.
import { h } from "../shared/dom.js";
import { valueText } from "../shared/differing.js";
import { formatNumber, formatTime } from "../shared/format.js";
import { stellarUrl } from "../shared/urls.js";
import { root, state } from "./page.js";
import { cellValue, configColumn, FIXED_COLUMNS, metricColumn, visibleWindow } from "./runs_table.js";

export const ROW_HEIGHT = 30; // px; every row (group headers too) has it, which makes the window maths exact
const OVERSCAN = 12;

/** The columns shown: fixed ones, the run's tags, the metric's statistics, then config columns (varying, then constant if shown). */
export function columnsFor({ metric, varying, constant, showConstant, nonFinite }) {
  const columns = FIXED_COLUMNS.map((c) => ({ ...c, kind: "fixed" }));
  columns.push({ key: "tags", label: "Tags", kind: "tags" });
  if (metric) {
    columns.push({ key: metricColumn("latest"), label: `${metric} latest`, kind: "metric" });
    columns.push({ key: metricColumn("min"), label: "min", kind: "metric" });
    columns.push({ key: metricColumn("max"), label: "max", kind: "metric" });
    if (nonFinite) columns.push({ key: "non_finite", label: "non-finite", kind: "count" });
  }
  for (const key of varying) columns.push({ key: configColumn(key), label: key, kind: "config" });
  if (showConstant) for (const key of constant) columns.push({ key: configColumn(key), label: key, kind: "config", constant: true });
  return columns;
}

function cell(run, column, metric) {
  if (column.key === "run_id") {
    const link = h("a", { href: stellarUrl(root, [run.run_id], run.project, undefined, state.source).href, text: run.run_id, title: run.run_id });
    return h("td", { class: "stellar-run-cell" }, link);
  }
  if (column.key === "state") {
    return h("td", {}, h("span", { class: "stellar-state", "data-state": run.state || "", text: run.state || "unknown" }));
  }
  if (column.key === "created_at") return h("td", { text: run.created_at ? formatTime(run.created_at) : "–", title: run.created_at || "" });
  if (column.key === "non_finite") {
    const n = Number(run.metrics?.[metric]?.non_finite_count || 0);
    return h("td", { class: `num${n ? " bad" : ""}`, text: n ? formatNumber(n) : "" });
  }
  const value = cellValue(run, column.key, metric);
  if (column.kind === "tags") return h("td", { class: "stellar-tags-cell", text: value ?? "", title: value ?? "" });
  if (column.kind === "metric") {
    const stats = run.metrics?.[metric];
    const title = column.key.endsWith("latest") && stats?.latest_step !== undefined ? `at step ${formatNumber(stats.latest_step)}` : "";
    return h("td", { class: "num", text: value === undefined ? "–" : formatNumber(value), title });
  }
  if (column.kind === "config") {
    const text = value === undefined ? "–" : valueText(value);
    return h("td", { class: typeof value === "number" ? "num" : "", text, title: text });
  }
  return h("td", { text: value === undefined ? "–" : String(value), title: value === undefined ? "" : String(value) });
}

/**
 * A virtualised table in `container`. `view.update({rows, columns, metric, sort, selected})` redraws it;
 * `onSort(columnKey)`, `onSelect(runId, checked)`, `onToggleGroup(key)` and `onSelectAll(checked)` report
 * what the user did, `onWindow(start, end)` which rows it drew (a server-side view loads their windows;
 * a `{type: "pending"}` row holds the place of a run not loaded yet). `stats` counts rows drawn (the UI
 * tests read it).
 */
export function createTableView(container, { onSort, onSelect, onToggleGroup, onSelectAll, onWindow }) {
  const scroller = h("div", { class: "stellar-table-scroll", id: "stellar-table-scroll", tabindex: "0" });
  const table = h("table", { class: "stellar-table", id: "stellar-run-table" });
  const thead = h("thead");
  const tbody = h("tbody");
  table.append(thead, tbody);
  scroller.append(table);
  container.append(scroller);
  const view = { rows: [], columns: [], metric: null, sort: null, selected: new Set(), stats: { renders: 0, drawnRows: 0 } };
  let headerKey = "";
  let frame = 0;

  function header() {
    const key = JSON.stringify([view.columns.map((c) => c.key + c.label), view.sort, view.allSelected]);
    if (key === headerKey) return;
    headerKey = key;
    const all = h("input", { type: "checkbox", id: "stellar-select-all", title: "select every listed run",
      "aria-label": "select every listed run" });
    all.checked = !!view.allSelected;
    all.addEventListener("change", () => onSelectAll(all.checked));
    const cells = [h("th", { class: "stellar-check" }, all)];
    for (const column of view.columns) {
      const sorted = view.sort?.column === column.key;
      const arrow = sorted ? (view.sort.direction === "asc" ? " ▲" : " ▼") : "";
      const button = h("button", { type: "button", class: "stellar-sort", "data-column": column.key, text: column.label + arrow,
        title: `sort by ${column.label}` });
      button.addEventListener("click", () => onSort(column.key));
      cells.push(h("th", { class: `stellar-col-${column.kind}${column.constant ? " stellar-constant" : ""}`,
        "data-column": column.key, "aria-sort": sorted ? (view.sort.direction === "asc" ? "ascending" : "descending") : "none" },
      button));
    }
    thead.replaceChildren(h("tr", {}, ...cells));
  }

  function rowElement(row) {
    if (row.type === "pending") {
      // A run of a window the Portal has not sent yet (a server-side view): its row holds the place.
      return h("tr", { class: "stellar-pending-row", "data-index": String(row.index) },
        h("td", { colSpan: view.columns.length + 1, class: "stellar-note", text: "loading…" }));
    }
    if (row.type === "group") {
      const toggle = h("button", { type: "button", class: "stellar-group-toggle", "aria-expanded": String(!row.collapsed),
        text: `${row.collapsed ? "▸" : "▾"} ${row.key || "(none)"} · ${formatNumber(row.count)} run${row.count === 1 ? "" : "s"}` });
      toggle.addEventListener("click", () => onToggleGroup(row.key));
      return h("tr", { class: "stellar-group-row", "data-group": row.key }, h("td", { colSpan: view.columns.length + 1 }, toggle));
    }
    const run = row.run;
    const check = h("input", { type: "checkbox", title: `select ${run.run_id} for comparison`, "aria-label": `select ${run.run_id}` });
    check.checked = view.selected.has(run.run_id);
    check.addEventListener("change", () => onSelect(run.run_id, check.checked));
    return h("tr", { class: "stellar-run-row", "data-run-id": run.run_id, "data-state": run.state || "" },
      h("td", { class: "stellar-check" }, check), ...view.columns.map((c) => cell(run, c, view.metric)));
  }

  function draw() {
    frame = 0;
    header();
    // Before its rows are drawn the box is only as tall as its header: the window fills the most it can show.
    const viewportHeight = Math.max(scroller.clientHeight, 0.7 * window.innerHeight);
    const w = visibleWindow({ scrollTop: scroller.scrollTop, viewportHeight,
      rowHeight: ROW_HEIGHT, rowCount: view.rows.length, overscan: OVERSCAN });
    const span = view.columns.length + 1;
    const spacer = (height, where) => h("tr", { class: "stellar-spacer", "data-spacer": where, style: `height:${height}px` },
      h("td", { colSpan: span }));
    const rows = view.rows.slice(w.start, w.end).map(rowElement);
    tbody.replaceChildren(spacer(w.top, "top"), ...rows, spacer(w.bottom, "bottom"));
    view.stats.renders += 1;
    view.stats.drawnRows = rows.length;
    view.stats.window = [w.start, w.end];
    onWindow?.(w.start, w.end);
  }

  const later = () => {
    if (!frame) frame = requestAnimationFrame(draw);
  };
  scroller.addEventListener("scroll", later);
  window.addEventListener("resize", later);

  view.update = (next) => {
    Object.assign(view, next);
    if (frame) cancelAnimationFrame(frame);
    draw();
  };
  view.element = scroller;
  return view;
}
