"""TauGrid's expstore formats: ``index.sqlite`` DDL, ``manifest.json``, Parquet ``tau.metrics.scalar.v2``."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "EXTENSION_SQL",
    "INDEX_FILE",
    "INDEX_SQL",
    "MANIFEST_FILE",
    "METRIC_FILE_FORMAT",
    "METRIC_SCHEMA_COLUMNS",
    "METRIC_SCHEMA_HASH",
    "METRIC_SCHEMA_VERSION",
    "SCHEMA_SQL",
    "SCHEMA_VERSION",
    "STORE_KIND",
    "metric_arrow_schema",
    "new_manifest",
    "schema_meta_rows",
]

SCHEMA_VERSION = "expstore.v5"
STORE_KIND = "tau.exp.store"
MANIFEST_FILE = "manifest.json"
INDEX_FILE = "index.sqlite"
APPEND_LOG_DIR = "append-log"
METRICS_DIR = "metrics"
ARTIFACTS_DIR = "artifacts"
METRIC_FILE_FORMAT = "parquet"

METRIC_SCHEMA_VERSION = "tau.metrics.scalar.v2"
METRIC_SCHEMA_COLUMNS = (
    "project",
    "run_group_id",
    "run_id",
    "metric_name",
    "step",
    "wall_time",
    "value",
    "unit",
    "source",
    "split",
    "tags",
)
METRIC_SCHEMA_HASH = hashlib.sha256(",".join(METRIC_SCHEMA_COLUMNS).encode()).hexdigest()

# TauGrid's tables, column for column and constraint for constraint (portal/internal/expstore/schema.go):
# a store written here opens in TauGrid's Portal and the other way round.
SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS schema_meta (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS idempotency_keys (
  key TEXT PRIMARY KEY,
  command TEXT NOT NULL,
  target_type TEXT NOT NULL,
  target_id TEXT NOT NULL,
  request_hash TEXT NOT NULL,
  created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS run_groups (
  run_group_id TEXT PRIMARY KEY,
  project TEXT NOT NULL,
  name TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS experiments (
  experiment_id TEXT PRIMARY KEY,
  project TEXT NOT NULL,
  name TEXT NOT NULL,
  description TEXT,
  source TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS runs (
  run_id TEXT PRIMARY KEY,
  project TEXT NOT NULL,
  experiment_id TEXT NOT NULL DEFAULT '',
  run_group_id TEXT NOT NULL,
  parent_run_id TEXT,
  state TEXT NOT NULL,
  owner TEXT,
  created_at TEXT NOT NULL,
  started_at TEXT,
  completed_at TEXT,
  config_hash TEXT,
  code_sha TEXT,
  image_digest TEXT,
  tau_command TEXT,
  result_uri TEXT,
  index_version TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS run_context (
  run_id TEXT PRIMARY KEY,
  cluster TEXT,
  namespace TEXT,
  team TEXT,
  profile TEXT,
  lane TEXT,
  local_queue TEXT,
  cluster_queue TEXT,
  kueue_workload TEXT,
  pod_uid TEXT,
  ray_job TEXT,
  resource_claims TEXT,
  gpu_class TEXT,
  gpu_count INTEGER,
  node_names TEXT,
  mounts TEXT,
  queue_wait_seconds REAL,
  gpu_hours REAL,
  estimated_cost REAL,
  runtime TEXT,
  dependencies TEXT,
  log_uri TEXT
);
CREATE TABLE IF NOT EXISTS configs (
  config_hash TEXT NOT NULL,
  run_id TEXT NOT NULL,
  format TEXT NOT NULL,
  uri TEXT NOT NULL,
  normalized_json TEXT,
  indexed_fields TEXT,
  PRIMARY KEY (config_hash, run_id)
);
CREATE TABLE IF NOT EXISTS artifacts (
  artifact_id TEXT PRIMARY KEY,
  run_id TEXT NOT NULL,
  type TEXT NOT NULL,
  uri TEXT NOT NULL,
  name TEXT NOT NULL,
  durable_ref TEXT,
  content_type TEXT,
  digest TEXT,
  size_bytes INTEGER,
  step INTEGER,
  tags TEXT,
  rank INTEGER,
  created_at TEXT NOT NULL,
  preview TEXT,
  external_ref TEXT,
  caption TEXT,
  direction TEXT,
  alias TEXT,
  source_artifact_id TEXT,
  source_run_id TEXT,
  source_dataset_name TEXT,
  source_dataset_version TEXT,
  source_dataset_digest TEXT
);
CREATE TABLE IF NOT EXISTS events (
  event_id TEXT PRIMARY KEY,
  run_id TEXT NOT NULL,
  time TEXT NOT NULL,
  type TEXT NOT NULL,
  source TEXT NOT NULL,
  severity TEXT NOT NULL,
  message TEXT NOT NULL,
  payload TEXT
);
CREATE TABLE IF NOT EXISTS observations (
  observation_id TEXT PRIMARY KEY,
  idempotency_key TEXT,
  author TEXT NOT NULL,
  source TEXT NOT NULL,
  type TEXT NOT NULL,
  scope_type TEXT NOT NULL,
  scope_id TEXT NOT NULL,
  text TEXT NOT NULL,
  evidence TEXT,
  created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS tags (
  scope_type TEXT NOT NULL,
  scope_id TEXT NOT NULL,
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  PRIMARY KEY (scope_type, scope_id, key)
);
CREATE TABLE IF NOT EXISTS metric_files (
  file_id TEXT PRIMARY KEY,
  path TEXT NOT NULL,
  format TEXT NOT NULL,
  schema_version TEXT NOT NULL,
  schema_hash TEXT,
  project TEXT,
  run_group_id TEXT,
  run_id TEXT,
  row_count INTEGER,
  digest TEXT,
  min_step INTEGER,
  max_step INTEGER,
  created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS metric_summaries (
  run_id TEXT NOT NULL,
  metric_name TEXT NOT NULL,
  project TEXT,
  run_group_id TEXT,
  count INTEGER NOT NULL,
  finite_count INTEGER NOT NULL,
  non_finite_count INTEGER NOT NULL,
  min_step INTEGER,
  max_step INTEGER,
  latest_step INTEGER,
  latest_wall_time INTEGER,
  latest_value REAL,
  min_value REAL,
  max_value REAL,
  updated_at TEXT NOT NULL,
  latest_file_id TEXT,
  PRIMARY KEY (run_id, metric_name)
);
CREATE TABLE IF NOT EXISTS metric_summary_files (
  file_id TEXT PRIMARY KEY,
  run_id TEXT,
  summarized_at TEXT NOT NULL
);
"""

