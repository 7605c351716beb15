// The runs table's logic, without the DOM: its columns, search and filters (config values included), sort
// by any column, grouping by experiment or group, and the window of rows a scrolled table draws.
//
// A run here is one entry of the page data's run listing (/stellar/data/runs): run_id, project,
// experiment_id, run_group_id, state, created_at, tags, config (flattened fields or null) and metrics
// ({name: {latest_value, min_value, max_value, latest_step, count, non_finite_count}}).
import { constantKeys, differingKeys, valueText } from "../shared/differing.js";

/** The fixed columns, in order: key, header, what the cell sorts by. */
export const FIXED_COLUMNS = [
  { key: "run_id", label: "Run" },
  { key: "state", label: "State" },
  { key: "project", label: "Project" },
  { key: "experiment_id", label: "Experiment" },
  { key: "run_group_id", label: "Group" },
  { key: "created_at", label: "Created" },
];
export const METRIC_STATS = ["latest", "min", "max"];
const STAT_FIELD = { latest: "latest_value", min: "min_value", max: "max_value" };

/** A column key for a metric statistic or a config field: "metric:latest", "config:optimizer.lr". */
export const metricColumn = (stat) => `metric:${stat}`;
export const configColumn = (key) => `config:${key}`;

/** The tags a table row shows: a person's tags as key=value (key alone when empty), not the workspace tag. */
export function tagsText(run) {
  const shown = Object.entries(run.tags || {}).filter(([k]) => k !== "tau_workspace")
    .sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => (v === "" ? k : `${k}=${v}`));
  return shown.length ? shown.join(", ") : undefined;
}

/** The value a run has in a column (undefined when it has none), for sorting, filtering and showing. */
export function cellValue(run, column, metric) {
  if (column === "tags") return tagsText(run);
  if (column.startsWith("metric:")) {
    const m = metric ? run.metrics?.[metric] : undefined;
    const v = m ? m[STAT_FIELD[column.slice(7)]] : undefined;
    return typeof v === "number" ? v : undefined;
  }
  if (column.startsWith("config:")) {
    const config = run.config;
    const key = column.slice(7);
    return config && Object.prototype.hasOwnProperty.call(config, key) ? config[key] : undefined;
  }
  const v = run[column];
  return v === null || v === "" ? undefined : v;
}

/** The config columns of the listed runs: those that vary (shown) and those that are the same in all (collapsed). */
export function configColumns(runs) {
  const configs = runs.map((r) => r.config ?? null);
  return { varying: differingKeys(configs), constant: constantKeys(configs) };
}

// -- search and filters ------------------------------------------------------------------------------

const OPERATORS = ["!=", ">=", "<=", "=", ">", "<", "~"];

/**
 * Parses the config filter box: conditions separated by commas, each `key OP value` with OP one of
 * = != > >= < <= ~ (contains). Returns {conditions} or {error} naming the condition and what is wrong.
 */
export function parseConfigFilter(text) {
  const conditions = [];
  const parts = String(text || "").split(",");
  let offset = 0;
  for (const raw of parts) {
    const part = raw.trim();
    const at = offset + raw.indexOf(part) + 1;
    offset += raw.length + 1;
    if (!part) continue;
    let found = null;
    for (let i = 0; i < part.length && !found; i++) {
      for (const op of OPERATORS) {
        if (part.startsWith(op, i)) {
          found = { i, op };
          break;
        }
      }
    }
    if (!found) return { error: `"${part}" (at character ${at}) needs an operator: key=value, key>number, key~text` };
    const key = part.slice(0, found.i).trim();
    const value = part.slice(found.i + found.op.length).trim();
    if (!key) return { error: `"${part}" (at character ${at}) has no key before ${found.op}` };
    if (!value) return { error: `"${part}" (at character ${at}) has no value after ${found.op}` };
    if ([">", ">=", "<", "<="].includes(found.op) && !Number.isFinite(Number(value))) {
      return { error: `"${part}" (at character ${at}): ${found.op} compares numbers, and ${value} is not one` };
    }
    conditions.push({ key, op: found.op, value });
  }
  return { conditions };
}

/** The config key a condition names: the key itself, else the one key ending with .key (lr → optimizer.lr). */
function resolveKey(config, key) {
  if (Object.prototype.hasOwnProperty.call(config, key)) return key;
  const matches = Object.keys(config).filter((k) => k.endsWith(`.${key}`));
  return matches.length === 1 ? matches[0] : null;
}

