"""The store's SQLite, manifest and Parquet formats are TauGrid's expstore v5 (TAUGRID-REFERENCE §4)."""

from __future__ import annotations

import hashlib
import json
import sqlite3

import pyarrow as pa
import pyarrow.parquet as pq

from tau_collector.expstore import open_store
from tau_collector.expstore.format import schema

from .events import event, new_store

# Written from TAUGRID-REFERENCE §4, not from the code under test. (name, not-null, primary-key position)
EXPECTED_TABLES = {
    "schema_meta": ["key", "value"],
    "idempotency_keys": ["key", "command", "target_type", "target_id", "request_hash", "created_at"],
    "run_groups": ["run_group_id", "project", "name", "created_at", "updated_at"],
    "experiments": ["experiment_id", "project", "name", "description", "source", "created_at", "updated_at"],
    "runs": ["run_id", "project", "experiment_id", "run_group_id", "parent_run_id", "state", "owner",
             "created_at", "started_at", "completed_at", "config_hash", "code_sha", "image_digest",
             "tau_command", "result_uri", "index_version"],
    "run_context": ["run_id", "cluster", "namespace", "team", "profile", "lane", "local_queue", "cluster_queue",
                    "kueue_workload", "pod_uid", "ray_job", "resource_claims", "gpu_class", "gpu_count",
                    "node_names", "mounts", "queue_wait_seconds", "gpu_hours", "estimated_cost", "runtime",
                    "dependencies", "log_uri"],
    "configs": ["config_hash", "run_id", "format", "uri", "normalized_json", "indexed_fields"],
    "artifacts": ["artifact_id", "run_id", "type", "uri", "name", "durable_ref", "content_type", "digest",
                  "size_bytes", "step", "tags", "rank", "created_at", "preview", "external_ref", "caption",
                  "direction", "alias", "source_artifact_id", "source_run_id", "source_dataset_name",
                  "source_dataset_version", "source_dataset_digest"],
    "events": ["event_id", "run_id", "time", "type", "source", "severity", "message", "payload"],
    "observations": ["observation_id", "idempotency_key", "author", "source", "type", "scope_type", "scope_id",
                     "text", "evidence", "created_at"],
    "tags": ["scope_type", "scope_id", "key", "value"],
    "metric_files": ["file_id", "path", "format", "schema_version", "schema_hash", "project", "run_group_id",
                     "run_id", "row_count", "digest", "min_step", "max_step", "created_at"],
    "metric_summaries": ["run_id", "metric_name", "project", "run_group_id", "count", "finite_count",
                         "non_finite_count", "min_step", "max_step", "latest_step", "latest_wall_time",
                         "latest_value", "min_value", "max_value", "updated_at", "latest_file_id"],
    "metric_summary_files": ["file_id", "run_id", "summarized_at"],
}
EXPECTED_PRIMARY_KEYS = {
    "configs": ["config_hash", "run_id"],
    "tags": ["scope_type", "scope_id", "key"],
    "metric_summaries": ["run_id", "metric_name"],
}
EXPECTED_NULLABLE = {
    "experiments": {"description"},
    "runs": {"parent_run_id", "owner", "started_at", "completed_at", "config_hash", "code_sha", "image_digest",
             "tau_command", "result_uri"},
    "metric_summaries": {"project", "run_group_id", "min_step", "max_step", "latest_step", "latest_wall_time",
                         "latest_value", "min_value", "max_value", "latest_file_id"},
}
EXPECTED_INDEXES = {
    ("runs", ("run_group_id",)),
    ("runs", ("state",)),
    ("runs", ("experiment_id",)),
    ("experiments", ("project",)),
    ("metric_files", ("run_id",)),
    ("metric_summaries", ("metric_name",)),
    ("metric_summaries", ("run_group_id",)),
    ("artifacts", ("run_id",)),
    ("events", ("run_id", "time")),
    ("observations", ("scope_type", "scope_id")),
}


def _db(tmp_path) -> sqlite3.Connection:
    open_store(tmp_path / "s", create=True).close()
    return sqlite3.connect(tmp_path / "s" / "index.sqlite")


def test_every_taugrid_table_has_its_columns_in_order(tmp_path):
    db = _db(tmp_path)
    for table, columns in EXPECTED_TABLES.items():
        assert [r[1] for r in db.execute(f"PRAGMA table_info({table})")] == columns, table


def test_primary_keys_and_nullability_follow_taugrid(tmp_path):
    db = _db(tmp_path)
    for table, columns in EXPECTED_TABLES.items():
        info = db.execute(f"PRAGMA table_info({table})").fetchall()
        pk = [r[1] for r in sorted((r for r in info if r[5]), key=lambda r: r[5])]
        assert pk == EXPECTED_PRIMARY_KEYS.get(table, [columns[0]]), table
        if table in EXPECTED_NULLABLE:
            nullable = {r[1] for r in info if not r[3] and not r[5]}
            assert nullable == EXPECTED_NULLABLE[table], table
    runs = {r[1]: r for r in db.execute("PRAGMA table_info(runs)")}
    assert runs["experiment_id"][4] == "''"


