"""The W&B sources: a run folder's ``files/wandb-history.jsonl``, or its ``run-<id>.wandb`` log; nested dicts
flattened as ``a.b``.

W&B's history rows are house rows (``_step``, ``_timestamp`` with its fraction); a logged dict
shows in W&B as ``val.acc``, so it is flattened with ``.``. Histograms and images (``_type``
``histogram``, ``image-file``, ``images/separated``) become the batch's media (:mod:`.wandb_media`; image
files read from the run's ``files/``); other ``_type`` values (tables…) are counted as dropped
(``wandb_table``, ``wandb_audio``…, else ``wandb_media``). The file is read in bounded batches like any
history file (:mod:`.jsonl`), a batch's image bytes bounded like its source bytes (``batch_bytes``).

The run's configuration is ``files/config.yaml``: W&B writes each key as ``{desc, value}`` beside
its bookkeeping (``wandb_version``, ``_wandb``); the configuration stored is the values (what
``wandb.config`` held), read by TauGrid's YAML rules (:mod:`tau_collector.taugrid.config_yaml`),
with the file as its ``uri``.

wandb's current client writes no history file: an offline or synced run folder holds its transaction
log ``run-<id>.wandb`` (:mod:`.wandb_log`), read by :class:`WandbLogSource` in bounded batches from
checkpoints like an event file (a torn tail is read again later; a checksum mismatch stops the file).
Its history rows are flattened and their media read as the JSONL rows' are (image paths relative to the
``files/`` beside the log). Its config (the run
record's and every later update), summary and identity (run id, project, display name) come from a
scan of the log's other records, kept incrementally.
"""

from __future__ import annotations

import glob
import os
import re
from typing import Any

from tau_collector.sources.base import Batch, Position, Source, SourceInput, hash_range
from tau_collector.sources.flatten import NESTED_TOO_DEEP, flatten_rows
from tau_collector.sources.history import history_input, read_history_batch
from tau_collector.sources.jsonl import history_metric_file_id
from tau_collector.sources.leveldb_log import LogRead, LogStop, read_log
from tau_collector.sources.read_limits import DEFAULT_LIMITS, Limits
from tau_collector.sources.records import HistoryRow, ProblemKind, SourceProblem
from tau_collector.sources.wandb_log import (
    FILE_HEADER,
    METADATA_KINDS,
    WandbRunInfo,
    apply_items,
    decode_record,
    record_kind,
)
from tau_collector.sources.wandb_media import ImageWaits, media_files, media_scope, take_media
from tau_collector.taugrid.run_config import ConfigError, RunConfig, parse_config, read_config_bytes, run_config

__all__ = ["WANDB_CONFIG", "WANDB_HISTORY", "WandbLogSource", "WandbSource", "wandb_config_values", "wandb_logs"]

WANDB_HISTORY = os.path.join("files", "wandb-history.jsonl")
WANDB_CONFIG = os.path.join("files", "config.yaml")
WANDB_BOOKKEEPING = frozenset({"wandb_version", "_wandb"})


def wandb_config_values(document: object, where: str) -> dict:
    """``wandb.config`` from a decoded ``config.yaml``: bookkeeping keys dropped, ``{desc, value}`` unwrapped."""
    if not isinstance(document, dict):
        raise ConfigError(f"{where}: a W&B config.yaml holds a mapping of keys to {{desc, value}}")
    values = {}
    for key, item in document.items():
        if key in WANDB_BOOKKEEPING:
            continue
        if isinstance(item, dict) and "value" in item and set(item) <= {"desc", "value"}:
            item = item["value"]
        values[key] = item
    return values


class WandbSource(Source):
    kind = "wandb"

    def __init__(self, run_folder: str, *, limits: Limits = DEFAULT_LIMITS) -> None:
        super().__init__(limits)
        self.run_folder = os.path.abspath(run_folder)
        self.history = os.path.join(self.run_folder, WANDB_HISTORY)
        self.image_waits = ImageWaits()  # a live row's image file not written yet: the row is read again

    @staticmethod
    def detect(directory: str) -> bool:
        return os.path.isfile(os.path.join(directory, WANDB_HISTORY))

    def inputs(self, changed: set[str] | None = None) -> list[SourceInput]:
        if changed is not None and self.history not in changed:
            return []
        return [history_input(self.history)]

    def read(self, source_input: SourceInput, start: Position, *, final: bool, prefix_hash: Any = None) -> Batch:
        batch = read_history_batch(self, source_input, start, final=final, prefix_hash=None)
        rows = take_media(batch, batch.rows, media_scope(os.path.dirname(source_input.path), self.limits),
                          image_budget=self.limits.batch_bytes, final=final, waits=self.image_waits)
        if prefix_hash is not None and batch.end.offset > start.offset:  # after take_media, which may end it sooner
            hash_range(prefix_hash, source_input.path, start.offset, batch.end.offset)
        batch.rows, too_deep = flatten_rows(rows, separator=".", max_depth=self.limits.max_depth)
        if too_deep:
            batch.drop(NESTED_TOO_DEEP, too_deep)
        return batch

    def owns(self, path: str) -> bool:
        return path == self.history

    def kept_files(self, source_input: SourceInput) -> list[tuple[str, str]]:
        """The run's ``files/media/``, named relative to ``files/`` (where the history and its image paths are)."""
        return media_files(os.path.dirname(source_input.path))

    def run_config(self) -> RunConfig | None:
        """The run's ``wandb.config`` from ``files/config.yaml``; None without the file or without values."""
        path = os.path.join(self.run_folder, WANDB_CONFIG)
        if not os.path.isfile(path):
            return None
        values = wandb_config_values(parse_config(read_config_bytes(path), "yaml", path), path)
        return run_config(values, format="yaml", uri=path) if values else None


