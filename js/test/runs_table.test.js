// The runs table's logic: the columns that vary, search and filters (config values included), sort by any
// column with missing values last, grouping, and the window of rows a scrolled table draws.
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  configColumns,
  filterChoices,
  filterRuns,
  parseConfigFilter,
  sortRuns,
  tableRows,
  visibleWindow,
} from "../stellar/runs_table.js";

function run(id, extra = {}) {
  return { run_id: id, project: "p", experiment_id: "sweep", run_group_id: "g", state: "succeeded",
    created_at: "2026-01-01T00:00:00Z", tags: {}, config: null, metrics: {}, ...extra };
}

const loss = (latest, min, max) => ({ loss: { latest_value: latest, min_value: min, max_value: max, count: 3 } });

const RUNS = [
  run("trial-10", { config: { lr: 0.1, opt: "adam", batch: 32 }, metrics: loss(0.5, 0.4, 2.0), created_at: "2026-01-03" }),
  run("trial-2", { config: { lr: 0.01, opt: "sgd", batch: 32 }, metrics: loss(0.3, 0.3, 2.2), created_at: "2026-01-02",
    state: "failed", tags: { owner: "ann" } }),
  run("trial-1", { config: { lr: 0.001, opt: "adam", batch: 32 }, metrics: {}, created_at: "2026-01-01",
    experiment_id: "other", run_group_id: "h" }),
  run("plain", { created_at: "2026-01-04", project: "q" }),
];
const ids = (runs) => runs.map((r) => r.run_id);

test("the config columns that vary are shown, the constant ones collapsed", () => {
  assert.deepEqual(configColumns(RUNS), { varying: ["lr", "opt"], constant: ["batch"] });
  // Listed runs that agree on opt: it becomes constant too.
  assert.deepEqual(configColumns([RUNS[0], RUNS[2]]), { varying: ["lr"], constant: ["batch", "opt"] });
});

test("search matches ids, ids of experiments and groups, tags and config values, in any case", () => {
  assert.deepEqual(ids(filterRuns(RUNS, { search: "TRIAL-1" })), ["trial-10", "trial-1"]);
  assert.deepEqual(ids(filterRuns(RUNS, { search: "sgd" })), ["trial-2"]);
  assert.deepEqual(ids(filterRuns(RUNS, { search: "owner=ann" })), ["trial-2"]);
  assert.deepEqual(ids(filterRuns(RUNS, { search: "other" })), ["trial-1"]);
  assert.deepEqual(ids(filterRuns(RUNS, { search: "lr=0.01" })), ["trial-2"]);
});

test("filters by state, project, experiment, group and tag combine", () => {
  assert.deepEqual(ids(filterRuns(RUNS, { state: "failed" })), ["trial-2"]);
  assert.deepEqual(ids(filterRuns(RUNS, { project: "q" })), ["plain"]);
  assert.deepEqual(ids(filterRuns(RUNS, { experiment: "sweep", group: "g" })), ["trial-10", "trial-2", "plain"]);
  assert.deepEqual(ids(filterRuns(RUNS, { tag: "owner=ann" })), ["trial-2"]);
  assert.deepEqual(ids(filterRuns(RUNS, { tag: "owner=bob" })), []);
  assert.deepEqual(ids(filterRuns(RUNS, { experiment: "sweep", state: "failed", search: "adam" })), []);
});

test("config conditions compare numbers as numbers and text as text", () => {
  const by = (text) => ids(filterRuns(RUNS, { config: parseConfigFilter(text).conditions }));
  assert.deepEqual(by("lr>0.005"), ["trial-10", "trial-2"]);
  assert.deepEqual(by("lr<=0.01, opt=adam"), ["trial-1"]);
  assert.deepEqual(by("lr=1e-3"), ["trial-1"]);
  assert.deepEqual(by("opt!=adam"), ["trial-2", "plain"]); // a run without the key is not adam
  assert.deepEqual(by("opt~AD"), ["trial-10", "trial-1"]);
  assert.deepEqual(by("opt>1"), []);
  assert.deepEqual(by(""), ids(RUNS));
});

test("a config condition may name a dotted key by its last part", () => {
  const runs = [run("a", { config: { "optimizer.lr": 0.1 } }), run("b", { config: { "optimizer.lr": 0.2 } })];
  assert.deepEqual(ids(filterRuns(runs, { config: parseConfigFilter("lr>0.15").conditions })), ["b"]);
});