INDEX_SQL = """
CREATE INDEX IF NOT EXISTS idx_runs_group ON runs(run_group_id);
CREATE INDEX IF NOT EXISTS idx_runs_state ON runs(state);
CREATE INDEX IF NOT EXISTS idx_runs_experiment ON runs(experiment_id);
CREATE INDEX IF NOT EXISTS idx_experiments_project ON experiments(project);
CREATE INDEX IF NOT EXISTS idx_metric_files_run ON metric_files(run_id);
CREATE INDEX IF NOT EXISTS idx_metric_summaries_metric ON metric_summaries(metric_name);
CREATE INDEX IF NOT EXISTS idx_metric_summaries_group ON metric_summaries(run_group_id);
CREATE INDEX IF NOT EXISTS idx_artifacts_run ON artifacts(run_id);
CREATE INDEX IF NOT EXISTS idx_events_run_time ON events(run_id, time);
CREATE INDEX IF NOT EXISTS idx_observations_scope ON observations(scope_type, scope_id);
"""

# Ours, added beside TauGrid's tables (never changing them). Compaction retires metric files in
# the same transaction that registers their replacement, and deletes them from disk only after a
# grace period because a reader may still hold the old file list. The run and experiment listings
# (``listing.py``) are derived from the runs, tags and summaries, kept by the writer in the same
# transaction, so that a search or a runs table of 100,000 runs is answered from indexes. TauGrid
# ignores these tables.
EXTENSION_SQL = """
CREATE TABLE IF NOT EXISTS metric_file_retirements (
  file_id TEXT PRIMARY KEY,
  path TEXT NOT NULL,
  run_id TEXT,
  replaced_by TEXT NOT NULL,
  retired_at TEXT NOT NULL,
  retired_unix REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_metric_file_retirements_time ON metric_file_retirements(retired_unix);
""" + """
CREATE TABLE IF NOT EXISTS run_listing (
  run_id TEXT PRIMARY KEY,
  workspace TEXT NOT NULL,
  project TEXT NOT NULL,
  experiment_id TEXT NOT NULL,
  run_group_id TEXT NOT NULL,
  state TEXT NOT NULL,
  lifecycle_state TEXT NOT NULL,
  created_at TEXT NOT NULL,
  run_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_run_listing_experiment ON run_listing(experiment_id, workspace, lifecycle_state, state,
  run_group_id);
CREATE INDEX IF NOT EXISTS idx_run_listing_created ON run_listing(created_at DESC, run_id, workspace);
CREATE INDEX IF NOT EXISTS idx_run_listing_workspace ON run_listing(workspace, project, experiment_id, run_group_id);
CREATE TABLE IF NOT EXISTS experiment_listing (
  experiment_id TEXT NOT NULL,
  workspace TEXT NOT NULL,
  project TEXT NOT NULL,
  run_count INTEGER NOT NULL,
  latest_run_at TEXT NOT NULL,
  first_created_at TEXT NOT NULL,
  last_created_at TEXT NOT NULL,
  PRIMARY KEY (experiment_id, workspace)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS experiment_metrics (
  experiment_id TEXT NOT NULL,
  workspace TEXT NOT NULL,
  metric_name TEXT NOT NULL,
  PRIMARY KEY (experiment_id, workspace, metric_name)
) WITHOUT ROWID;
-- Ours too: the first and last metric name a metric file holds (its rows are sorted by name), so a reader
-- of one metric skips the files that cannot hold it without opening them. A file without a row here
-- (written by TauGrid or before this table) is opened, as before.
CREATE TABLE IF NOT EXISTS metric_file_metrics (
  file_id TEXT PRIMARY KEY,
  run_id TEXT NOT NULL,
  first_metric TEXT NOT NULL,
  last_metric TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_metric_file_metrics_run ON metric_file_metrics(run_id);
-- Ours too, on TauGrid's tags table (an index, not a change to the table): a runs table filtered by one tag
-- finds its runs from the tag, not by probing every run of the workspace.
CREATE INDEX IF NOT EXISTS idx_tags_key_value ON tags(key, value, scope_type, scope_id);
-- Ours too, on TauGrid's artifacts and configs (indexes, not changes to the tables: a store opened here gets them
-- if it lacks them). A run's image is found by its digest without reading the run's other rows, and a run's
-- configs (the runs table, parameter importance) without reading every run's. (No semicolons in comments here:
-- the script is split on them.)
CREATE INDEX IF NOT EXISTS idx_artifacts_run_type_digest ON artifacts(run_id, type, digest);
CREATE INDEX IF NOT EXISTS idx_configs_run ON configs(run_id);
-- A run's images of one tag near a step (the step cursor's two lookups and the rows at the step) are found the
-- same way, not by reading every artifact of the run (100,000 for 10 image tags × 10,000 steps: ~40 ms a query).
CREATE INDEX IF NOT EXISTS idx_artifacts_run_type_name_step ON artifacts(run_id, type, name, step);
-- Ours: a run's histograms and text (docs/media.md), a row per tag of each delivered chunk (its file under media/).
-- A store without this table (written before it, or by TauGrid) has none: readers answer empty.
CREATE TABLE IF NOT EXISTS media_files (
  file_id TEXT PRIMARY KEY,
  run_id TEXT NOT NULL,
  kind TEXT NOT NULL,
  tag TEXT NOT NULL,
  path TEXT NOT NULL,
  row_count INTEGER NOT NULL,
  step_min INTEGER NOT NULL,
  step_max INTEGER NOT NULL,
  created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_media_files_tag ON media_files(run_id, kind, tag, step_min);
-- Ours too: the row groups of a media file that hold one tag (a media_files row of a file of every tag of a
-- delivery). A media_files row without one (the first layout: a file per tag) is read whole.
CREATE TABLE IF NOT EXISTS media_tag_groups (
  file_id TEXT PRIMARY KEY,
  group_first INTEGER NOT NULL,
  group_last INTEGER NOT NULL
);
-- Ours too: which spool stream and sequence recorded each chunk key (``idempotency_keys`` is TauGrid's and
-- keeps its shape), and each stream's newest sequence, so that the writer prunes the keys no spool can
-- replay any more (``write/idempotency.py``). Keys recorded without a stream (imports) are not here.
CREATE TABLE IF NOT EXISTS idempotency_streams (
  stream TEXT PRIMARY KEY,
  last_sequence INTEGER NOT NULL,
  updated_at TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS idempotency_stream_keys (
  stream TEXT NOT NULL,
  sequence INTEGER NOT NULL,
  key TEXT NOT NULL,
  PRIMARY KEY (stream, sequence, key)
) WITHOUT ROWID;
"""


