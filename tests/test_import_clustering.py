"""Clustering an imported run by metric in a child process the import does not wait for: the run reads right
before, during and after it, and a child killed (SIGKILL) at any point leaves the store as it was -- every
row, every summary -- and a later clustering still clusters it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import orjson
import pytest

from tau_collector.expstore.maintain import metric_clusters
from tau_collector.expstore.read.reader import StoreReader
from tau_collector.sources.read_limits import Limits
from taunotebook.importer import import_paths

WIDTH, STEPS = 60, 50
NAMES = [f"blocks.{i:03d}/grad_norm" for i in range(WIDTH)]
MAX_ROWS = 700  # 14 metrics of 50 rows a clustered file: the run comes out in 5 files


def _history(path) -> None:
    with open(path, "wb") as fh:
        for step in range(STEPS):
            row = {"_step": step, "_timestamp": 1_790_000_000 + step}
            row.update((name, i * 1000.0 + step) for i, name in enumerate(NAMES))
            fh.write(orjson.dumps(row) + b"\n")


def _state(store) -> tuple[dict, list]:
    """Every metric's rows and summary, as a fresh reader sees them."""
    reader = StoreReader(store)
    try:
        rows = {name: (t.step.tolist(), t.value.tolist()) for name in NAMES
                for t in [reader.rows("wide", name)]}
        summaries = sorted((s.metric_name, s.count, s.latest_step, s.latest_value, s.min_value, s.max_value)
                           for s in reader.metric_summaries("wide"))
        return rows, summaries
    finally:
        reader.store.close()


def _files(store) -> list[str]:
    reader = StoreReader(store)
    try:
        return [r[0] for r in reader.store.connection().execute(
            "SELECT file_id FROM metric_files WHERE run_id = 'wide' ORDER BY rowid")]
    finally:
        reader.store.close()


def _expected() -> tuple[dict, list]:
    rows = {name: (list(range(STEPS)), [i * 1000.0 + s for s in range(STEPS)]) for i, name in enumerate(NAMES)}
    summaries = sorted((name, STEPS, STEPS - 1, i * 1000.0 + STEPS - 1, i * 1000.0, i * 1000.0 + STEPS - 1)
                       for i, name in enumerate(NAMES))
    return rows, summaries


@pytest.fixture
def imported(tmp_path):
    history = tmp_path / "wide.jsonl"
    _history(history)
    store = tmp_path / "store"
    summary = import_paths([str(history)], store, limits=Limits(batch_bytes=4096), clustering="off")
    assert summary.clustering is None and summary.points == WIDTH * STEPS
    assert len(_files(store)) > 5  # many small files, every metric in each
    assert _state(store) == _expected()
    return store


def test_import_starts_a_child_that_clusters_the_run_and_reads_are_right_meanwhile(tmp_path):
    history = tmp_path / "wide.jsonl"
    _history(history)
    store = tmp_path / "store"
    summary = import_paths([str(history)], store, limits=Limits(batch_bytes=4096))
    child = summary.clustering
    assert child is not None and child.args[:3] == [sys.executable, "-m", metric_clusters.__name__]
    # whatever the child has done so far, a reader sees every row
    assert _state(store) == _expected()
    assert child.wait(timeout=120) == 0
    files = _files(store)
    assert len(files) == 1 and files[0].startswith("clustered-")  # 3,000 rows: one clustered file
    assert _state(store) == _expected()


def test_the_child_clusters_by_metric_ranges(imported):
    assert metric_clusters.main(["--store", str(imported), "--run", "wide", "--max-rows", str(MAX_ROWS)]) == 0
    assert len(_files(imported)) == 5
    assert _state(imported) == _expected()


def test_a_child_that_cannot_open_the_store_says_so(tmp_path, capsys):
    (tmp_path / "index.sqlite").mkdir()  # where the index should be, a directory
    assert metric_clusters.main(["--store", str(tmp_path), "--run", "wide"]) == 1
    assert f"clustering the runs of {tmp_path} by metric: " in capsys.readouterr().err


def test_import_rejects_an_unknown_clustering_mode(tmp_path):
    with pytest.raises(ValueError, match="clustering: 'later' is none of"):
        import_paths([str(tmp_path)], tmp_path / "store", clustering="later")


