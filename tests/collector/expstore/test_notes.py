"""Notes and tags on runs in TauGrid's ``observations`` and ``tags`` tables: idempotency, edits, search, indexes."""

from __future__ import annotations

import sqlite3

import pytest

from fixtures.listing_store import build_listing_store
from tau_collector.expstore import StoreReader, open_store
from tau_collector.expstore.write import listing
from tau_collector.expstore.write.notes import (
    NoteConflictError,
    RunNotFoundError,
    delete_run_tag,
    read_notes,
    record_note,
    set_run_tag,
)


@pytest.fixture
def store(tmp_path):
    root = build_listing_store(tmp_path / "store")
    s = open_store(root, writable=True)
    yield s
    s.close()


def test_a_note_is_an_observation_row_with_taugrids_columns(store):
    note, created = record_note(store, "r01", "lr too high", author="ana")
    assert created and note.observation_id.startswith("obs-") and len(note.observation_id) == 16
    row = store.connection().execute(
        "SELECT idempotency_key, author, source, type, scope_type, scope_id, text, evidence, created_at "
        "FROM observations WHERE observation_id = ?", (note.observation_id,)).fetchone()
    assert row[:8] == (None, "ana", "human", "observation", "run", "r01", "lr too high", None)
    assert row[8].endswith("Z") and len(row[8]) == 20  # RFC3339 seconds, as TauGrid stamps


def test_several_authors_over_time_are_read_back_in_order(store):
    record_note(store, "r01", "first", author="ana")
    record_note(store, "r01", "second", author="bo")
    record_note(store, "r02", "elsewhere", author="ana")
    notes = read_notes(store.connection(), "r01")
    assert [(n.author, n.text) for n in notes] == [("ana", "first"), ("bo", "second")]
    assert [n.text for n in StoreReader(store.root).notes("r01")] == ["first", "second"]


def test_the_same_idempotency_key_twice_is_one_row(store):
    first, created = record_note(store, "r01", "one", author="ana", idempotency_key="note-k-1")
    again, created_again = record_note(store, "r01", "one", author="ana", idempotency_key="note-k-1")
    assert created and not created_again and again == first
    assert store.connection().execute("SELECT count(*) FROM observations").fetchone()[0] == 1
    key = store.connection().execute("SELECT command, target_type, target_id FROM idempotency_keys WHERE key = ?",
                                     ("note-k-1",)).fetchone()
    assert key == ("taunotebook note", "observation", first.observation_id)


def test_the_same_key_with_another_text_is_a_conflict_and_writes_nothing(store):
    record_note(store, "r01", "one", author="ana", idempotency_key="note-k-1")
    with pytest.raises(NoteConflictError, match="'note-k-1' was used for a different request"):
        record_note(store, "r01", "two", author="ana", idempotency_key="note-k-1")
    assert [n.text for n in read_notes(store.connection(), "r01")] == ["one"]


def test_a_run_the_store_does_not_hold_is_refused(store):
    with pytest.raises(RunNotFoundError, match="no run 'nope'"):
        record_note(store, "nope", "x", author="ana")
    with pytest.raises(RunNotFoundError):
        set_run_tag(store, "nope", "k", "v")


def test_tags_are_set_replaced_and_deleted_and_the_listing_follows(store):
    assert set_run_tag(store, "r01", "verdict", "keep")["verdict"] == "keep"
    assert set_run_tag(store, "r01", "verdict", "drop")["verdict"] == "drop"
    reader = StoreReader(store.root)
    assert reader.run("r01").tags["verdict"] == "drop"
    total, runs = reader.run_window("other", tag=("verdict", "drop"), limit=10)  # r01 is other's
    assert total == 1 and [r.run_id for r in runs] == ["r01"]
    assert "verdict" not in delete_run_tag(store, "r01", "verdict")
    assert delete_run_tag(store, "r01", "verdict") == reader.run("r01").tags  # deleting twice is fine
    assert reader.run_window("other", tag=("verdict", "drop"), limit=10)[0] == 0


def test_runs_are_found_by_their_notes_in_any_case(store):
    record_note(store, "r03", "Diverged after the LR warmup", author="ana")
    record_note(store, "r04", "fine", author="ana")
    reader = StoreReader(store.root)
    for text in ("lr warmup", "DIVERGED", "up"):  # "up": shorter than a trigram, read from the notes
        total, runs = reader.run_window("default", note=text, limit=10)  # r03 is default's
        assert total == 1 and [r.run_id for r in runs] == ["r03"], text
    assert reader.run_window("other", note="warmup", limit=10)[0] == 0
    assert reader.run_window("default", query="warmup", limit=10)[0] == 1  # the free-text search reads notes too
    assert reader.runs_with_note(["r03", "r04"], "WARMUP") == {"r03"}


def test_notes_written_elsewhere_are_indexed_when_a_writer_opens_the_store(store):
    # A note TauGrid's CLI wrote: in observations, not in our search index.
    store.connection().execute(
        "INSERT INTO observations(observation_id, author, source, type, scope_type, scope_id, text, created_at) "
        "VALUES ('obs-tg', 'cli', 'human', 'observation', 'run', 'r05', 'from taugrid', '2026-01-01T00:00:00Z')")
    root = store.root
    store.close()
    open_store(root, writable=True).close()
    assert StoreReader(root).run_window("", note="taugrid", limit=5)[1][0].run_id == "r05"


def _plan(conn: sqlite3.Connection, sql: str, args: list) -> str:
    return " | ".join(r[3] for r in conn.execute("EXPLAIN QUERY PLAN " + sql, args))


@pytest.mark.parametrize(("kind", "value"), [("tag", ("team", "a")), ("note", "warmup")])
def test_tag_and_note_filters_read_an_index_not_every_run(store, kind, value):
    # What keeps them fast at 100,000 runs: the runs come from the tag's or the notes' index and are looked up
    # by id, never found by scanning the run listing.
    conn = store.connection()
    conn.create_function("tau_lower", 1, str.lower, deterministic=True)
    where, args = listing._run_filters(conn, "default", project="", experiment="", group="", run_ids=(), state="",
                                       tag=value if kind == "tag" else None, query="",
                                       note=value if kind == "note" else "")
    plan = _plan(conn, f"SELECT rl.run_id FROM run_listing rl WHERE {where}", args)
    assert "SCAN rl" not in plan and "SEARCH rl USING" in plan, plan
    assert ("idx_tags_key_value" in plan) if kind == "tag" else ("VIRTUAL TABLE INDEX" in plan), plan