_LOG_NAME = re.compile(r"run-[^/]+\.wandb")
_META_BATCH = 4 * 1024 * 1024


# Where a watched W&B directory holds run logs: in itself (a run folder), in its run folders (``wandb/``),
# or in the run folders of its ``wandb/`` (``WANDB_DIR``).
_WATCHED_DEPTHS = ((), ("*",), ("wandb", "*"))


def wandb_logs(directory: str, depths: tuple[tuple[str, ...], ...] = ((),)) -> list[str]:
    """The ``run-<id>.wandb`` logs directly in ``directory`` (or in its sub-directories ``depths`` name), sorted.

    A sub-directory that is a symbolic link (W&B's ``wandb/latest-run``) is passed over: the run folder it
    points to is found under its own name, and one log read under two paths would deliver its points twice.
    """
    found = set()
    for parts in depths:
        pattern = os.path.join(glob.escape(directory), *parts, "run-*.wandb")
        found.update(p for p in glob.glob(pattern) if _LOG_NAME.fullmatch(os.path.basename(p)) and os.path.isfile(p)
                     and not (parts and os.path.islink(os.path.dirname(p))))
    return sorted(found)


def _at_depth(parts: tuple[str, ...], depth: tuple[str, ...]) -> bool:
    """Whether directory ``parts`` (relative to a watched directory) match ``depth`` (names, or ``*`` for any)."""
    if len(parts) != len(depth) or os.pardir in parts:
        return False
    return all(want in ("*", part) for want, part in zip(depth, parts, strict=True))


