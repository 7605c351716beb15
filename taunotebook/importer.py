"""``taunotebook import``: bring existing TensorBoard, W&B, Ray Tune and JSONL history into an expstore.

Every source found under the given paths becomes one Tau run:

* a TensorBoard run (a directory holding ``*tfevents*`` files, Tune trials included): run id from
  the run directory relative to the imported path (the path's own name when it is the run);
* a W&B run folder (``files/wandb-history.jsonl``): run id from the folder name;
* a Ray Tune trial (a directory holding ``result.json``): ``training_iteration`` is the step and
  ``timestamp`` the time; a trial directory that also holds event files is imported from
  ``result.json`` only, so the trial is one run;
* a house JSONL history file (``*.jsonl`` given directly, or found in a directory that is none of
  the above): run id from the file name.

Run ids are made ``ValidateID``-safe (lowercase ``[a-z0-9._-]``, letter or digit first and last).
An imported run is ``completed`` (TauGrid's ended-without-a-verdict state, classified like a
success subject to its gates) at its newest point, unless its history carries a
``tau/run_status`` marker, whose state stands.

Event files take the bulk path: blocks of ``BLOCK_BYTES`` are read into columns
(:mod:`tau_collector.sources.event_columns`) and written as columns
(:meth:`MetricWriter.write_columns`), with the tags, names and values the JSONL projection gives
each point but without a MetricEvent per point. The rare rows the projection must judge one by
one (a negative step, a wall time that is not a finite time in years 0-9999) and the JSON
sources go through the projection itself.

Idempotency, at three levels: a source whose files are byte for byte the ones of an earlier
import into the store (same run, project, experiment and group) is skipped without being read;
a file that grew since (a run that went on) is read from where the earlier import stopped, when
its bytes up to there are unchanged (a checkpoint like the collector's: offset, records before
it, SHA-256 of the prefix, kept as an idempotency key); and everything is delivered in
deterministically cut chunks whose keys are their content (JSON sources are projected with a
deterministic export time, the newest file modification time), so a chunk an earlier import
wrote is acknowledged as present, not added again.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from tau_collector.expstore.writer import RUN_STATUS_METRIC, RunColumns, run_status_of
from tau_collector.fingerprint import prefix_sha256
from tau_collector.gojson import MAX_TIME_NS, MIN_TIME_NS
from tau_collector.ids import derive_id
from tau_collector.projection import ProjectionConfig, Projector
from tau_collector.records import HistoryRow, ProblemKind, SourceProblem
from tau_collector.sinks.base import Chunk, SinkError
from tau_collector.sinks.expstore import ExpstoreSink
from tau_collector.sources.event_columns import ScalarColumns, read_block_columns
from tau_collector.sources.jsonl import history_metric_file_id, read_history
from tau_collector.sources.run import RunMemory, TensorBoardRun, is_event_file, metric_file_id
from tau_collector.spool import non_finite_key

__all__ = ["ImportSource", "ImportSummary", "discover_sources", "import_paths", "safe_run_id"]

WANDB_HISTORY = os.path.join("files", "wandb-history.jsonl")
TUNE_RESULT = "result.json"
# Rows per delivered chunk of a JSON source: bounds memory on a large source; the cut is deterministic.
CHUNK_ROWS = 100_000
# Bytes of an event file read and written at once (one Parquet file per block): bounds memory
# (a 4 MiB block of scalar events is ~85k points, ~190 MB in flight); the cut depends on the bytes only.
BLOCK_BYTES = 4 * 1024 * 1024
IMPORT_VERSION = "taunotebook.import.v1"
# Wall times the bulk path takes as they are: well inside the years 0-9999 the projection allows.
_MIN_WALL = MIN_TIME_NS / 1e9 + 86_400.0
_MAX_WALL = MAX_TIME_NS / 1e9 - 86_400.0
_LINE_SLOT = '"jsonl.history_line":"\\u0000"'
# Tune's bookkeeping fields in result.json: not metrics.
_TUNE_SKIP = frozenset({
    "config", "pid", "hostname", "node_ip", "date", "trial_id", "experiment_id", "experiment_tag", "done",
    "should_checkpoint", "checkpoint_dir_name",
})


def safe_run_id(text: str) -> str:
    """``text`` made a valid TauGrid id (:func:`tau_collector.ids.derive_id`)."""
    return derive_id(text)


@dataclass(slots=True)
class ImportSource:
    """One future Tau run: its kind (``tensorboard``/``wandb``/``tune``/``jsonl``) and files."""

    kind: str
    run_id: str
    location: str  # the run directory or the history file (absolute)
    files: list[str]

    def size(self) -> int:
        return sum(_size(path) for path in self.files)


@dataclass(slots=True)
class ImportSummary:
    runs: int = 0
    metrics: int = 0
    points: int = 0
    non_finite: int = 0
    rejected_rows: int = 0
    corrupt_files: int = 0
    files: int = 0
    bytes: int = 0
    unchanged: int = 0  # sources skipped: the same files were imported before with the same identity
    run_ids: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def text(self) -> str:
        text = (f"imported {self.runs} runs, {self.metrics} metrics, {self.points} points "
                f"({self.non_finite} non-finite); {self.rejected_rows} rejected rows, "
                f"{self.corrupt_files} corrupt files; read {self.files} files, {self.bytes} bytes")
        if self.unchanged:
            text += f"; {self.unchanged} sources unchanged since an earlier import (skipped)"
        return text


def _event_files(directory: str) -> list[str]:
    try:
        names = [e.name for e in os.scandir(directory) if e.is_file() and is_event_file(e.name)]
    except OSError:
        return []
    return [os.path.join(directory, n) for n in sorted(names)]


def _source_in(directory: str, name: str) -> list[ImportSource]:
    """What ``directory`` itself is (possibly nothing); ``name`` is the run id text for it."""
    wandb = os.path.join(directory, WANDB_HISTORY)
    if os.path.isfile(wandb):
        return [ImportSource("wandb", name, directory, [wandb])]
    tune = os.path.join(directory, TUNE_RESULT)
    if os.path.isfile(tune):
        return [ImportSource("tune", name, directory, [tune])]
    events = _event_files(directory)
    if events:
        return [ImportSource("tensorboard", name, directory, events)]
    return []


def discover_sources(paths: Iterable[str]) -> list[ImportSource]:
    """Every source under ``paths`` (files or directories), in a stable order, with unique run ids."""
    found: list[ImportSource] = []
    for given in paths:
        root = os.path.abspath(given)
        base = os.path.basename(root.rstrip(os.sep)) or "run"
        if os.path.isfile(root):
            name = os.path.basename(root)
            if is_event_file(name):
                parent = os.path.dirname(root)
                found.append(ImportSource("tensorboard", os.path.basename(parent), parent, [root]))
            elif name == TUNE_RESULT:
                parent = os.path.dirname(root)
                found.append(ImportSource("tune", os.path.basename(parent), parent, [root]))
            else:
                found.append(ImportSource("jsonl", os.path.splitext(name)[0], root, [root]))
            continue
        for directory, dirs, files in os.walk(root):
            dirs.sort()
            rel = os.path.relpath(directory, root)
            name = base if rel == os.curdir else rel.replace(os.sep, "/")
            here = _source_in(directory, name)
            if here:
                found.extend(here)
                if here[0].kind == "wandb":
                    dirs[:] = []  # the W&B run folder's own files/ is not another source
                continue
            for file_name in sorted(files):
                if file_name.endswith(".jsonl"):
                    stem = os.path.splitext(file_name)[0]
                    found.append(ImportSource("jsonl", stem if rel == os.curdir else f"{name}/{stem}",
                                              os.path.join(directory, file_name),
                                              [os.path.join(directory, file_name)]))
    seen: dict[str, int] = {}
    for source in found:
        run_id = safe_run_id(source.run_id)
        if run_id in seen:
            seen[run_id] += 1
            run_id = f"{run_id}-{seen[run_id]}"
        seen.setdefault(run_id, 1)
        source.run_id = run_id
    return found


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _export_time(source: ImportSource) -> int:
    mtimes = []
    for path in source.files:
        try:
            mtimes.append(os.stat(path).st_mtime_ns)
        except OSError:
            pass
    return max(mtimes, default=0)


def _flat_rows(rows: list[HistoryRow], skip: frozenset[str], separator: str) -> list[HistoryRow]:
    """Rows with nested dicts flattened (``a<separator>b``); W&B media dicts (``_type``) stay skipped."""
    out = []
    for row in rows:
        if not any(type(value) is dict for value in row.fields.values()) and not skip.intersection(row.fields):
            out.append(row)
            continue
        fields: dict[str, object] = {}
        for key, value in row.fields.items():
            if key in skip:
                continue
            if isinstance(value, dict):
                _flatten(key, value, fields, separator)
            else:
                fields[key] = value
        out.append(HistoryRow(fields, row.line, row.offset))
    return out


def _flatten(prefix: str, value: dict, into: dict[str, object], separator: str) -> None:
    if "_type" in value:
        return  # a W&B media/table reference, not a number
    for key, inner in value.items():
        name = f"{prefix}{separator}{key}"
        if isinstance(inner, dict):
            _flatten(name, inner, into, separator)
        else:
            into[name] = inner


class _Progress:
    """A tqdm bar over bytes (files in the postfix); plain lines on stderr without tqdm."""

    def __init__(self, total_bytes: int, total_files: int, enabled: bool) -> None:
        self.total_files = total_files
        self.files = 0
        self.enabled = enabled
        self._bar = None
        if not enabled:
            return
        try:
            from tqdm import tqdm
        except ImportError:
            return
        self._bar = tqdm(total=total_bytes, unit="B", unit_scale=True, unit_divisor=1024,
                         desc="import", file=sys.stderr, dynamic_ncols=True)

    def partial(self, nbytes: int) -> None:
        """Bytes of a file still being imported (a large file moves the bar chunk by chunk)."""
        if self._bar is not None and nbytes > 0:
            self._bar.update(nbytes)

    def advance(self, nbytes: int, label: str) -> None:
        """A file is done; ``nbytes`` are its bytes not yet reported through :meth:`partial`."""
        self.files += 1
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.set_postfix_str(f"files {self.files}/{self.total_files}", refresh=False)
            self._bar.update(nbytes)
        else:
            print(f"import: file {self.files}/{self.total_files} ({nbytes} bytes) {label}", file=sys.stderr)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def _file_digest(path: str) -> tuple[int, str]:
    """(size, SHA-256 hex) of the whole file; ``(0, "")`` when it cannot be read."""
    try:
        with open(path, "rb") as fh:
            digest = hashlib.file_digest(fh, "sha256")
            return fh.tell(), digest.hexdigest()
    except OSError:
        return 0, ""  # unreadable now: the reading reports it, and the source is not marked as imported


class _Importer:
    def __init__(self, sink: ExpstoreSink, project: str, experiment: str | None, group: str | None,
                 summary: ImportSummary, progress: _Progress) -> None:
        self.sink = sink
        self.project = project
        self.experiment = experiment
        self.group = group
        self.summary = summary
        self.progress = progress
        self._reported = 0  # bytes of the current file already shown on the bar
        self._digests: dict[str, tuple[int, str]] = {}  # path -> (size, SHA-256) read for the source key

    def config(self, source: ImportSource) -> ProjectionConfig:
        group = self.group or self.experiment or "imported"
        tune = source.kind == "tune"
        return ProjectionConfig(
            project=self.project, experiment_id=self.experiment or group, run_group_id=group,
            run_id=source.run_id, exported_at=_export_time(source),
            source="tensorboard" if source.kind == "tensorboard" else "jsonl",
            tags={"import.kind": source.kind},
            step_field="training_iteration" if tune else "_step",
            time_field="timestamp" if tune else "_timestamp",
        )

    @staticmethod
    def _identity(source: ImportSource, config: ProjectionConfig) -> bytes:
        return orjson.dumps([IMPORT_VERSION, source.kind, config.project, config.experiment_id,
                             config.run_group_id, config.run_id])

    def _source_key(self, source: ImportSource, identity: bytes) -> str | None:
        self._digests = {path: _file_digest(path) for path in source.files}
        digests = [digest for _, digest in self._digests.values()]
        if not all(digests):
            return None
        payload = orjson.dumps([identity.decode(), list(zip(source.files, digests, strict=True))])
        return "import-source-" + hashlib.sha256(payload).hexdigest()

    def _resume_point(self, identity: bytes, path: str) -> tuple[str, int, int]:
        """(key prefix, offset, records or lines before it) of the furthest earlier import of ``path``
        whose bytes up to there are unchanged; offset 0 when there is none."""
        prefix = "import-file-" + hashlib.sha256(identity + b"\0" + path.encode()).hexdigest()[:32] + "-"
        size = _size(path)
        points = []
        for key, digest, count in self.sink.writer.keys_with_prefix(prefix):
            offset = int(key[len(prefix):])
            if 0 < offset <= size:
                points.append((offset, digest, int(count)))
        for offset, digest, count in sorted(points, reverse=True):
            try:
                if prefix_sha256(path, offset) == digest:
                    return prefix, offset, count
            except (OSError, ValueError):
                break
        return prefix, 0, 0

    def _remember(self, prefix: str, path: str, offset: int, count: int, resumed: int) -> None:
        if offset > resumed:
            size, digest = self._digests.get(path, (0, ""))
            if offset != size or not digest:  # read up to a checkpoint before the end: hash that prefix
                try:
                    digest = prefix_sha256(path, offset)
                except (OSError, ValueError):
                    return  # the file changed under us: the next import starts it over, chunks dedupe
            self.sink.writer.record_key(prefix + str(offset), command="taunotebook import",
                                        target_type="import_file", target_id=str(count), request_hash=digest)

    def _deliver_rows(self, projector: Projector, rows: list[HistoryRow], path: str, problems: list[SourceProblem],
                      metrics: set[str], *, progress: bool = True) -> None:
        """Rows through the projection, in chunks of ``CHUNK_ROWS`` (JSON sources, odd event-file rows)."""
        size = _size(path)
        for start in range(0, max(len(rows), 1), CHUNK_ROWS):
            if start and progress:
                self._advance(size * CHUNK_ROWS // len(rows))
            part = rows[start:start + CHUNK_ROWS]
            projected, errors = projector.project_rows(part)
            problems.extend(SourceProblem(path, ProblemKind.BAD_ROW, str(exc), line=row.line, offset=row.offset)
                            for row, exc in errors)
            self.summary.rejected_rows += len(errors)
            if projected.non_finite:
                non_finite = tuple(projected.non_finite)
                self.sink.deliver(Chunk(0, "non_finite", non_finite_key(list(non_finite)), b"", 0, non_finite))
                self.summary.non_finite += len(non_finite)
                metrics.update(e.metric_name for e in non_finite)
            if projected.lines:
                ndjson = b"".join(projected.lines)
                self.sink.deliver(Chunk(start // CHUNK_ROWS, "history", hashlib.sha256(ndjson).hexdigest(),
                                        ndjson, len(projected.lines), events=tuple(projected.events)))
                self.summary.points += len(projected.lines)
                metrics.update(e.metric_name for e in projected.events)

    def _deliver_columns(self, projector: Projector, identity: bytes, cols: ScalarColumns, path: str,
                         block_offset: int, problems: list[SourceProblem], metrics: set[str]) -> None:
        """One block of an event file: the rows the projection would take as they are, written as columns."""
        if not len(cols):
            return
        ordinary = (cols.step >= 0) & (cols.wall_time > _MIN_WALL) & (cols.wall_time < _MAX_WALL)
        odd = np.flatnonzero(~ordinary)
        if odd.size:
            self._deliver_rows(projector, [
                HistoryRow({"_step": step, "_timestamp": wall, cols.names[metric]: value}, record, offset)
                for metric, step, wall, value, record, offset in zip(
                    cols.metric[odd].tolist(), cols.step[odd].tolist(), cols.wall_time[odd].tolist(),
                    cols.value[odd].tolist(), cols.record[odd].tolist(), cols.offset[odd].tolist(), strict=True)
            ], path, problems, metrics, progress=False)
        projected = [projector.metric_tags(name) for name in cols.names]
        is_metric = np.array([p is not None for p in projected] + [False], dtype=bool)
        rows = np.flatnonzero(ordinary & is_metric[cols.metric])
        if not rows.size:
            return
        # Raw keys are codes; metric names (a raw key stripped) may coincide for two raw keys.
        names: dict[str, int] = {}
        name_of_code = np.zeros(len(projected), dtype=np.int32)
        prefixes, suffixes, tag_sets = [], [], []
        for code, pieces in enumerate(projected):
            if pieces is None:
                prefixes.append("")
                suffixes.append("")
                continue
            name, tags = pieces
            name_of_code[code] = names.setdefault(name, len(names))
            text = orjson.dumps({**tags, "jsonl.history_line": "\0"}, option=orjson.OPT_SORT_KEYS).decode()
            at = text.index(_LINE_SLOT)
            prefixes.append(text[:at] + '"jsonl.history_line":"')
            suffixes.append('"' + text[at + len(_LINE_SLOT):])
            tag_sets.append(tags)
        # In the order the store keeps rows (metric name, step, wall time, arrival), so that the tags
        # are built once in place rather than built and then reordered.
        name_rank = np.argsort(np.argsort(np.array(list(names), dtype=object), kind="stable"))
        wall_us = (cols.wall_time[rows] * 1e6).astype(np.int64)  # int(seconds * 1e6), as the projection
        order = np.lexsort((wall_us, cols.step[rows], name_rank[name_of_code[cols.metric[rows]]]))
        rows, wall_us = rows[order], wall_us[order]
        raw = cols.metric[rows]
        take = pa.array(raw)
        tags_col = pc.binary_join_element_wise(
            pa.array(prefixes, pa.string()).take(take), pa.array(cols.record[rows]).cast(pa.string()),
            pa.array(suffixes, pa.string()).take(take), "")
        metric = name_of_code[raw]
        step = cols.step[rows]
        value = cols.value[rows]
        status = None
        status_code = names.get(RUN_STATUS_METRIC)
        if status_code is not None:
            at = np.flatnonzero(metric == status_code)
            at = at[np.lexsort((at, wall_us[at], step[at]))]
            status = run_status_of(value[at], [int(w) * 1000 for w in wall_us[at].tolist()])
        config = projector.config
        columns = RunColumns(
            project=config.project, experiment_id=config.experiment_id, run_group_id=config.run_group_id,
            run_id=config.run_id, names=list(names), metric=metric, step=step, wall_time=wall_us, value=value,
            tags=tags_col, tag_sets=tag_sets, source=config.source or "jsonl",
            first_wall_ns=int(wall_us.min()) * 1000, status=status,
        )
        content = hashlib.sha256(identity)
        content.update(orjson.dumps([path, block_offset, list(names)]))
        for array in (metric, step, wall_us, value, cols.record[rows], raw):
            content.update(array.tobytes())
        digest = content.hexdigest()
        try:
            self.sink.writer.write_columns("import-block-" + digest, [columns], request_hash=digest)
        except (sqlite3.OperationalError, OSError) as exc:
            raise SinkError(f"expstore {self.sink.store.root}: {exc}", retryable=True) from None
        finite = int(np.isfinite(value).sum())
        self.summary.points += finite
        self.summary.non_finite += len(value) - finite
        metrics.update(names)

    def _read_tensorboard(self, source: ImportSource, config: ProjectionConfig, identity: bytes,
                          problems: list[SourceProblem], metrics: set[str]) -> None:
        run = TensorBoardRun(source.location, "", metric_file_id(source.location))
        memory = RunMemory()
        for segment in source.files:
            projector = Projector(config, history_path=segment, metric_file_id=run.metric_file_id,
                                  metric_file_path=run.directory)
            key_prefix, resume_at, _ = self._resume_point(identity, segment)
            offset = records = 0
            while offset < resume_at:
                # What an earlier import delivered is read again for the run's memory only (tag
                # plugins, session starts: later frames depend on them), never delivered twice.
                batch, _ = read_block_columns(run, segment, memory=memory, offset=offset, records_before=records,
                                              max_bytes=min(BLOCK_BYTES, resume_at - offset))
                if batch.checkpoint <= offset:
                    break
                self._advance(batch.checkpoint - offset)
                offset, records = batch.checkpoint, batch.records
            while True:
                batch, columns = read_block_columns(run, segment, memory=memory, offset=offset,
                                                    records_before=records, max_bytes=BLOCK_BYTES)
                problems.extend(batch.problems)
                if batch.stop in (ProblemKind.CRC_MISMATCH, ProblemKind.UNREADABLE):
                    self.summary.corrupt_files += 1
                self._deliver_columns(projector, identity, columns, segment, offset, problems, metrics)
                if not batch.more:
                    break
                self._advance(batch.checkpoint - offset)
                offset, records = batch.checkpoint, batch.records
            offset, records = batch.checkpoint, batch.records
            self._remember(key_prefix, segment, offset, records, resume_at)
            self._file_done(segment)

    def _read_json(self, source: ImportSource, config: ProjectionConfig, identity: bytes,
                   problems: list[SourceProblem], metrics: set[str]) -> None:
        path = source.files[0]
        key_prefix, offset, lines = self._resume_point(identity, path)
        # Complete lines first (where a later import of a grown file resumes), then an unterminated tail.
        complete = read_history(path, offset, lines, final=False)
        reads = [complete]
        if not complete.problems or complete.problems[-1].kind != ProblemKind.UNREADABLE:
            reads.append(read_history(path, complete.offset, complete.lines, final=True))
        read_problems = [p for r in reads for p in r.problems]
        problems.extend(read_problems)
        self.summary.rejected_rows += sum(1 for p in read_problems if p.kind != ProblemKind.UNREADABLE)
        if any(p.kind == ProblemKind.UNREADABLE for p in read_problems):
            self.summary.corrupt_files += 1
        rows = [row for r in reads for row in r.rows]
        if source.kind == "tune":  # Tune's own TensorBoard logger names nested results a/b
            rows = _flat_rows(rows, _TUNE_SKIP, "/")
        elif source.kind == "wandb":  # W&B shows a nested logged dict as a.b
            rows = _flat_rows(rows, frozenset(), ".")
        projector = Projector(config, history_path=path, metric_file_id=history_metric_file_id(path),
                              metric_file_path=path)
        self._advance(offset)
        self._deliver_rows(projector, rows, path, problems, metrics)
        self._remember(key_prefix, path, complete.offset, complete.lines, offset)
        self._file_done(path)

    def run(self, source: ImportSource) -> None:
        config = self.config(source)
        identity = self._identity(source, config)
        key = self._source_key(source, identity)
        if key is not None and self.sink.writer.recorded(key):
            self.summary.unchanged += 1
            for path in source.files:
                self._file_done(path)
            return
        problems: list[SourceProblem] = []
        metrics: set[str] = set()
        if source.kind == "tensorboard":
            self._read_tensorboard(source, config, identity, problems, metrics)
        else:
            self._read_json(source, config, identity, problems, metrics)
        if problems:
            self.sink.report(source.run_id, problems)
            self.summary.problems.extend(str(p) for p in problems)
        if metrics:
            self.summary.runs += 1
            self.summary.run_ids.append(source.run_id)
            self.summary.metrics += len(metrics)
            # Imported history has ended: the Portal and panes show it done, not running forever.
            self.sink.writer.mark_completed(source.run_id)
        if key is not None and not any(p.kind == ProblemKind.UNREADABLE for p in problems):
            # Everything these bytes hold is in the store now: the next import of them reads nothing.
            self.sink.writer.record_key(key, command="taunotebook import", target_type="import_source",
                                        target_id=source.run_id, request_hash=key)

    def _advance(self, nbytes: int) -> None:
        """Part of the current file is done (the bar moves within a large file)."""
        self._reported += nbytes
        self.progress.partial(nbytes)

    def _file_done(self, path: str) -> None:
        size = _size(path)
        self.summary.files += 1
        self.summary.bytes += size
        self.progress.advance(max(size - self._reported, 0), path)
        self._reported = 0


def import_paths(
    paths: Iterable[str],
    store_dir: str | os.PathLike[str],
    *,
    project: str = "default",
    experiment: str | None = None,
    group: str | None = None,
    progress: bool = False,
    on_source: Callable[[ImportSource], None] | None = None,
) -> ImportSummary:
    """Import every source under ``paths`` into the store at ``store_dir``; returns what was imported.

    ``points`` counts the finite points read (including ones a previous import already stored:
    a re-import delivers chunks the store acknowledges as already present and changes nothing).
    """
    sources = discover_sources(paths)
    summary = ImportSummary()
    bar = _Progress(sum(s.size() for s in sources), sum(len(s.files) for s in sources), progress)
    sink = ExpstoreSink(store_dir, source_id="taunotebook-import")
    try:
        importer = _Importer(sink, project, experiment, group, summary, bar)
        for source in sources:
            if on_source is not None:
                on_source(source)
            importer.run(source)
    finally:
        bar.close()
        sink.close()
    return summary