def test_taugrid_indexes_exist(tmp_path):
    db = _db(tmp_path)
    found = set()
    for (name, table) in db.execute("SELECT name, tbl_name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"):
        found.add((table, tuple(r[2] for r in db.execute(f"PRAGMA index_info({name})"))))
    assert EXPECTED_INDEXES <= found


def test_schema_meta_rows_and_wal_mode(tmp_path):
    db = _db(tmp_path)
    assert dict(db.execute("SELECT key, value FROM schema_meta")) == {
        "schema_version": "expstore.v5",
        "metric_schema_version": "tau.metrics.scalar.v2",
        "metric_schema_columns": "project,run_group_id,run_id,metric_name,step,wall_time,value,unit,source,split,tags",
        "listing_version": "1",  # ours: the run listings are built (listing.py); TauGrid reads only its keys
        "orphaned_file_rows_swept": "1",  # ours: an older store's orphaned file rows are gone (index_orphans.py)
    }
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_manifest_and_directories(tmp_path):
    open_store(tmp_path / "s", create=True).close()
    manifest = json.loads((tmp_path / "s" / "manifest.json").read_text())
    assert manifest["schema_version"] == "expstore.v5"
    assert manifest["kind"] == "tau.exp.store"
    assert {k: manifest[k] for k in ("index", "append_log_dir", "metrics_dir", "artifacts_dir")} == {
        "index": "index.sqlite", "append_log_dir": "append-log", "metrics_dir": "metrics", "artifacts_dir": "artifacts",
    }
    assert manifest["created_at"].endswith("Z")
    for name in ("metrics", "append-log", "artifacts"):
        assert (tmp_path / "s" / name).is_dir()


def test_schema_hash_is_sha256_of_the_comma_joined_columns():
    cols = "project,run_group_id,run_id,metric_name,step,wall_time,value,unit,source,split,tags"
    assert schema.METRIC_SCHEMA_HASH == hashlib.sha256(cols.encode()).hexdigest()


def test_written_parquet_file_has_the_scalar_v2_schema(tmp_path):
    store, writer = new_store(tmp_path)
    result = writer.write_chunk("k", [event(1, 0.5, tags={"a": "b"})], [], request_hash="h")
    (path,) = [r[0] for r in store.connection().execute("SELECT path FROM metric_files")]
    assert path == f"metrics/project=proj/experiment=exp-a/group=baseline/run=seed-1/{result.file_ids[0]}.parquet"
    pf = pq.ParquetFile(store.root / path)
    assert pf.schema_arrow.names == list(schema.METRIC_SCHEMA_COLUMNS)
    fields = {c.name: c for c in (pf.schema.column(i) for i in range(len(pf.schema)))}
    assert fields["step"].max_definition_level == 1  # optional
    assert fields["project"].max_definition_level == 0  # required
    assert fields["value"].physical_type == "DOUBLE"
    assert "JSON" in str(fields["tags"].logical_type)
    wall = fields["wall_time"].logical_type
    assert "Timestamp" in str(wall) and "isAdjustedToUTC=true" in str(wall) and "microseconds" in str(wall)
    table = pq.read_table(store.root / path)
    assert table.column("wall_time").type == pa.timestamp("us", tz="UTC")
    assert table.column("tags").to_pylist() == ['{"a":"b"}']
    row = store.connection().execute(
        "SELECT format, schema_version, schema_hash, row_count, min_step, max_step FROM metric_files"
    ).fetchone()
    assert row == ("parquet", "tau.metrics.scalar.v2", schema.METRIC_SCHEMA_HASH, 1, 1, 1)


def _plan(db: sqlite3.Connection, sql: str, args: tuple) -> str:
    return " | ".join(r[3] for r in db.execute("EXPLAIN QUERY PLAN " + sql, args))


def test_an_image_by_digest_and_a_runs_configs_are_found_by_index_and_an_older_store_gets_the_indexes(tmp_path):
    db = _db(tmp_path)
    image = _plan(db, "SELECT artifact_id FROM artifacts WHERE run_id = ? AND type = ? AND digest = ? "
                      "ORDER BY artifact_id LIMIT 1", ("r", "image", "sha256:00"))
    assert "USING INDEX idx_artifacts_run_type_digest (run_id=? AND type=? AND digest=?)" in image, image
    configs = _plan(db, "SELECT config_hash FROM configs WHERE run_id = ?", ("r",))
    assert "USING INDEX idx_configs_run (run_id=?)" in configs, configs
    many = _plan(db, "SELECT run_id FROM configs WHERE run_id IN (SELECT value FROM json_each(?))", ('["r"]',))
    assert "idx_configs_run" in many and "SCAN configs" not in many, many
    db.execute("DROP INDEX idx_artifacts_run_type_digest")  # a store written before these indexes
    db.execute("DROP INDEX idx_configs_run")
    db.commit()
    db.close()
    open_store(tmp_path / "s", writable=True).close()  # a writer's open adds them (readers never migrate)
    names = {n for (n,) in sqlite3.connect(tmp_path / "s" / "index.sqlite").execute(
        "SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert {"idx_artifacts_run_type_digest", "idx_configs_run"} <= names