function matchesCondition(run, { key, op, value }) {
  const config = run.config;
  const k = config ? resolveKey(config, key) : null;
  if (k === null) return op === "!=";
  const actual = config[k];
  const text = valueText(actual);
  const number = typeof actual === "number" ? actual : Number(actual);
  const numeric = Number.isFinite(number) && Number.isFinite(Number(value)) && text !== "" && typeof actual !== "boolean";
  switch (op) {
    case "=":
      return numeric ? number === Number(value) : text === value;
    case "!=":
      return numeric ? number !== Number(value) : text !== value;
    case "~":
      return text.toLowerCase().includes(value.toLowerCase());
    case ">":
      return numeric && number > Number(value);
    case ">=":
      return numeric && number >= Number(value);
    case "<":
      return numeric && number < Number(value);
    case "<=":
      return numeric && number <= Number(value);
    default:
      return false;
  }
}

/** Whether a run's id, project, experiment, group, state, tags or config values contain `needle` (any case). */
export function matchesSearch(run, needle) {
  if (!needle) return true;
  const n = needle.toLowerCase();
  const fields = [run.run_id, run.project, run.experiment_id, run.run_group_id, run.state];
  for (const [k, v] of Object.entries(run.tags || {})) fields.push(`${k}=${v}`);
  for (const [k, v] of Object.entries(run.config || {})) fields.push(`${k}=${valueText(v)}`);
  return fields.some((f) => f && String(f).toLowerCase().includes(n));
}

/**
 * The runs that pass every filter: {search, state, project, experiment, group, tag ("key=value"),
 * config (parsed conditions), only (a Set of run ids, e.g. the lines brushed on the parallel coordinates), noted
 * (a Set of run ids: those whose notes the Portal found for the note filter)}.
 * Empty filters pass everything.
 */
export function filterRuns(runs, filters = {}) {
  const { search = "", state = "", project = "", experiment = "", group = "", tag = "", config = [], only = null,
    noted = null } = filters;
  const [tagKey, ...tagRest] = tag ? tag.split("=") : [];
  const tagValue = tagRest.join("=");
  return runs.filter((run) => {
    if (state && run.state !== state) return false;
    if (project && run.project !== project) return false;
    if (experiment && run.experiment_id !== experiment) return false;
    if (group && run.run_group_id !== group) return false;
    if (tag && (run.tags || {})[tagKey] !== tagValue) return false;
    if (!matchesSearch(run, search)) return false;
    if (only && !only.has(run.run_id)) return false;
    if (noted && !noted.has(run.run_id)) return false;
    return config.every((c) => matchesCondition(run, c));
  });
}

/** The distinct values the runs have for each filter, sorted, for the filter menus. */
export function filterChoices(runs) {
  const sets = { state: new Set(), project: new Set(), experiment: new Set(), group: new Set(), tag: new Set() };
  for (const run of runs) {
    if (run.state) sets.state.add(run.state);
    if (run.project) sets.project.add(run.project);
    if (run.experiment_id) sets.experiment.add(run.experiment_id);
    if (run.run_group_id) sets.group.add(run.run_group_id);
    for (const [k, v] of Object.entries(run.tags || {})) if (k !== "tau_workspace") sets.tag.add(`${k}=${v}`);
  }
  return Object.fromEntries(Object.entries(sets).map(([k, s]) => [k, [...s].sort(naturalCompare)]));
}

// -- sorting --------------------------------------------------------------------------------------------

const collator = new Intl.Collator("en", { numeric: true, sensitivity: "base" });

/** Text in natural order: run-2 before run-10. */
export function naturalCompare(a, b) {
  return collator.compare(String(a), String(b));
}

/** Numbers before text, numbers by value, text in natural order; booleans as text. */
function compareValues(a, b) {
  const an = typeof a === "number" && !Number.isNaN(a);
  const bn = typeof b === "number" && !Number.isNaN(b);
  if (an && bn) return a - b;
  if (an !== bn) return an ? -1 : 1;
  return naturalCompare(valueText(a), valueText(b));
}

/**
 * The runs sorted by `column` ("asc" or "desc"); runs without a value in that column come last either way,
 * ties keep the newest first, then the run id.
 */
export function sortRuns(runs, column, direction = "asc", metric = null) {
  const sign = direction === "desc" ? -1 : 1;
  const keyed = runs.map((run) => ({ run, v: cellValue(run, column, metric) }));
  keyed.sort((x, y) => {
    const xm = x.v === undefined;
    const ym = y.v === undefined;
    if (xm || ym) return xm && ym ? tieBreak(x.run, y.run) : xm ? 1 : -1;
    return sign * compareValues(x.v, y.v) || tieBreak(x.run, y.run);
  });
  return keyed.map((k) => k.run);
}

