"""The run listings (``expstore/write/listing.py``): kept by the writer, built for older stores, and what readers trust."""

from __future__ import annotations

import sqlite3

import pytest

from fixtures.listing_store import RUNS, build_listing_store, event
from tau_collector.expstore import StoreReader, open_store
from tau_collector.reads import WORKSPACE_TAG
from tau_collector.reads.lifecycle import classify


@pytest.fixture()
def store(tmp_path):
    return build_listing_store(tmp_path / "store")


def _expected(reader: StoreReader) -> dict[str, tuple]:
    out = {}
    for run in reader.runs():
        lifecycle = classify(run.state, run.completed_at, run.tags, reader.metric_summaries(run.run_id))[0]
        run_at = next((v for v in (run.started_at, run.completed_at, run.created_at) if v and v.strip()), "")
        out[run.run_id] = (run.tags.get(WORKSPACE_TAG, ""), run.project, run.experiment_id, run.run_group_id,
                           run.state, lifecycle, run.created_at, run_at)
    return out


def _listed(root) -> dict[str, tuple]:
    with sqlite3.connect(root / "index.sqlite") as db:
        return {r[0]: tuple(r[1:]) for r in db.execute(
            "SELECT run_id, workspace, project, experiment_id, run_group_id, state, lifecycle_state, created_at, "
            "run_at FROM run_listing")}


def test_the_writer_keeps_every_run_listed_with_taugrids_lifecycle(store):
    reader = StoreReader(store)
    expected = _expected(reader)
    assert len(expected) == RUNS
    assert _listed(store) == expected
    # Every lifecycle state the rules give is among them, so the comparison means something.
    assert {v[5] for v in expected.values()} == {"running", "failed", "succeeded", "incomplete"}
    assert reader.has_listings()


def test_experiment_rows_count_runs_per_workspace(store):
    reader = StoreReader(store)
    with sqlite3.connect(store / "index.sqlite") as db:
        rows = {(r[0], r[1]): r[2:] for r in db.execute(
            "SELECT experiment_id, workspace, run_count, latest_run_at FROM experiment_listing")}
        names = set(db.execute("SELECT experiment_id, workspace, metric_name FROM experiment_metrics"))
    expected: dict = {}
    expected_names = set()
    for run_id, row in _expected(reader).items():
        key = (row[2], row[0])
        count, latest = expected.get(key, (0, ""))
        expected[key] = (count + 1, max(latest, row[7]))
        expected_names |= {(row[2], row[0], n) for n in reader.metric_names(run_id)}
    assert rows == expected
    assert names == expected_names


def test_a_store_from_before_the_listings_gets_them_when_a_writer_opens_it(store):
    with sqlite3.connect(store / "index.sqlite") as db:
        before = _listed(store)
        db.execute("DROP TABLE run_listing")
        db.execute("DROP TABLE experiment_listing")
        db.execute("DROP TABLE experiment_metrics")
        db.execute("DELETE FROM schema_meta WHERE key = 'listing_version'")
    # A reader never migrates: it reads runs the old way.
    assert not StoreReader(store).has_listings()
    open_store(store, writable=True).close()  # a writer's open builds them
    assert _listed(store) == before
    assert StoreReader(store).has_listings()


def test_a_run_added_by_another_writer_makes_readers_list_the_old_way(store):
    with sqlite3.connect(store / "index.sqlite") as db:  # e.g. TauGrid's writer, which keeps no listing
        db.execute("INSERT INTO runs(run_id, project, experiment_id, run_group_id, state, created_at, index_version) "
                   "VALUES ('foreign', 'p0', 'e0', 'g0', 'running', '2030-01-01T00:00:00Z', 'expstore.v5')")
    assert not StoreReader(store).has_listings()


