// The runs table (/stellar/runs): every run of the workspace from one page-data read, with search, filters
// (state, project, experiment, group, tag, config values), sort by any column (a chosen metric's latest, min
// and max too), the hyperparameter columns that vary across the listed runs, grouping by experiment or group,
// a parallel-coordinates view of the listed runs, and a way to open one run or compare several.
//
// A workspace of more runs than one read holds (LOCAL_LIMIT) is a server-side view: the Portal filters
// (search, state, project, experiment, group, tag), sorts (fixed and metric columns) and counts, and the
// table asks for the windows of rows it scrolls to, so every run can be reached. Grouping, config filters
// and the parallel coordinates need the runs in the page: they work once filters leave LOCAL_LIMIT or fewer.
//
// What the user chose is kept in the address (?q=…&experiment=…&sort=…), so a view can be shared or reloaded.
import { valueText } from "../shared/differing.js";
import { h } from "../shared/dom.js";
import { plural } from "../shared/format.js";
import { stellarUrl } from "../shared/urls.js";
import { addressOf, decodeListingView, encodeListingView, LISTING_FILTERS as FILTERS } from "../shared/view_state.js";
import { copyLinkControl, showAddressNotices } from "./address.js";
import { explain, pageData } from "./api.js";
import { errorBox, showError } from "./notices.js";
import { main, root, state } from "./page.js";
import {
  configColumns, filterChoices, filterRuns, LOCAL_LIMIT, PAGE_ROWS, pagesFor, parseConfigFilter, remoteRows, SERVER_SORTS, serverQuery,
  sortRuns, tableRows,
} from "./runs_table.js";
import { columnsFor, createTableView } from "./table_view.js";

export const MAX_COMPARE = 50; // runs one compare page draws (its address carries their ids)
const FILTER_LABELS = { state: "states", project: "projects", experiment: "experiments", group: "groups", tag: "tags" };

function readAddress() {
  const { view, notices } = decodeListingView(window.location.search);
  state.addressNotices = notices;
  return view;
}

function writeAddress(t) {
  const query = encodeListingView(t, { project: state.project, source: state.source });
  window.history.replaceState(null, "", addressOf(window.location.pathname, query));
}

async function fetchTable(metric, query = null) {
  const started = performance.now();
  const body = await pageData(["runs"], query || { project: state.project, metric: metric || null });
  state.timings.fetchMs = performance.now() - started;
  for (const warning of body.metadata?.warnings || []) {
    errorBox().append(h("p", { class: "stellar-note stellar-warning", text: warning }));
  }
  return body;
}

function select(id, label, choices, value) {
  const node = h("select", { id, "aria-label": label });
  node.append(h("option", { value: "", text: `all ${label}` }));
  for (const c of choices) node.append(h("option", { value: c, text: c }));
  if (value && !choices.includes(value)) node.append(h("option", { value, text: `${value} (no runs)` }));
  node.value = value;
  return node;
}

