"""What the collector process loads: never pyarrow (nor the pandas pyarrow would pull in), even while it writes
an expstore and its small files are compacted: Parquet is written by ``parquet_encoder``, and merging runs in a
child process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq

from tau_collector.expstore.store import ExpStore

_COLLECT = """
import runpy, sys
sys.argv = ["tau-collector", *sys.argv[1:]]
try:
    runpy.run_module("tau_collector", run_name="__main__")
except SystemExit as exc:
    assert not exc.code, exc.code
sys.stderr.write("\\nloaded %s\\n" % sorted(m for m in ("pyarrow", "pandas", "numpy") if m in sys.modules))
"""


def _history(path: Path, rows: int) -> None:
    with open(path, "w") as handle:
        for step in range(rows):
            handle.write(json.dumps({"_step": step, "_timestamp": 1_790_000_000 + step, "loss": 1 / (step + 1)})
                         + "\n")


def test_collect_writes_and_compacts_an_expstore_without_loading_pyarrow(tmp_path):
    history = tmp_path / "history.jsonl"
    _history(history, 400)
    (tmp_path / "done.json").write_text("")
    store = tmp_path / "store"
    # One batch per 5 rows: 80 chunk files, past the compaction policy's 64.
    out = subprocess.run(
        [sys.executable, "-c", _COLLECT, "collect", "--run", "r", "--project", "p", "--experiment", "e",
         "--group", "g", "--out", str(tmp_path / "out"), "--store", str(store), "--history", str(history),
         "--completion-file", str(tmp_path / "done.json"), "--batch-records", "5"],
        capture_output=True, text=True, check=True)
    assert json.loads(out.stdout)["events"] == 401  # 400 points and the run's status marker
    assert out.stderr.rstrip().endswith("loaded ['numpy']"), out.stderr[-2000:]
    # The compaction child ran (the sink waits for it on close) and its files read back whole.
    live = [row[0] for row in ExpStore(store).connection().execute("SELECT path FROM metric_files")]
    assert any("compacted-" in path for path in live)
    assert sum(pq.ParquetFile(store / path).metadata.num_rows for path in live) == 401


def test_the_collect_command_loads_no_pyarrow_when_it_starts():
    probe = ("import sys; import tau_collector.cli, tau_collector.cli.collect, tau_collector.expstore.store, "
             "tau_collector.sinks.expstore, tau_collector.sinks.adx.queued; "
             "print(sorted(m for m in ('pyarrow', 'pandas') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