function tieBreak(a, b) {
  return String(b.created_at || "").localeCompare(String(a.created_at || "")) || naturalCompare(a.run_id, b.run_id);
}

// -- grouping -------------------------------------------------------------------------------------------

export const GROUP_BY = { experiment: "experiment_id", group: "run_group_id" };

/**
 * The table's rows: runs in order, or, grouped by "experiment" or "group", a header row per group (in order
 * of each group's first run) followed by its runs unless the group is in `collapsed`.
 */
export function tableRows(runs, groupBy = "", collapsed = new Set()) {
  const field = GROUP_BY[groupBy];
  if (!field) return runs.map((run) => ({ type: "run", run }));
  const groups = new Map();
  for (const run of runs) {
    const key = run[field] || "";
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(run);
  }
  const rows = [];
  for (const [key, members] of groups) {
    rows.push({ type: "group", key, count: members.length, collapsed: collapsed.has(key) });
    if (!collapsed.has(key)) for (const run of members) rows.push({ type: "run", run });
  }
  return rows;
}

// -- the drawn window -----------------------------------------------------------------------------------

/**
 * Which rows a scrolled table of fixed-height rows draws: [start, end) with `overscan` rows beyond the view
 * on each side, and the heights of the spacers above and below them.
 */
export function visibleWindow({ scrollTop, viewportHeight, rowHeight, rowCount, overscan = 10 }) {
  if (!(rowHeight > 0) || rowCount <= 0) return { start: 0, end: 0, top: 0, bottom: 0 };
  const maxTop = Math.max(0, rowCount * rowHeight - viewportHeight);
  const top = Math.min(Math.max(0, scrollTop || 0), maxTop);
  const first = Math.floor(top / rowHeight);
  const shown = Math.ceil(Math.max(0, viewportHeight) / rowHeight) + 1;
  const start = Math.max(0, first - overscan);
  const end = Math.min(rowCount, first + shown + overscan);
  return { start, end, top: start * rowHeight, bottom: (rowCount - end) * rowHeight };
}

// -- the Portal's windows: a workspace of more runs than the page holds ---------------------------------

/** The most runs the page lists, filters, sorts and groups itself; beyond, the Portal does it in windows. */
export const LOCAL_LIMIT = 5000;
/** Rows per window the page asks for as the table scrolls. */
export const PAGE_ROWS = 500;
/** The columns the Portal sorts by (config columns only sort among the runs the page holds). */
export const SERVER_SORTS = [...FIXED_COLUMNS.map((c) => c.key), ...METRIC_STATS.map(metricColumn)];

/**
 * The page-data query of a server-side view: the page's project, the search text, the note text, the state,
 * project, experiment, group and tag filters, the metric, and the sort when the Portal can sort by that column.
 */
export function serverQuery({ project = "", search = "", filters = {}, metric = "", sort = null, note = "" }) {
  const q = {};
  if (filters.project || project) q.project = filters.project || project;
  if (search) q.q = search;
  if (note) q.note = note;
  for (const key of ["state", "experiment", "group", "tag"]) if (filters[key]) q[key] = filters[key];
  if (metric) q.metric = metric;
  if (sort && SERVER_SORTS.includes(sort.column)) {
    q.sort = sort.column;
    q.order = sort.direction === "asc" ? "asc" : "desc";
  }
  return q;
}

/** The windows (page numbers) that rows [start, end) fall in. */
export function pagesFor(start, end, pageRows = PAGE_ROWS) {
  if (!(end > start)) return [];
  const pages = [];
  for (let p = Math.floor(start / pageRows); p <= Math.floor((end - 1) / pageRows); p++) pages.push(p);
  return pages;
}

/**
 * The rows of a server-side view of `total` runs: each run of a loaded window (`pages`: page number → runs),
 * and a pending row (its index) wherever a window is not loaded yet, so the scrollbar spans every run.
 */
export function remoteRows(total, pages, pageRows = PAGE_ROWS) {
  const rows = new Array(Math.max(0, total));
  for (let i = 0; i < rows.length; i++) {
    const page = pages.get(Math.floor(i / pageRows));
    const run = page ? page[i % pageRows] : undefined;
    rows[i] = run ? { type: "run", run } : { type: "pending", index: i };
  }
  return rows;
}
