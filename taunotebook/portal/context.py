"""What a view is handed: the Portal's shared state and one request's context, with the checks every read makes.

A view takes a :class:`Context` (the Portal's sources and served workspace, the request's parameters and
decoded path ids, the listing cursors and the answer cache), never the app. The checks every read shares are
the context's: TauGrid's first checks (``400 INVALID_SOURCE``, then ``403 WORKSPACE_FORBIDDEN``), the run the
path names (:meth:`Context.exact_run`), filters naming stored ids (:meth:`Context.known_ids`). The token and
``Host`` checks stand in front of every route, pages included (:mod:`.auth`, :mod:`.hosts`).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from tau_collector.expstore.store import ExpStore, StoreReadOnlyError
from tau_collector.reads import SOURCE_PROBLEM, ExperimentReader, RunRow
from tau_collector.taugrid.ids import is_valid_id

from .answer_cache import AnswerCache
from .auth import resolve_workspace, run_in_workspace
from .cursors import Cursors
from .errors import V2Error
from .identity import decode_path_id, miss
from .params import Query
from .sources import Sources, served_by
from .writes import WriteGate

__all__ = ["Context", "Found", "Portal", "require_get"]

_MAX_PROBLEM_WARNINGS = 5  # a file of bad rows must not bury the metadata block


def require_get(method: str) -> None:
    """TauGrid's reads are GET only (``405 METHOD_NOT_ALLOWED``)."""
    if method != "GET":
        raise V2Error(405, "METHOD_NOT_ALLOWED", "method not allowed")


@dataclass(frozen=True, slots=True)
class Found:
    """The run a request names, the reader that holds it, the source it was served from, and warnings."""

    run: RunRow
    reader: ExperimentReader
    served: str
    warnings: list[str]


class Portal:
    """What every request of one Portal shares: its sources, the workspace it serves, cursors, the answer cache."""

    def __init__(self, sources: Sources, *, workspace: str = "default", cursor_key: bytes | None = None,
                 store_root: Path | None = None, write_gate: WriteGate | None = None) -> None:
        self.sources = sources
        self.workspace = workspace
        self.cursors = Cursors(cursor_key)
        self.answers = AnswerCache()
        self.store_root = store_root  # the local store, which notes and tags are written to
        self.write_gate = write_gate
        self._writable: ExpStore | None = None
        self._writable_lock = threading.Lock()

    def writable_store(self) -> ExpStore:
        """The local store opened for writing (once): ``409 READ_ONLY_STORE`` when this process cannot write it."""
        with self._writable_lock:
            if self._writable is None:
                if self.store_root is None:
                    raise V2Error(409, "READ_ONLY_SOURCE", "this Portal serves no local store, and notes and tags "
                                                           "are kept in one: start it with --store")
                try:
                    self._writable = ExpStore(self.store_root, writable=True)
                except StoreReadOnlyError as err:
                    raise V2Error(409, "READ_ONLY_STORE", "this Portal's store is read-only "
                                                          f"({err.reason.replace(str(self.store_root), 'the store')}"
                                                          "): notes and tags cannot be written to it") from None
            return self._writable

    def write_context(self, query: Query, raw_ids: Mapping[str, bytes]) -> Context:
        """A write's context: its path ids decoded exactly once (``400 INVALID_PATH``); any method."""
        ids = {name: decode_path_id(raw) for name, raw in raw_ids.items()}
        return Context(self.sources, self.workspace, query, ids, self.cursors, self.answers)

    def context(self, method: str, query: Query, raw_ids: Mapping[str, bytes], *,
                method_first: bool = False, headers: Mapping[str, str] | None = None) -> Context:
        """The request's context once its path is read: each path id decoded exactly once (``400 INVALID_PATH``),
        and ``GET`` required after them, or before them where TauGrid checks the method first. ``headers``: the
        request's (case-insensitive), for the views that answer conditional requests."""
        if method_first:
            require_get(method)
        ids = {name: decode_path_id(raw) for name, raw in raw_ids.items()}
        if not method_first:
            require_get(method)
        return Context(self.sources, self.workspace, query, ids, self.cursors, self.answers, headers or {})


@dataclass(frozen=True, slots=True)
class Context:
    """One request as a view sees it: the Portal's sources and served workspace, its parameters and path ids."""

    sources: Sources
    served_workspace: str
    query: Query
    ids: Mapping[str, str]  # the path's ids, decoded once (``run_id``, ``experiment_id``)
    cursors: Cursors
    answers: AnswerCache
    headers: Mapping[str, str] = field(default_factory=dict)  # the request's, case-insensitive (If-None-Match)

    @property
    def run_id(self) -> str:
        return self.ids["run_id"]

    def source_and_workspace(self) -> tuple[str, str]:
        """TauGrid's first checks: ``400 INVALID_SOURCE``, then ``403 WORKSPACE_FORBIDDEN``."""
        q = self.query
        return self.sources.name(q.get("source")), resolve_workspace(self.served_workspace, q.get("workspace"))

    def exact_run(self, source: str, workspace: str) -> Found:
        """The run the path names, in this workspace, matching ``project`` and ``target`` when given."""
        run_id = self.run_id
        reader, served, warnings = self.sources.reader(source)
        project, target = self.query.get("project"), self.query.get("target")
        run = reader.run(run_id, project or None)
        # Another workspace's run is answered exactly like a missing one: no hint that it exists.
        if run is None or not run_in_workspace(run, workspace):
            raise miss(("run_id", run_id), ("project", project))
        if target and target not in (run.run_id, run.experiment_id, run.run_group_id):
            raise miss(("target", target))
        served = served_by(reader, run.run_id, served)  # source=auto: the source that holds the run
        # What the collector could not read (a corrupt event file, bad rows) makes the run's data
        # degraded: say so on every read of it, in words.
        problems = [f"collector: {e.message}" for e in reader.run_events(run.run_id, type=SOURCE_PROBLEM)]
        if len(problems) > _MAX_PROBLEM_WARNINGS:
            hidden = len(problems) - _MAX_PROBLEM_WARNINGS
            problems = [*problems[:_MAX_PROBLEM_WARNINGS], f"collector: {hidden} more source problems"]
        return Found(run, reader, served, warnings + problems)

    @staticmethod
    def known_ids(reader: ExperimentReader, workspace: str, *named: tuple[str, str, str]) -> None:
        """``(kind, id, run attribute)`` filters that break the ID rule must name something stored, else 400."""
        runs = None
        for kind, value, attr in named:
            if not value or is_valid_id(value):
                continue
            runs = reader.runs(workspace) if runs is None else runs
            if not any(getattr(r, attr) == value for r in runs):
                raise miss((kind, value))
