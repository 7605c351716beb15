"""The collector end to end on the ADX path: Azurite, the real queued-ingest client, the test ingestion worker."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

from services.adx_env import AdxEnv
from tau_collector.collect.loop import Collector, CollectorOptions
from tau_collector.sinks.adx.queued import AdxQueuedSink


def sink(env: AdxEnv) -> AdxQueuedSink:
    return AdxQueuedSink(env.ingest_uri, env.database, max_attempts=2, retry_backoff_s=0.1,
                         final_status_timeout_s=5.0, status_poll_interval_s=0.2)


def write_chunk(directory: Path, index: int, steps: range) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    name = f"chunk-{index:06d}-{1_790_000_000_000 + index}.jsonl"
    lines = "".join(json.dumps({"_step": s, "_timestamp": 1_790_000_000 + s / 4, "loss": 1.0 / (s + 1)}) + "\n"
                    for s in steps)
    (directory / f".{name}.tmp").write_text(lines)
    os.rename(directory / f".{name}.tmp", directory / name)


def options(tmp_path: Path, adx: AdxQueuedSink, **changes) -> CollectorOptions:
    base = dict(run="seed-1", project="demo", experiment="adx", group="g", out=str(tmp_path / "out"), sinks=[adx],
                history=[str(tmp_path / "hist" / "*.jsonl")], completion_file=str(tmp_path / "completion.json"),
                done_file=str(tmp_path / "done"), retry_backoff=0.2)
    base.update(changes)
    return CollectorOptions(**base)


def test_collected_events_and_the_terminal_marker_are_ingested_once(tmp_path, adx_env):
    write_chunk(tmp_path / "hist", 0, range(0, 10))
    write_chunk(tmp_path / "hist", 1, range(10, 15))
    (tmp_path / "completion.json").write_text("")
    adx = sink(adx_env)
    try:
        result = Collector(options(tmp_path, adx)).run()
        Collector(options(tmp_path, adx)).run()  # a second run delivers nothing new
    finally:
        adx.close()
    assert (result.chunks, result.events, result.completed) == (2, 16, True)  # both files read as one chunk
    events = adx_env.worker.events
    assert sorted(e.step for e in events.values() if e.metric_name == "loss") == list(range(15))
    (marker,) = [e for e in events.values() if e.metric_name == "tau/run_status"]
    assert marker.value == 1.0
    assert len(adx_env.worker.rows) == 16  # rows as ingested: no duplicates reached the table


def test_azurite_down_mid_run_holds_the_spool_and_withholds_completion_until_receipts(tmp_path, adx_env):
    adx = sink(adx_env)
    collector = Collector(options(tmp_path, adx, watch=True, interval=0.5))
    failure: list[BaseException] = []

    def run() -> None:
        try:
            collector.run()
        except BaseException as exc:  # surfaced by the assertion below
            failure.append(exc)

    thread = threading.Thread(target=run)
    write_chunk(tmp_path / "hist", 0, range(0, 5))
    thread.start()
    try:
        adx_env.worker.wait_for_ingestions(1)
        adx_env.azurite.stop()
        write_chunk(tmp_path / "hist", 1, range(5, 10))
        (tmp_path / "completion.json").write_text("")
        time.sleep(4)  # the collector keeps retrying the spooled chunk meanwhile
        assert not (tmp_path / "done").exists()
        assert len(os.listdir(tmp_path / "out" / "pending")) == 1
        adx_env.azurite.start()
        thread.join(timeout=120)
    finally:
        if not adx_env.azurite.running:
            adx_env.azurite.start()
        collector.stop()
        thread.join(timeout=30)
        adx.close()
    assert not failure, failure
    assert (tmp_path / "done").read_text() == "done\n"
    events = adx_env.worker.events
    assert sorted(e.step for e in events.values() if e.metric_name == "loss") == list(range(10))
    assert sum(e.metric_name == "tau/run_status" for e in events.values()) == 1
    assert len(adx_env.worker.rows) == 11
