"""A wide run (hundreds to thousands of metrics, as a small language model logging per-layer norms) written to a
store by the real writer, and a Portal wrapper that records which metrics the browser or the kernel asked for.

Used by the UI tests of the pane and the Stellar run page with many metrics, and by ``bench/bench_pane.py``.
"""

from __future__ import annotations

import math
import threading
import time
from pathlib import Path
from urllib.parse import parse_qs

from tau_collector.expstore import open_store
from tau_collector.expstore.write.writer import MetricWriter
from tau_collector.projection.metric_event import new_metric_event

BASE_NS = 1_700_000_000 * 10**9
SERIES_PATHS = ("/series", "/points")  # the per-metric reads: v2 series and the page data's points


def wide_metric_names(width: int) -> list[str]:
    """``width`` names: loss, eval/loss, eval/acc, train/lr, four system/ metrics, then act/ and grad_norm/ per
    layer (a tenth act/, the rest grad_norm/) — the shape of a small LM's logging."""
    if width < 8:
        raise ValueError(f"width must be at least 8, got {width}")
    base = ["loss", "eval/loss", "eval/acc", "train/lr"]
    system = ["system/cpu_percent", "system/gpu_util", "system/gpu_mem", "system/rss_mb"]
    rest = width - len(base) - len(system)
    acts = max(1, rest // 10)
    return (base + [f"act/layer.{i:04d}" for i in range(acts)]
            + [f"grad_norm/layer.{i:04d}" for i in range(rest - acts)] + system)


def metric_value(name: str, step: int) -> float:
    k = (sum(name.encode()) % 97) / 97
    if "loss" in name:
        return 2.0 * math.exp(-step / 40) + 0.05 * math.sin(step / 3 + k) + 0.1
    return k + 0.1 * math.sin(step / 5 + 7 * k)


def _event(project: str, run: str, name: str, step: int, value: float):
    return new_metric_event(project=project, experiment_id="wide", run_group_id="wide", run_id=run,
                            metric_name=name, step=step, wall_time=BASE_NS + step * 500_000_000, value=value,
                            exported_at=BASE_NS, source="history", tags={})


def write_rows(store_path: Path, run: str, names: list[str], steps: range, *, project: str = "proj",
               finished: bool = False, chunk: str = "") -> None:
    """Write rows ``steps`` of every metric in ``names`` (one chunk), and the run's succeeded marker if finished."""
    store = open_store(store_path, create=True)
    try:
        writer = MetricWriter(store)
        events = [_event(project, run, name, step, metric_value(name, step)) for step in steps for name in names]
        if events:
            writer.write_chunk(f"{run}-{chunk or steps.start}", events, [], request_hash="h")
        if finished:
            writer.write_chunk(f"{run}-status", [_event(project, run, "tau/run_status", steps.stop, 1.0)], [],
                               request_hash="h")
    finally:
        store.close()


def write_wide_run(store_path: Path, run: str, width: int, steps: int, *, project: str = "proj") -> list[str]:
    """A finished run of ``width`` metrics × ``steps`` rows; returns the metric names."""
    names = wide_metric_names(width)
    write_rows(store_path, run, names, range(steps), project=project, finished=True)
    return names


class RequestLog:
    """ASGI wrapper around the Portal: records every request's path and its ``metric`` parameters, in order."""

    def __init__(self, app) -> None:
        self.app = app
        self.lock = threading.Lock()
        self.entries: list[tuple[float, str, tuple[str, ...]]] = []

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
            with self.lock:
                self.entries.append((time.monotonic(), scope["path"], tuple(query.get("metric", ()))))
        await self.app(scope, receive, send)

    def clear(self) -> None:
        with self.lock:
            self.entries.clear()

    def metrics_read(self, run: str | None = None) -> set[str]:
        """The metrics some per-metric read (series, points) asked for, of ``run`` if given."""
        with self.lock:
            entries = list(self.entries)
        return {m for _, path, ms in entries if path.endswith(SERIES_PATHS) and (run is None or f"/{run}/" in path)
                for m in ms}

    def metrics_asked(self, run: str) -> set[str]:
        """Every metric of ``run`` any read asked for: the per-metric reads and the kernel's batched tails."""
        with self.lock:
            entries = list(self.entries)
        return {m for _, path, ms in entries if path.endswith((*SERIES_PATHS, "/tails")) and f"/{run}/" in path
                for m in ms}

    def count(self, since: float = 0.0) -> int:
        with self.lock:
            return sum(1 for t, _, _ in self.entries if t >= since)
