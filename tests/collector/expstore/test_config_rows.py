"""Storing a run's configuration: TauGrid's configs rows, runs.config_hash, idempotency, conflicts, reads."""

from __future__ import annotations

import sqlite3

import pytest

from tau_collector.expstore import ConfigConflictError, StoreReader
from tau_collector.taugrid.run_config import run_config

from .events import event, new_store


def _config(lr: float, uri: str = "/runs/seed-1/params.json"):
    return run_config({"lr": lr, "optimizer": {"name": "adam"}}, format="json", uri=uri)


def _rows(store) -> list[tuple]:
    with sqlite3.connect(store.index_path) as conn:
        return conn.execute("SELECT config_hash, run_id, format, uri, normalized_json, indexed_fields "
                            "FROM configs ORDER BY run_id").fetchall()


def test_a_config_stored_before_the_run_gives_the_new_run_its_hash(tmp_path):
    store, writer = new_store(tmp_path)
    config = _config(0.1)
    assert writer.put_run_config("seed-1", config) is True
    writer.write_chunk("k", [event(0, 1.0)], [], request_hash="h")
    reader = StoreReader(store)
    assert reader.run("seed-1").config_hash == config.config_hash
    assert _rows(store) == [(config.config_hash, "seed-1", "json", "/runs/seed-1/params.json",
                             '{"lr":0.1,"optimizer":{"name":"adam"}}', '{"lr":0.1,"optimizer.name":"adam"}')]
    assert reader.run_config("seed-1") == config


def test_a_config_stored_after_the_first_metrics_sets_the_run_hash(tmp_path):
    store, writer = new_store(tmp_path)
    writer.write_chunk("k", [event(0, 1.0)], [], request_hash="h")
    assert StoreReader(store).run("seed-1").config_hash is None
    config = _config(0.1)
    writer.put_run_config("seed-1", config)
    assert StoreReader(store).run("seed-1").config_hash == config.config_hash


def test_storing_the_same_config_again_changes_nothing(tmp_path):
    store, writer = new_store(tmp_path)
    writer.put_run_config("seed-1", _config(0.1))
    before = _rows(store)
    assert writer.put_run_config("seed-1", _config(0.1)) is False
    assert _rows(store) == before


def test_a_changed_config_for_the_same_run_is_a_write_conflict(tmp_path):
    store, writer = new_store(tmp_path)
    writer.write_chunk("k", [event(0, 1.0)], [], request_hash="h")
    first = _config(0.1)
    writer.put_run_config("seed-1", first)
    with pytest.raises(ConfigConflictError, match=r"experiment store write conflict: run 'seed-1' already has "
                                                  rf"config {first.config_hash}"):
        writer.put_run_config("seed-1", _config(0.2))
    assert [r[0] for r in _rows(store)] == [first.config_hash]
    assert StoreReader(store).run("seed-1").config_hash == first.config_hash


def test_the_same_config_from_another_uri_is_a_conflict_by_taugrids_rule(tmp_path):
    _, writer = new_store(tmp_path)
    writer.put_run_config("seed-1", _config(0.1))
    with pytest.raises(ConfigConflictError, match="already exists with different metadata"):
        writer.put_run_config("seed-1", _config(0.1, uri="/elsewhere/params.json"))


def test_a_run_whose_hash_was_set_by_taugrid_refuses_another_config(tmp_path):
    store, writer = new_store(tmp_path)
    writer.write_chunk("k", [event(0, 1.0)], [], request_hash="h")
    with store.write_transaction() as tx:
        tx.execute("UPDATE runs SET config_hash = 'from-a-script-hash' WHERE run_id = 'seed-1'")
    with pytest.raises(ConfigConflictError, match="already exists with config_hash from-a-script-hash"):
        writer.put_run_config("seed-1", _config(0.1))
    assert _rows(store) == []


def test_a_run_without_config_reads_as_none(tmp_path):
    store, writer = new_store(tmp_path)
    writer.write_chunk("k", [event(0, 1.0)], [], request_hash="h")
    assert StoreReader(store).run_config("seed-1") is None
    assert StoreReader(store).run_configs(["seed-1", "no-such-run"]) == {}


def test_run_configs_reads_a_thousand_runs_in_one_query(tmp_path):
    store, writer = new_store(tmp_path)
    configs = {f"run-{i}": _config(i / 1000, uri=f"/sweep/run-{i}/params.json") for i in range(1000)}
    for run_id, config in configs.items():
        writer.put_run_config(run_id, config)
    reader = StoreReader(store)
    statements: list[str] = []
    conn = store.connection()
    conn.set_trace_callback(statements.append)
    try:
        got = reader.run_configs([*configs, "run-none"])
    finally:
        conn.set_trace_callback(None)
    assert got == configs
    assert len([s for s in statements if "FROM configs" in s]) == 1
    assert got["run-7"].fields == {"lr": 0.007, "optimizer.name": "adam"}


def test_a_taugrid_row_with_several_configs_reads_as_one(tmp_path):
    store, writer = new_store(tmp_path)
    writer.write_chunk("k", [event(0, 1.0)], [], request_hash="h")
    a = run_config({"lr": 0.1, "seed": 1}, format="yaml", uri="a.yaml")
    b = run_config({"seed": 2, "width": 8, "arch": "mlp"}, format="json", uri="b.json")
    with store.write_transaction() as tx:
        for c in (a, b):
            tx.execute("INSERT INTO configs VALUES (?, 'seed-1', ?, ?, ?, ?)",
                       (c.config_hash, c.format, c.uri, c.normalized_json, c.indexed_fields))
    got = StoreReader(store).run_config("seed-1")
    assert got.values == {"arch": "mlp", "lr": 0.1, "seed": 2, "width": 8}
    assert list(got.values) == list(got.fields) == ["arch", "lr", "seed", "width"]  # sorted, as one file's
    assert (got.format, got.uri) == ("yaml,json", "a.yaml,b.json")
    from tau_collector.taugrid.run_config import combined_config_hash

    assert got.config_hash == combined_config_hash([a.config_hash, b.config_hash])