# The child, killed by SIGKILL at a chosen point: after the n-th file it published (its data or series
# levels), inside the n-th file's write before the rename, before the n-th statement of the swap's
# transaction, or right after the transaction committed.
_KILLER = textwrap.dedent("""
    import os, signal, sys
    from tau_collector.expstore import store as store_module
    from tau_collector.expstore.maintain import metric_clusters

    mode, n = sys.argv[1], int(sys.argv[2])
    calls = [0]

    def die_at_nth():
        calls[0] += 1
        if calls[0] == n:
            os.kill(os.getpid(), signal.SIGKILL)

    if mode in ("publish", "temp"):
        real = store_module.ExpStore.publish_file
        def publish_file(self, relative, write):
            if mode == "temp":
                def write_then_die(path):
                    write(path)
                    die_at_nth()
                return real(self, relative, write_then_die)
            published = real(self, relative, write)
            die_at_nth()
            return published
        store_module.ExpStore.publish_file = publish_file
    elif mode == "statement":
        for name in ("execute", "executemany"):
            def wrapped(self, *args, _real=getattr(store_module._Tx, name)):
                die_at_nth()
                return _real(self, *args)
            setattr(store_module._Tx, name, wrapped)
    elif mode == "committed":
        real_swap = metric_clusters.swap_files
        def swap(*args):
            done = real_swap(*args)
            die_at_nth()
            return done
        metric_clusters.swap_files = swap
    sys.exit(metric_clusters.main(sys.argv[3:]))
""")

# 5 clustered files of at most 700 rows, too small for a series-levels file each (format/levels.needs_levels):
# 5 publications; the swap runs 8 statements.
KILL_POINTS = [("publish", 1), ("publish", 2), ("publish", 4), ("publish", 5), ("temp", 1), ("temp", 5),
               *[("statement", n) for n in range(1, 9)], ("committed", 1)]


@pytest.mark.parametrize(("mode", "n"), KILL_POINTS)
def test_a_clustering_child_killed_at_any_point_leaves_the_store_right(imported, tmp_path, mode, n):
    before = _files(imported)
    script = tmp_path / "killer.py"
    script.write_text(_KILLER)
    done = subprocess.run([sys.executable, str(script), mode, str(n), "--store", str(imported), "--run", "wide",
                           "--max-rows", str(MAX_ROWS)], env=dict(os.environ), capture_output=True, timeout=120)
    assert done.returncode == -signal.SIGKILL, done.stderr.decode()  # it died there, not before or after
    after = _files(imported)
    # all of the old files or all of the new ones, never a mix
    assert after == before if mode != "committed" else (len(after) == 5 and not set(after) & set(before))
    assert _state(imported) == _expected()
    # the next import of the run, even of the same bytes (nothing to add), starts a child that finishes the job
    again = import_paths([str(tmp_path / "wide.jsonl")], imported)
    assert again.unchanged == 1 and again.clustering is not None and again.clustering.wait(timeout=120) == 0
    assert len(_files(imported)) == 1
    assert _state(imported) == _expected()


def test_no_child_for_a_run_in_one_file_or_with_a_metric_too_long_to_cluster(tmp_path):
    history = tmp_path / "wide.jsonl"
    _history(history)
    one_file = import_paths([str(history)], tmp_path / "one")  # 3,000 points: one batch, one file
    assert one_file.points == WIDTH * STEPS and one_file.clustering is None
    from tau_collector.expstore.store import ExpStore

    import_paths([str(history)], tmp_path / "store", limits=Limits(batch_bytes=4096), clustering="off")
    store = ExpStore(tmp_path / "store", writable=True)
    assert metric_clusters.clustering_due(store, ["wide"]) == ["wide"]
    assert metric_clusters.clustering_due(store, ["wide"], max_rows=STEPS - 1) == []  # 50 rows a metric
    assert metric_clusters.clustering_due(store, ["nothing-here"]) == []
    assert metric_clusters.clustering_due(store, ["wide"], max_rows=STEPS * WIDTH // 2) == ["wide"]
    assert metric_clusters.main(["--store", str(tmp_path / "store"), "--run", "wide",
                                 "--max-rows", str(STEPS * WIDTH // 2)]) == 0
    assert len(_files(tmp_path / "store")) == 2
    assert metric_clusters.clustering_due(store, ["wide"], max_rows=STEPS * WIDTH // 2) == []  # clustered
    store.close()