test("a config filter that cannot be read says where and why", () => {
  assert.match(parseConfigFilter("lr").error, /"lr" \(at character 1\) needs an operator/);
  assert.match(parseConfigFilter("lr>0.1, =3").error, /"=3" \(at character 9\) has no key/);
  assert.match(parseConfigFilter("opt=").error, /has no value after =/);
  assert.match(parseConfigFilter("lr>abc").error, /> compares numbers, and abc is not one/);
  assert.deepEqual(parseConfigFilter(" lr >= 2 ").conditions, [{ key: "lr", op: ">=", value: "2" }]);
});

test("a brushed selection keeps only its runs", () => {
  assert.deepEqual(ids(filterRuns(RUNS, { only: new Set(["trial-2", "plain"]) })), ["trial-2", "plain"]);
  assert.deepEqual(ids(filterRuns(RUNS, { only: null })), ids(RUNS));
});

test("sorting by a metric's latest, min and max puts runs without it last, both ways", () => {
  assert.deepEqual(ids(sortRuns(RUNS, "metric:latest", "asc", "loss")), ["trial-2", "trial-10", "plain", "trial-1"]);
  assert.deepEqual(ids(sortRuns(RUNS, "metric:latest", "desc", "loss")), ["trial-10", "trial-2", "plain", "trial-1"]);
  assert.deepEqual(ids(sortRuns(RUNS, "metric:max", "desc", "loss")).slice(0, 2), ["trial-2", "trial-10"]);
  assert.deepEqual(ids(sortRuns(RUNS, "metric:min", "asc", "loss")).slice(0, 2), ["trial-2", "trial-10"]);
});

test("sorting by a config column orders numbers by value and text naturally", () => {
  assert.deepEqual(ids(sortRuns(RUNS, "config:lr", "asc")), ["trial-1", "trial-2", "trial-10", "plain"]);
  assert.deepEqual(ids(sortRuns(RUNS, "config:opt", "desc")), ["trial-2", "trial-10", "trial-1", "plain"]);
});

test("sorting by run id is natural (trial-2 before trial-10); by created, newest first when descending", () => {
  assert.deepEqual(ids(sortRuns(RUNS, "run_id", "asc")), ["plain", "trial-1", "trial-2", "trial-10"]);
  assert.deepEqual(ids(sortRuns(RUNS, "created_at", "desc")), ["plain", "trial-10", "trial-2", "trial-1"]);
  assert.deepEqual(ids(sortRuns(RUNS, "state", "asc")).slice(0, 1), ["trial-2"]);
});

test("a sort keeps ties newest first", () => {
  const tied = [run("x", { created_at: "1" }), run("y", { created_at: "3" }), run("z", { created_at: "2" })];
  assert.deepEqual(ids(sortRuns(tied, "project", "asc")), ["y", "z", "x"]);
});

test("grouping by experiment puts a header before each group's runs; a collapsed group shows only its header", () => {
  const rows = tableRows(RUNS, "experiment");
  assert.deepEqual(rows.map((r) => (r.type === "group" ? `[${r.key}:${r.count}]` : r.run.run_id)),
    ["[sweep:3]", "trial-10", "trial-2", "plain", "[other:1]", "trial-1"]);
  const collapsed = tableRows(RUNS, "group", new Set(["g"]));
  assert.deepEqual(collapsed.map((r) => (r.type === "group" ? `[${r.key}:${r.count}${r.collapsed ? "+" : ""}]` : r.run.run_id)),
    ["[g:3+]", "[h:1]", "trial-1"]);
  assert.deepEqual(tableRows(RUNS, "").map((r) => r.type), ["run", "run", "run", "run"]);
});

test("filter menus offer the values the runs have, without the workspace tag", () => {
  const runs = [...RUNS, run("w", { tags: { tau_workspace: "default" } })];
  const choices = filterChoices(runs);
  assert.deepEqual(choices.state, ["failed", "succeeded"]);
  assert.deepEqual(choices.experiment, ["other", "sweep"]);
  assert.deepEqual(choices.tag, ["owner=ann"]);
});

test("the drawn window covers the view plus overscan, and spacers fill the rest", () => {
  const w = visibleWindow({ scrollTop: 3000, viewportHeight: 600, rowHeight: 30, rowCount: 1000, overscan: 10 });
  assert.deepEqual(w, { start: 90, end: 131, top: 2700, bottom: (1000 - 131) * 30 });
  assert.equal(w.top + (w.end - w.start) * 30 + w.bottom, 1000 * 30);
});