class WandbLogSource(Source):
    """A W&B run folder's ``run-<id>.wandb`` transaction log(s): history rows, config, summary, identity.

    ``watched``: the folder is a directory the sidecar watches (``--wandb``), whose run folders may
    appear later: its logs are those in it, in its sub-directories, and in those of its ``wandb/``.
    """

    kind = "wandb"
    artifact_type = "wandb-log"

    def __init__(self, run_folder: str, *, watched: bool = False, limits: Limits = DEFAULT_LIMITS) -> None:
        super().__init__(limits)
        self.run_folder = os.path.abspath(run_folder)
        self._depths = _WATCHED_DEPTHS if watched else ((),)
        # The metadata scan: per log, how far it read and the record count there.
        self._scanned: dict[str, tuple[int, int]] = {}
        self._config: dict[str, Any] = {}
        self._summary: dict[str, Any] = {}
        self._info: WandbRunInfo | None = None
        self.image_waits = ImageWaits()  # a live row's image file not written yet: the row is read again

    @staticmethod
    def detect(directory: str) -> bool:
        return bool(wandb_logs(directory))

    def logs(self) -> list[str]:
        return wandb_logs(self.run_folder, self._depths)

    def inputs(self, changed: set[str] | None = None) -> list[SourceInput]:
        logs = self.logs()
        if changed is not None:
            logs = [p for p in logs if p in changed]
        return [SourceInput(p, history_metric_file_id(p), p) for p in logs]

    def owns(self, path: str) -> bool:
        if not _LOG_NAME.fullmatch(os.path.basename(path)):
            return False
        directory = os.path.dirname(path)
        if directory != self.run_folder and os.path.islink(directory):
            return False
        relative = os.path.relpath(directory, self.run_folder)
        parts = () if relative == os.curdir else tuple(relative.split(os.sep))
        return any(_at_depth(parts, depth) for depth in self._depths)

    def watch_roots(self) -> list[str]:
        return [self.run_folder]

    def kept_files(self, source_input: SourceInput) -> list[tuple[str, str]]:
        """The run's ``files/media/`` beside the log, named ``files/media/…`` (the log's image paths are relative
        to ``files/``): kept beside the log's copy, importing that folder reads the same images."""
        return media_files(os.path.join(os.path.dirname(source_input.path), "files"), "files/")

    def _read(self, path: str, start: Position, max_bytes: int, max_records: int) -> LogRead:
        return read_log(path, start.offset, start.records, max_bytes=max_bytes, max_records=max_records,
                        max_record_bytes=self.limits.max_line_bytes, file_header=FILE_HEADER)

    def read(self, source_input: SourceInput, start: Position, *, final: bool, prefix_hash: Any = None) -> Batch:
        path = source_input.path
        limits = self.limits
        try:
            log = self._read(path, start, limits.batch_bytes, limits.batch_records)
        except OSError as exc:
            problem = SourceProblem(path, ProblemKind.UNREADABLE,
                                    f"cannot read W&B log ({exc.strerror or exc}); reading resumes from byte "
                                    f"{start.offset} once the file is readable again", offset=start.offset)
            return Batch(source_input, start, start, problems=[problem], unreadable=True)
        batch = Batch(source_input, start, Position(log.checkpoint, log.count), more=log.more)
        rows = []
        for number, offset, payload in log.records:
            try:
                if record_kind(payload) != 2:  # Record.history
                    continue
                record = decode_record(payload, max_items=limits.max_row_fields)
            except ValueError as exc:
                batch.problems.append(SourceProblem(path, ProblemKind.BAD_EVENT,
                                                    f"record is not a W&B history row we can read ({exc}); skipped",
                                                    line=number, offset=offset))
                continue
            if record.row is not None:
                rows.append(HistoryRow(record.row, number, offset))
        for number, offset, size in log.skipped:
            batch.problems.append(SourceProblem(
                path, ProblemKind.BAD_EVENT,
                f"a {size}-byte record is longer than the record limit ({limits.max_line_bytes} bytes); skipped",
                line=number, offset=offset))
        self._stop_problem(batch, log, final)
        rows = take_media(batch, rows, media_scope(os.path.join(os.path.dirname(path), "files"), limits),
                          image_budget=limits.batch_bytes, final=final, waits=self.image_waits)
        batch.rows, too_deep = flatten_rows(rows, separator=".", max_depth=limits.max_depth)
        if too_deep:
            batch.drop(NESTED_TOO_DEEP, too_deep)
        if prefix_hash is not None and batch.end.offset > start.offset:
            hash_range(prefix_hash, path, start.offset, batch.end.offset)
        return batch

    @staticmethod
    def _stop_problem(batch: Batch, log: LogRead, final: bool) -> None:
        path = batch.input.path
        line = log.count + 1
        if log.stop is LogStop.TRUNCATED:
            if final:
                batch.problems.append(SourceProblem(
                    path, ProblemKind.CORRUPT,
                    f"the run is complete but its W&B log ends inside a record at byte {log.error_offset}, so the "
                    f"file was cut; records before byte {log.checkpoint} were read", line=line,
                    offset=log.error_offset))
            else:
                batch.problems.append(SourceProblem(path, ProblemKind.TRUNCATED, log.message, line=line,
                                                    offset=log.error_offset))
        elif log.stop in (LogStop.CRC_MISMATCH, LogStop.CORRUPT):
            kind = ProblemKind.CRC_MISMATCH if log.stop is LogStop.CRC_MISMATCH else ProblemKind.CORRUPT
            batch.problems.append(SourceProblem(
                path, kind, f"{log.message}. This file stays stopped at byte {log.checkpoint}; other files keep "
                "flowing. Restore or remove the file to go on", line=line, offset=log.error_offset))
            batch.stopped = True

    def _scan_metadata(self) -> None:
        """Fold the config, summary and run records written since the last scan into what is known."""
        for path in self.logs():
            start = Position(*self._scanned.get(path, (0, 0)))
            while True:
                log = self._read(path, start, _META_BATCH, 1 << 30)
                for number, offset, payload in log.records:
                    try:
                        if record_kind(payload) not in METADATA_KINDS:
                            continue
                        record = decode_record(payload)
                    except ValueError as exc:
                        raise ConfigError(f"{path}: record {number} at byte {offset} is not a W&B Record "
                                          f"({exc})") from None
                    apply_items(self._config, record.updates, record.removes)
                    apply_items(self._summary, record.summary_updates, record.summary_removes)
                    if record.run is not None and self._info is None:
                        self._info = record.run
                start = Position(log.checkpoint, log.count)
                if not log.more:
                    break
            self._scanned[path] = (start.offset, start.records)

    def run_info(self) -> WandbRunInfo | None:
        """The run's identity from its run record, or None before one is written."""
        self._scan_metadata()
        return self._info

    def summary(self) -> dict[str, Any]:
        """The run's summary as its log says so far (nested keys as nested dicts)."""
        self._scan_metadata()
        return dict(self._summary)

    def run_config(self) -> RunConfig | None:
        """The run's ``wandb.config`` from its log (the run record's and every later update); None without values."""
        self._scan_metadata()
        values = {k: v for k, v in self._config.items() if k not in WANDB_BOOKKEEPING}
        if not values:
            return None
        logs = self.logs()
        return run_config(values, format="json", uri=logs[0] if logs else self.run_folder)
