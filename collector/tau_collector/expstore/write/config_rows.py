"""The ``configs`` table and ``runs.config_hash``: storing a run's configuration and reading it back.

Writes follow TauGrid's ``ensureConfigRecords`` and ``runRecordCompatible`` (``expstore/record.go``):
a config row is keyed by ``(config_hash, run_id)``; writing the same row again changes nothing; the
same key with other contents, or a run that already has another configuration, is a write conflict
(:class:`ConfigConflictError`) and nothing is written. A run's ``config_hash`` is set when its config
is stored and, for a config stored before the run's first metrics, when the run row is created
(:func:`run_config_hash`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from tau_collector.expstore.store import ExpStore, StoreError
from tau_collector.taugrid.run_config import RunConfig, combined_config_hash, run_config_from_row

__all__ = ["ConfigConflictError", "put_run_config", "read_run_configs", "run_config_hash"]

_COLUMNS = "config_hash, format, uri, coalesce(normalized_json, ''), coalesce(indexed_fields, '')"


class ConfigConflictError(StoreError):
    """A run's configuration differs from the one already stored for it; nothing was written."""


def _conflict(message: str) -> ConfigConflictError:
    # TauGrid's ErrConflict text leads, so its users recognise the message.
    return ConfigConflictError(f"experiment store write conflict: {message}")


def put_run_config(store: ExpStore, run_id: str, config: RunConfig) -> bool:
    """Store ``config`` as the configuration of ``run_id``; True when a row was written, False when it was there.

    Raises :class:`ConfigConflictError` when the run already has another configuration.
    """
    if not (run_id and config.config_hash and config.format and config.uri):
        raise ValueError("config config_hash, run_id, format, and uri are required")
    row = (config.config_hash, config.format, config.uri, config.normalized_json, config.indexed_fields)
    with store.write_transaction() as tx:
        existing = tx.execute(f"SELECT {_COLUMNS} FROM configs WHERE run_id = ? ORDER BY config_hash",
                              (run_id,)).fetchall()
        same = [r for r in existing if r[0] == config.config_hash]
        if same:
            if tuple(same[0]) != row:
                raise _conflict(f"config {config.config_hash!r} for run {run_id!r} already exists with different "
                                f"metadata (stored from {same[0][2]}, now from {config.uri})")
            return False
        if existing:
            old = existing[0]
            raise _conflict(f"run {run_id!r} already has config {old[0]} (from {old[2]}); the config from "
                            f"{config.uri} differs (hash {config.config_hash}), so it was not stored. A changed "
                            "configuration is a new run: give it another run id")
        stored = tx.execute("SELECT config_hash FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if stored is not None and stored[0] and stored[0] != config.config_hash:
            raise _conflict(f"run {run_id!r} already exists with config_hash {stored[0]}; the config from "
                            f"{config.uri} has hash {config.config_hash}, so it was not stored")
        tx.execute(
            "INSERT INTO configs(config_hash, run_id, format, uri, normalized_json, indexed_fields) "
            "VALUES (?, ?, ?, ?, nullif(?, ''), nullif(?, ''))",
            (config.config_hash, run_id, config.format, config.uri, row[3], row[4]),
        )
        tx.execute("UPDATE runs SET config_hash = ? WHERE run_id = ? AND config_hash IS NULL",
                   (config.config_hash, run_id))
    return True


def run_config_hash(tx, run_id: str) -> str | None:
    """The ``config_hash`` a new run row gets from configs already stored for it (None without any)."""
    hashes = [h for (h,) in tx.execute("SELECT config_hash FROM configs WHERE run_id = ?", (run_id,))]
    return combined_config_hash(hashes) if hashes else None


def read_run_configs(conn, run_ids: Iterable[str]) -> dict[str, RunConfig]:
    """The configuration of each of ``run_ids`` that has one, in one query.

    A run TauGrid gave several config files (``exp track --config a.yaml --config b.json``) reads as
    one :class:`RunConfig`: the run's combined hash, the files' values and fields merged in ``uri``
    order (a later file's key wins), their formats and uris joined by ``,``.
    """
    ids = sorted(set(run_ids))
    if not ids:
        return {}
    rows = conn.execute(
        f"SELECT run_id, {_COLUMNS} FROM configs WHERE run_id IN (SELECT value FROM json_each(?)) "
        "ORDER BY run_id, uri, config_hash",
        (json.dumps(ids),),
    ).fetchall()
    grouped: dict[str, list[RunConfig]] = {}
    for run_id, *row in rows:
        grouped.setdefault(run_id, []).append(run_config_from_row(*row))
    out: dict[str, RunConfig] = {}
    for run_id, configs in grouped.items():
        if len(configs) == 1:
            out[run_id] = configs[0]
            continue
        values: dict = {}
        fields: dict = {}
        for config in configs:
            values.update(config.values)
            fields.update(config.fields)
        out[run_id] = RunConfig(
            combined_config_hash(c.config_hash for c in configs),
            ",".join(dict.fromkeys(c.format for c in configs)), ",".join(c.uri for c in configs),
            dict(sorted(values.items())), dict(sorted(fields.items())))  # key-sorted, as each file's are
    return out