def schema_meta_rows() -> list[tuple[str, str]]:
    return [
        ("schema_version", SCHEMA_VERSION),
        ("metric_schema_version", METRIC_SCHEMA_VERSION),
        ("metric_schema_columns", ",".join(METRIC_SCHEMA_COLUMNS)),
    ]


def new_manifest(now: str, *, project: str = "", experiment_id: str = "") -> dict[str, str]:
    """TauGrid's manifest shape; ``project``/``experiment_id`` are omitted when empty (omitempty)."""
    manifest = {"schema_version": SCHEMA_VERSION, "kind": STORE_KIND}
    if project:
        manifest["project"] = project
    if experiment_id:
        manifest["experiment_id"] = experiment_id
    manifest.update(
        {
            "created_at": now,
            "updated_at": now,
            "index": INDEX_FILE,
            "append_log_dir": APPEND_LOG_DIR,
            "metrics_dir": METRICS_DIR,
            "artifacts_dir": ARTIFACTS_DIR,
        }
    )
    return manifest


def metric_arrow_schema() -> pa.Schema:
    """``MetricRow`` as TauGrid's parquet-go tags declare it.

    Untagged Go fields are required columns, ``optional`` ones nullable; ``timestamp(microsecond)``
    is parquet-go's UTC-adjusted TIMESTAMP(MICROS); ``tags`` carries the JSON logical type, which
    pyarrow writes for its ``arrow.json`` extension type.
    """
    import pyarrow as pa  # here, not at the top: opening a store must not load pyarrow

    return pa.schema(
        [
            pa.field("project", pa.string(), nullable=False),
            pa.field("run_group_id", pa.string(), nullable=False),
            pa.field("run_id", pa.string(), nullable=False),
            pa.field("metric_name", pa.string(), nullable=False),
            pa.field("step", pa.int64(), nullable=True),
            pa.field("wall_time", pa.timestamp("us", tz="UTC"), nullable=True),
            pa.field("value", pa.float64(), nullable=False),
            pa.field("unit", pa.string(), nullable=True),
            pa.field("source", pa.string(), nullable=False),
            pa.field("split", pa.string(), nullable=True),
            pa.field("tags", pa.json_(pa.string()), nullable=False),
        ]
    )
