"""An OS error on the store that no retry can fix stops the collector with a clear fatal error, never "restart".

Real conditions: names the kernel refuses (``File name too long``, a file where a directory belongs),
a store path SQLite cannot open, and a store that becomes read-only while a collector delivers to it
(a read-only remount in a private mount namespace, ``tests/read_only_mount.py``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fixtures.collector import one_point_chunk
from tau_collector.cli.collect import _next_step
from tau_collector.collect.loop import CollectorError
from tau_collector.expstore.format import metric_files
from tau_collector.sinks.base import SinkError
from tau_collector.sinks.expstore import ExpstoreSink

from ..read_only_mount import require_root

TAU = [sys.executable, "-m", "tau_collector"]
REPOSITORY = Path(__file__).resolve().parents[2]


def _history(tmp_path: Path) -> Path:
    hist = tmp_path / "hist"
    hist.mkdir()
    (hist / "chunk-000000-1.jsonl").write_text('{"_step": 0, "_timestamp": 1760000000.5, "loss": 1.0}\n')
    return hist


def _collect(tmp_path: Path, store: Path, *extra: str) -> list[str]:
    return [*TAU, "collect", "--run", "seed-1", "--project", "proj", "--experiment", "exp", "--group", "g",
            "--out", str(tmp_path / "out"), "--history", str(_history(tmp_path) / "*.jsonl"), "--store", str(store),
            *extra]


def test_a_store_too_deep_for_sqlite_is_a_clear_error(tmp_path):
    store = tmp_path.joinpath(*["s" * 200] * 3) / "store"
    result = subprocess.run(_collect(tmp_path, store), capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    (line,) = result.stderr.strip().splitlines()
    assert "SQLite opens no path longer than 512 bytes" in line and "use a store directory with a shorter path" in line
    assert not (tmp_path / "out").exists()


def test_a_name_too_long_for_the_filesystem_is_not_retried(tmp_path, monkeypatch):
    # What every run id over ~250 bytes met before ids were shortened on disk: the kernel's own ENAMETOOLONG.
    monkeypatch.setattr(metric_files, "MAX_ID_COMPONENT_BYTES", 10_000)
    sink = ExpstoreSink(tmp_path / "store")
    with pytest.raises(SinkError) as info:
        sink.deliver(one_point_chunk("r" * 300))
    assert info.value.retryable is False
    message = str(info.value)
    assert "File name too long" in message and "a retry cannot fix this" in message
    assert "collect into a store at a shorter path and use a new --out" in message
    assert "start the collector again with the same flags" not in _next_step(
        CollectorError(f"deliver chunk x to expstore: {message}"), str(tmp_path / "out"))
    assert not list((tmp_path / "store" / "metrics").rglob("*.parquet"))


def test_a_damaged_layout_is_not_retried(tmp_path):
    sink = ExpstoreSink(tmp_path / "store")
    (tmp_path / "store" / "metrics" / "project=p").write_text("a file where a directory belongs")
    with pytest.raises(SinkError) as info:
        sink.deliver(one_point_chunk("r"))
    assert info.value.retryable is False and "the store's layout is damaged" in str(info.value)


_REMOUNT_THEN_DELIVER = """
import json, subprocess, sys
from fixtures.collector import one_point_chunk
from tau_collector.sinks.base import SinkError
from tau_collector.sinks.expstore import ExpstoreSink

store = sys.argv[1]
sink = ExpstoreSink(store)  # writable when opened
sink.store.close()  # Linux refuses a read-only remount while a file on it is open for writing
subprocess.run(["mount", "-o", "remount,bind,ro", store], check=True)
try:
    sink.deliver(one_point_chunk("r"))
except SinkError as exc:
    print(json.dumps({"retryable": exc.retryable, "message": str(exc)}))
"""


def test_a_store_that_becomes_read_only_is_a_delivery_error_no_retry_can_fix(tmp_path):
    require_root()
    store = tmp_path / "store"
    store.mkdir()
    script = 'mount --bind "$1" "$1" && shift && exec "$@"'
    result = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", str(store),
                             sys.executable, "-c", _REMOUNT_THEN_DELIVER, str(store)],
                            capture_output=True, text=True, timeout=120,
                            cwd=REPOSITORY / "tests")  # `-c` puts the working directory first: `fixtures`
    assert result.returncode == 0, result.stderr
    error = json.loads(result.stdout)
    assert error["retryable"] is False
    assert error["message"].startswith(f"expstore {store} cannot be written (")
    assert "is on a read-only filesystem); a retry cannot fix this" in error["message"]