def test_a_run_window_is_the_filtered_sorted_slice_with_a_true_total(store):
    reader = StoreReader(store)
    visible = [r for r in reader.runs("default")]  # newest first, then run id
    total, window = reader.run_window("default", offset=3, limit=4)
    assert total == len(visible) and [r.run_id for r in window] == [r.run_id for r in visible[3:7]]
    total, window = reader.run_window("default", experiment="e1", limit=100)
    assert [r.run_id for r in window] == [r.run_id for r in visible if r.experiment_id == "e1"]
    total, window = reader.run_window("default", sort="run_id", descending=False, limit=100)
    assert [r.run_id for r in window] == sorted(r.run_id for r in visible)
    values = {r.run_id: reader.metric_summary(r.run_id, "errors") for r in visible}
    total, window = reader.run_window("default", sort="metric:max", metric="errors", descending=True, limit=100)
    having = [r.run_id for r in window if values[r.run_id] is not None]
    assert having == [r.run_id for r in window[:len(having)]]  # runs without the metric come last
    assert total == len(visible) and len(having) == sum(v is not None for v in values.values()) > 0
    assert reader.run_window("default", query="R0", limit=100)[0] == sum("r0" in r.run_id for r in visible)
    assert reader.run_window("default", tag=("team", "a"), limit=100)[0] == sum(
        r.tags.get("team") == "a" for r in visible)


def test_a_kept_sorted_order_follows_the_store_when_it_changes(store):
    from tau_collector.expstore.write.writer import MetricWriter

    reader = StoreReader(store)
    before = reader.run_window("default", sort="metric:max", metric="errors", descending=True, limit=3)
    again = reader.run_window("default", sort="metric:max", metric="errors", descending=True, offset=1, limit=2)
    assert [r.run_id for r in again[1]] == [r.run_id for r in before[1][1:3]]  # a slice of the same order
    writer = MetricWriter(open_store(store, writable=True))
    writer.write_chunk("late", [event(99, "errors", 1, 1e9, {"tau_workspace": "default"})], [], request_hash="h")
    total, window = reader.run_window("default", sort="metric:max", metric="errors", descending=True, limit=3)
    assert total == before[0] + 1 and window[0].run_id == "r99"


def test_deep_windows_of_the_newest_first_order_are_slices_of_the_kept_order(store, monkeypatch):
    from tau_collector.expstore.read import reader as reader_module

    monkeypatch.setattr(reader_module, "_WALKED_ROWS", 2)
    reader = StoreReader(store)
    newest_first = [r.run_id for r in reader.runs("default")]
    for offset in (0, 3, 9):
        total, window = reader.run_window("default", offset=offset, limit=4)
        assert total == len(newest_first) and [r.run_id for r in window] == newest_first[offset:offset + 4]


def _listing_tables(root) -> tuple:
    with sqlite3.connect(root / "index.sqlite") as db:
        return tuple(sorted(db.execute(f"SELECT * FROM {t}").fetchall())
                     for t in ("run_listing", "experiment_listing", "experiment_metrics"))


def test_listings_kept_delivery_by_delivery_equal_a_rebuild(store):
    """The writer recomputes an experiment's row only when a run joins, leaves or changes what it holds: after
    deliveries that add points, move a run's start earlier, move a run to another workspace and complete runs,
    the listings equal those built from scratch."""
    from tau_collector.expstore.write.listing import rebuild_all
    from tau_collector.expstore.write.writer import MetricWriter

    s = open_store(store, writable=True)
    writer = MetricWriter(s)
    for i in range(6):  # more points for runs the listings have: nothing of their experiments' rows changes
        writer.write_chunk(f"more-{i}", [event(i, "loss", 20 + k, 0.5, {"team": "ab"[i % 2]}) for k in range(3)],
                           [], request_hash="h")
    early = event(7, "acc", 1, 0.1, {"team": "b", WORKSPACE_TAG: "other"})
    early.wall_time -= 10**15  # the run started earlier than it said: its run time, and its experiment's, move
    writer.write_chunk("early", [early], [], request_hash="h")
    writer.write_chunk("moved", [event(8, "grad", 3, 1.0, {"team": "a", WORKSPACE_TAG: "other"})], [],
                       request_hash="h")  # r08 was untagged: now in workspace "other"
    writer.write_chunk("new", [event(31, "loss", 0, 1.0, {"team": "b"})], [], request_hash="h")
    writer.mark_completed("r03")
    writer.mark_completed("r31")
    kept = _listing_tables(store)
    with s.write_transaction() as tx:
        rebuild_all(tx)
    s.close()
    rebuilt = _listing_tables(store)
    assert kept == rebuilt
    assert ("r08", "other") in {(r[0], r[1]) for r in kept[0]}  # the move happened, so the comparison means something
    assert "r31" in {r[0] for r in kept[0]}