export async function listingPage() {
  const box = errorBox();
  const t = { ...readAddress(), all: [], metricNames: [], selected: new Set(), collapsed: new Set(), only: null, config: [],
    noted: null }; // t.note (the note filter) comes from the address
  state.table = t;
  state.timings = {};
  showAddressNotices(box);
  let body;
  try {
    body = await fetchTable(t.metric);
  } catch (err) {
    showError(explain(err, "The runs could not be listed"), err, box);
    main.append(h("p", { class: "stellar-note", text: "A run can still be opened directly at stellar?target=<run_id>&project=<project>." }));
    document.getElementById("stellar-loading")?.remove();
    state.ready = true;
    main.dataset.state = "error";
    return;
  }
  const firstDraw = performance.now();
  t.all = body.runs || [];
  t.metricNames = body.metric_names || [];
  t.metric = body.metrics?.[0] || "";
  // More runs than one read holds: the Portal filters, sorts and windows them (a server-side view).
  t.remote = (body.run_count || 0) > t.all.length;
  t.total = body.run_count || 0;
  t.pages = new Map(); // window number -> runs (server-side view)
  t.loading = new Set();
  t.generation = 0; // answers of an older query are dropped
  t.pageRows = Math.max(1, Math.min(PAGE_ROWS, t.all.length)); // a window is never more than one read holds
  if (t.remote) {
    for (let p = 0; p * t.pageRows < t.all.length; p++) t.pages.set(p, t.all.slice(p * t.pageRows, (p + 1) * t.pageRows));
  }

  // -- controls
  const search = h("input", { type: "search", id: "stellar-search", value: t.search, placeholder: "search runs, tags, config values",
    "aria-label": "search runs" });
  const choices = filterChoices(t.all);
  const menus = Object.fromEntries(FILTERS.map((f) => [f, select(`stellar-filter-${f}`, FILTER_LABELS[f], choices[f], t.filters[f])]));
  // Notes live in the Portal: the runs whose notes hold the text are asked of it (indexed), for either view.
  const noteInput = h("input", { type: "search", id: "stellar-filter-note", placeholder: "notes contain…",
    "aria-label": "filter by note text", title: "runs with a note containing this text (any case)", value: t.note });
  const configInput = h("input", { type: "text", id: "stellar-filter-config", value: t.configText,
    placeholder: "config: lr>0.01, opt=adam", "aria-label": "filter by config values",
    title: "key=value, key!=value, key>number, key<=number, key~text; separated by commas" });
  const metricSelect = h("select", { id: "stellar-metric", "aria-label": "metric" });
  for (const name of t.metricNames) metricSelect.append(h("option", { value: name, text: name }));
  if (!t.metricNames.length) metricSelect.append(h("option", { value: "", text: "no metrics" }));
  metricSelect.value = t.metric;
  const groupBy = h("select", { id: "stellar-group-by", "aria-label": "group by" },
    h("option", { value: "", text: "no grouping" }), h("option", { value: "experiment", text: "experiment" }),
    h("option", { value: "group", text: "group" }));
  groupBy.value = t.groupBy;
  const showConstant = h("input", { type: "checkbox", id: "stellar-show-constant" });
  showConstant.checked = t.showConstant;
  const parallelButton = h("button", { type: "button", id: "stellar-parallel-toggle", "aria-pressed": String(t.parallel),
    text: "Parallel coordinates" });
  const compare = h("button", { type: "button", id: "stellar-compare", text: "Open selected run", disabled: true });
  const count = h("span", { class: "stellar-note", id: "stellar-count" });
  const configError = h("p", { class: "stellar-error", id: "stellar-config-error", role: "alert", hidden: true });
  const constantLine = h("p", { class: "stellar-note", id: "stellar-constant", hidden: true });
  const brushLine = h("p", { class: "stellar-note", id: "stellar-brushed", hidden: true });
  const parallelBox = h("div", { class: "stellar-parallel", id: "stellar-parallel", hidden: true });
  main.append(
    h("div", { class: "stellar-controls stellar-table-controls" }, search, ...FILTERS.map((f) => menus[f]), noteInput,
      configInput),
    h("div", { class: "stellar-controls stellar-table-controls" },
      h("label", {}, "metric", metricSelect), h("label", {}, "group by", groupBy),
      h("label", {}, showConstant, "constant hyperparameters"), parallelButton, compare, count, copyLinkControl()),
    configError, constantLine, parallelBox, brushLine,
  );
  if (!t.all.length) main.append(h("p", { class: "stellar-note", id: "stellar-no-runs", text: "No runs in this workspace yet." }));
  const tableBox = h("div", { class: "stellar-table-box" });
  main.append(tableBox);

  let listed = [];
  let parallel = null; // the lazily loaded parallel-coordinates view
  const view = createTableView(tableBox, {
    onSort(column) {
      if (t.remote && !SERVER_SORTS.includes(column)) {
        remoteNote.textContent = `${column.slice(7)} sorts only when ${LOCAL_LIMIT_TEXT} runs or fewer are in the page: `
          + "open the table of one project (?project=)";
        return;
      }
      const same = t.sort.column === column;
      t.sort = { column, direction: same ? (t.sort.direction === "asc" ? "desc" : "asc") : column === "created_at" ? "desc" : "asc" };
      if (t.remote) reload();
      else refresh();
    },
    onWindow(start, end) {
      if (t.remote) for (const page of pagesFor(start, end, t.pageRows)) loadPage(page);
    },
    onSelect(runId, checked) {
      if (checked) t.selected.add(runId);
      else t.selected.delete(runId);
      refresh({ keepScroll: true });
    },
    onToggleGroup(key) {
      if (t.collapsed.has(key)) t.collapsed.delete(key);
      else t.collapsed.add(key);
      refresh({ keepScroll: true });
    },
    onSelectAll(checked) {
      if (checked) for (const run of listed) t.selected.add(run.run_id);
      else for (const run of listed) t.selected.delete(run.run_id);
      refresh({ keepScroll: true });
    },
  });
  const remoteNote = h("p", { class: "stellar-note", id: "stellar-remote", hidden: true });
  tableBox.before(remoteNote);
  const LOCAL_LIMIT_TEXT = t.all.length.toLocaleString("en");
  const known = new Map(); // run id -> run, of every window seen (the compare button opens them)

  function query() {
    return serverQuery({ project: state.project, search: t.search, filters: t.filters, metric: t.metric, sort: t.sort,
      note: t.note });
  }

  /** A server-side view: one window of the current query, then the table redrawn with it. */
  async function loadPage(page, generation = t.generation) {
    if (t.pages.has(page) || t.loading.has(page) || page * t.pageRows >= Math.max(t.total, 1)) return;
    t.loading.add(page);
    try {
      const next = await pageData(["runs"], { ...query(), offset: page * t.pageRows, limit: t.pageRows });
      if (generation !== t.generation) return;
      t.total = next.run_count;
      t.pages.set(page, next.runs || []);
      refresh({ keepScroll: true });
    } catch (err) {
      if (generation === t.generation) showError(explain(err, "More runs could not be listed"), err, box);
    } finally {
      if (generation === t.generation) t.loading.delete(page);
    }
  }

  /** A server-side view after a filter or sort changed: its first window again, from the top. */
  function reload() {
    t.generation += 1;
    t.pages = new Map();
    t.loading = new Set();
    main.dataset.state = "loading";
    loadPage(0, t.generation).finally(() => {
      main.dataset.state = "ready";
    });
    refresh();
  }

  state.tableStats = view.stats; // rows drawn and the window (the UI tests read them)

  function compareButton() {
    const n = t.selected.size;
    compare.disabled = n < 1 || n > MAX_COMPARE;
    compare.textContent = n > MAX_COMPARE ? `Compare at most ${MAX_COMPARE} runs (${n} selected)`
      : n > 1 ? `Compare ${n} runs` : "Open selected run";
  }

  /** Everything but the brushed selection: what the parallel coordinates draw. */
  function filtered() {
    return filterRuns(t.all, { search: t.search, ...t.filters, config: t.config, noted: t.noted });
  }

  function refreshRemote(keepScroll) {
    const loaded = [...t.pages.values()].flat();
    for (const run of loaded) known.set(run.run_id, run);
    const { varying, constant } = configColumns(loaded);
    listed = loaded;
    const rows = remoteRows(t.total, t.pages, t.pageRows);
    const nonFinite = loaded.some((r) => Number(r.metrics?.[t.metric]?.non_finite_count || 0) > 0);
    const columns = columnsFor({ metric: t.metric, varying, constant, showConstant: t.showConstant, nonFinite });
    if (!keepScroll) view.element.scrollTop = 0;
    view.update({ rows, columns, metric: t.metric, sort: t.sort, selected: t.selected,
      allSelected: loaded.length > 0 && loaded.every((r) => t.selected.has(r.run_id)) });
    count.textContent = plural(t.total, "run");
    remoteNote.hidden = false;
    if (!remoteNote.textContent.includes("sorts only")) {
      remoteNote.textContent = `${plural(t.total, "run")}: more than one read holds (${LOCAL_LIMIT_TEXT}), so the Portal `
        + "searches, filters, sorts and sends the rows as you scroll. Grouping, config filters and parallel coordinates "
        + `need ${LOCAL_LIMIT_TEXT} runs or fewer in the page: open the table of one project (?project=).`;
    }
    main.dataset.listed = String(t.total);
    main.dataset.remote = "1";
    main.dataset.varying = varying.join(",");
    compareButton();
    writeAddress(t);
  }

  function refresh({ keepScroll = false, redrawParallel = false } = {}) {
    if (t.remote) {
      refreshRemote(keepScroll);
      return;
    }
    const started = performance.now();
    const base = filtered();
    const { varying, constant } = configColumns(base);
    const sample = base.find((r) => r.config) || {};
    constantLine.hidden = !constant.length || t.showConstant;
    constantLine.textContent = constant.length
      ? `Same in all ${plural(base.filter((r) => r.config).length, "run")} with a config: ${constant.slice(0, 12)
        .map((k) => `${k}=${valueText(sample.config[k])}`).join(", ")}${constant.length > 12 ? `, +${constant.length - 12} more` : ""}`
      : "";
    listed = filterRuns(base, { only: t.only });
    const sorted = sortRuns(listed, t.sort.column, t.sort.direction, t.metric);
    const rows = tableRows(sorted, t.groupBy, t.collapsed);
    const nonFinite = listed.some((r) => Number(r.metrics?.[t.metric]?.non_finite_count || 0) > 0);
    const columns = columnsFor({ metric: t.metric, varying, constant, showConstant: t.showConstant, nonFinite });
    if (!keepScroll) view.element.scrollTop = 0;
    view.update({ rows, columns, metric: t.metric, sort: t.sort, selected: t.selected,
      allSelected: listed.length > 0 && listed.every((r) => t.selected.has(r.run_id)) });
    count.textContent = listed.length === t.all.length ? plural(t.all.length, "run")
      : `${plural(listed.length, "run")} of ${t.all.length}`;
    if (body.run_count > t.all.length) count.textContent += ` (the newest ${t.all.length} of ${body.run_count})`;
    main.dataset.listed = String(listed.length);
    main.dataset.varying = varying.join(",");
    compareButton();
    state.timings.refreshMs = performance.now() - started;
    if (t.parallel && (redrawParallel || !parallel)) drawParallel(base, varying);
    writeAddress(t);
  }

  let parallelLoading = null;
  async function drawParallel(base, varying) {
    parallelBox.hidden = false;
    try {
      // The parallel coordinates (plotly's parcoords) are a chunk of their own, loaded the first time they are shown.
      parallelLoading ||= import("./parcoords_view.js").then(({ createParallelView }) => createParallelView(parallelBox, {
        onBrush(kept) {
          t.only = kept;
          brushLine.hidden = !kept;
          brushLine.textContent = kept ? `${plural(kept.size, "run")} within the brushed ranges; the table lists only `
            + "them (click an axis outside its brushed range to clear it)" : "";
          refresh();
        },
        onOpen(run) {
          window.location.href = stellarUrl(root, [run.run_id], run.project, undefined, state.source).href;
        },
      }));
      parallel = state.parallel = await parallelLoading;
      parallel.update({ runs: base, keys: varying, metric: t.metric });
    } catch (err) {
      parallelBox.dataset.state = "error";
      parallelBox.replaceChildren();
      showError(`The parallel coordinates could not be drawn: ${err.message || err}`, null, parallelBox);
    }
  }

  function closeParallel() {
    parallelBox.hidden = true;
    brushLine.hidden = true;
    if (t.only) t.only = null;
  }

  function readConfig() {
    const parsed = parseConfigFilter(configInput.value);
    t.configText = configInput.value.trim();
    configError.hidden = !parsed.error;
    configError.textContent = parsed.error ? `Config filter: ${parsed.error}` : "";
    configInput.setAttribute("aria-invalid", String(!!parsed.error));
    if (!parsed.error) t.config = parsed.conditions;
  }

  // A filter change redraws the parallel coordinates for the runs it now lists (and drops the brushed set).
  const filterChanged = () => {
    t.only = null;
    brushLine.hidden = true;
    if (t.remote) reload();
    else refresh({ redrawParallel: true });
  };
  let typing = 0; // a server-side view asks the Portal once the typing pauses
  search.addEventListener("input", () => {
    t.search = search.value.trim();
    if (!t.remote) filterChanged();
    else {
      clearTimeout(typing);
      typing = setTimeout(filterChanged, 250);
    }
  });
  let noteTyping = 0;
  /** The note filter applied: the runs whose notes hold t.note, asked of the Portal (a server-side view asks with its windows). */
  async function applyNote() {
    if (t.remote) {
      filterChanged();
      return;
    }
    try {
      t.noted = t.note ? new Set(((await pageData(["runs"], { project: state.project, note: t.note, limit: LOCAL_LIMIT }))
        .runs || []).map((r) => r.run_id)) : null;
    } catch (err) {
      showError(explain(err, "The runs with that note could not be found"), err, box);
      t.noted = null;
    }
    filterChanged();
  }
  noteInput.addEventListener("input", () => {
    clearTimeout(noteTyping);
    noteTyping = setTimeout(() => {
      t.note = noteInput.value.trim();
      applyNote();
    }, 250);
  });
  for (const f of FILTERS) {
    menus[f].addEventListener("change", () => {
      t.filters[f] = menus[f].value;
      filterChanged();
    });
  }
  configInput.addEventListener("input", () => {
    readConfig();
    filterChanged();
  });
  groupBy.addEventListener("change", () => {
    t.groupBy = groupBy.value;
    refresh();
  });
  showConstant.addEventListener("change", () => {
    t.showConstant = showConstant.checked;
    refresh({ keepScroll: true });
  });
  parallelButton.addEventListener("click", () => {
    t.parallel = !t.parallel;
    parallelButton.setAttribute("aria-pressed", String(t.parallel));
    if (!t.parallel) closeParallel();
    refresh({ redrawParallel: true });
  });
  metricSelect.addEventListener("change", async () => {
    if (t.remote) {
      t.metric = metricSelect.value;
      reload();
      return;
    }
    // The table's metric values come with the listing: read it again for the new metric.
    metricSelect.disabled = true;
    main.dataset.state = "loading";
    try {
      const next = await fetchTable(metricSelect.value);
      body = next;
      t.all = next.runs || [];
      t.metric = next.metrics?.[0] || metricSelect.value;
      refresh({ redrawParallel: true });
    } catch (err) {
      showError(explain(err, `The runs could not be listed with ${metricSelect.value}`), err, box);
      metricSelect.value = t.metric;
    } finally {
      metricSelect.disabled = false;
      main.dataset.state = "ready";
    }
  });
  compare.addEventListener("click", () => {
    const picked = t.remote ? [...t.selected].map((id) => known.get(id)).filter(Boolean)
      : t.all.filter((r) => t.selected.has(r.run_id));
    const projects = new Set(picked.map((r) => r.project));
    window.location.href = stellarUrl(root, picked.map((r) => r.run_id), projects.size === 1 ? [...projects][0] : null, undefined, state.source).href;
  });

  readConfig();
  document.getElementById("stellar-loading")?.remove();
  if (t.remote) {
    for (const node of [groupBy, configInput, parallelButton]) {
      node.disabled = true;
      node.title = `needs ${LOCAL_LIMIT_TEXT} runs or fewer in the page: open the table of one project (?project=)`;
    }
    t.groupBy = "";
    t.parallel = false;
    // The first read listed the newest runs unfiltered: an address that asks for more asks the Portal.
    if (t.search || t.note || FILTERS.some((f) => t.filters[f]) || t.sort.column !== "created_at" || t.sort.direction !== "desc") {
      reload();
    }
  }
  refresh({ redrawParallel: true });
  if (t.note && !t.remote) applyNote(); // an address's note filter: its runs are asked of the Portal
  state.timings.firstDrawMs = performance.now() - firstDraw;
  state.ready = true;
  main.dataset.state = "ready";
}