test("the window at the top, at the bottom, past the end and for tiny tables", () => {
  assert.deepEqual(visibleWindow({ scrollTop: 0, viewportHeight: 600, rowHeight: 30, rowCount: 1000, overscan: 5 }),
    { start: 0, end: 26, top: 0, bottom: 974 * 30 });
  const bottom = visibleWindow({ scrollTop: 1e9, viewportHeight: 600, rowHeight: 30, rowCount: 1000, overscan: 5 });
  assert.equal(bottom.end, 1000);
  assert.equal(bottom.bottom, 0);
  assert.ok(bottom.start <= 1000 - 20);
  assert.deepEqual(visibleWindow({ scrollTop: 0, viewportHeight: 600, rowHeight: 30, rowCount: 3 }),
    { start: 0, end: 3, top: 0, bottom: 0 });
  assert.deepEqual(visibleWindow({ scrollTop: 50, viewportHeight: 600, rowHeight: 30, rowCount: 0 }),
    { start: 0, end: 0, top: 0, bottom: 0 });
  assert.deepEqual(visibleWindow({ scrollTop: -20, viewportHeight: 90, rowHeight: 30, rowCount: 100, overscan: 0 }),
    { start: 0, end: 4, top: 0, bottom: 96 * 30 });
});

// -- the Portal's windows ---------------------------------------------------------------------------------

test("a server-side view asks the Portal for its filters and the sorts it can do", async () => {
  const { serverQuery } = await import("../stellar/runs_table.js");
  const filters = { state: "failed", project: "", experiment: "sweep", group: "", tag: "owner=ann" };
  assert.deepEqual(serverQuery({ project: "p", search: "lr", filters, metric: "loss",
    sort: { column: "metric:min", direction: "asc" } }),
  { project: "p", q: "lr", state: "failed", experiment: "sweep", tag: "owner=ann", metric: "loss",
    sort: "metric:min", order: "asc" });
  // A config column is not sorted by the Portal: the query says nothing about order, the Portal's default applies.
  assert.deepEqual(serverQuery({ filters: {}, sort: { column: "config:lr", direction: "desc" } }), {});
  assert.deepEqual(serverQuery({ project: "p", filters: { project: "q" } }), { project: "q" });
});

test("the windows a drawn range needs", async () => {
  const { pagesFor } = await import("../stellar/runs_table.js");
  assert.deepEqual(pagesFor(0, 10, 500), [0]);
  assert.deepEqual(pagesFor(490, 1010, 500), [0, 1, 2]);
  assert.deepEqual(pagesFor(500, 1000, 500), [1]);
  assert.deepEqual(pagesFor(5, 5, 500), []);
});

test("rows of windows not loaded yet are pending, so the table spans every run", async () => {
  const { remoteRows } = await import("../stellar/runs_table.js");
  const pages = new Map([[0, [run("a"), run("b")]], [2, [run("e")]]]);
  const rows = remoteRows(6, pages, 2);
  assert.deepEqual(rows.map((r) => (r.type === "run" ? r.run.run_id : `…${r.index}`)), ["a", "b", "…2", "…3", "e", "…5"]);
  assert.equal(remoteRows(0, pages, 2).length, 0);
});

test("the tags column shows a person's tags sorted, not the workspace tag, and sorts by that text", async () => {
  const { cellValue, tagsText } = await import("../stellar/runs_table.js");
  const a = run("a", { tags: { tau_workspace: "default", verdict: "keep", baseline: "" } });
  const b = run("b", { tags: { tau_workspace: "default" } });
  assert.equal(tagsText(a), "baseline, verdict=keep");
  assert.equal(tagsText(b), undefined);
  assert.equal(cellValue(a, "tags"), "baseline, verdict=keep");
  assert.deepEqual(sortRuns([b, a], "tags", "asc").map((r) => r.run_id), ["a", "b"]); // none last
});

test("the note filter keeps the runs the Portal found by their notes, and goes to the Portal as note=", async () => {
  const { serverQuery } = await import("../stellar/runs_table.js");
  const runs = [run("a"), run("b"), run("c")];
  assert.deepEqual(filterRuns(runs, { noted: new Set(["b"]) }).map((r) => r.run_id), ["b"]);
  assert.deepEqual(filterRuns(runs, { noted: null }).length, 3);
  assert.deepEqual(serverQuery({ note: "diverged", filters: {} }), { note: "diverged" });
});
