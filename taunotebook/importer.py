"""``taunotebook import``: existing TensorBoard, W&B, Ray Tune and JSONL history into an expstore.

A thin command over the collector's pipeline: :func:`tau_collector.sources.discover.discover`
finds the sources under the given paths, each becomes one Tau run whose id is derived from its
path (:func:`derive_run_ids`), and :class:`tau_collector.collect.import_pass.StoreImport` reads each in
bounded batches through the same projection as the sidecar into the store, idempotently and
resumably. An imported run is ``completed`` (TauGrid's ended-without-a-verdict state) at its
newest point, unless its history carries a ``tau/run_status`` marker, whose state stands.

Run ids: each source's name (its path relative to the imported path, see ``discover``) made a
valid TauGrid id with :func:`tau_collector.taugrid.ids.derive_id` (lowercase, other characters runs to
``-``). Distinct sources that derive the same id, and ids longer than 200 characters, get a suffix
of 8 hex digits of SHA-256 of the source's absolute location, so the mapping is deterministic and
does not depend on which other sources are imported with it.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable

from tau_collector.cli import progress as progress_line
from tau_collector.collect.import_pass import ImportRun, ImportSummary, StoreImport
from tau_collector.sources.discover import Found, discover
from tau_collector.sources.read_limits import IMPORT_LIMITS, Limits
from tau_collector.taugrid.ids import derive_id

__all__ = ["ImportRun", "ImportSummary", "derive_run_ids", "discover_sources", "import_paths", "safe_run_id"]

MAX_DERIVED_ID = 200


def safe_run_id(text: str) -> str:
    """``text`` made a valid TauGrid id (:func:`tau_collector.taugrid.ids.derive_id`)."""
    return derive_id(text)


def _suffixed(run_id: str, location: str) -> str:
    tag = hashlib.sha256(location.encode("utf-8", "surrogateescape")).hexdigest()[:8]
    return f"{run_id[:MAX_DERIVED_ID - 9].rstrip('._-')}-{tag}"


def derive_run_ids(found: list[Found]) -> list[str]:
    """The run id of each source, in order (see the module docstring for the rule)."""
    ids = [derive_id(f.name) for f in found]
    counts: dict[str, int] = {}
    for run_id in ids:
        counts[run_id] = counts.get(run_id, 0) + 1
    return [_suffixed(run_id, f.location) if counts[run_id] > 1 or len(run_id) > MAX_DERIVED_ID else run_id
            for run_id, f in zip(ids, found, strict=True)]


def discover_sources(paths: Iterable[str], limits: Limits = IMPORT_LIMITS) -> list[ImportRun]:
    """Every source under ``paths`` as a run to import, in a stable order, with unique valid run ids."""
    found = discover(paths, limits)
    return [ImportRun(f.kind, run_id, f.location, f.source) for f, run_id in zip(found, derive_run_ids(found),
                                                                                   strict=True)]


def import_paths(
    paths: Iterable[str],
    store_dir: str | os.PathLike[str],
    *,
    project: str = "default",
    experiment: str | None = None,
    group: str | None = None,
    progress: bool = False,
    on_source: Callable[[ImportRun], None] | None = None,
    limits: Limits = IMPORT_LIMITS,
    clustering: str = "background",
) -> ImportSummary:
    """Import every source under ``paths`` into the store at ``store_dir``; returns what was imported.

    ``points`` counts the finite points read (including ones a previous import already stored:
    a re-import delivers batches the store acknowledges as already present and changes nothing).

    ``clustering`` (see :class:`~tau_collector.collect.import_pass.StoreImport`): by default the imported runs are
    rewritten by metric in a child process left running (``summary.clustering``; wait on it to see the final
    layout); the store reads right meanwhile.
    """
    runs = discover_sources(paths, limits)
    sizes = {path: _size(path) for run in runs for path in run.files()}
    total = sum(sizes.values())
    bar = progress_line.Progress("import", enabled=progress)
    done = [0, 0]  # bytes, runs

    def moved(nbytes: int) -> None:
        done[0] += nbytes
        bar.update(f"{done[1]}/{len(runs)} sources, {progress_line.human_bytes(done[0])}/"
                   f"{progress_line.human_bytes(total)}, {importer.summary.points} points")

    importer = StoreImport(store_dir, project=project, experiment=experiment, group=group, on_bytes=moved,
                           clustering=clustering)
    try:
        for run in runs:
            if on_source is not None:
                on_source(run)
            importer.run(run)
            done[1] += 1
            moved(0)
    finally:
        importer.close()
        bar.close(f"{done[1]}/{len(runs)} sources, {progress_line.human_bytes(done[0])}, "
                  f"{importer.summary.points} points")
    return importer.summary


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0
