"""The collector sidecar: TauGrid's spool protocol, checkpoint, completion marker, and our additions."""

from __future__ import annotations

import base64
import hashlib
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fixtures.collector import RecordingSink, options, row, write_chunk
from fixtures.tb_writers import write_tensorboardx
from tau_collector.collect.loop import Collector, CollectorError
from tau_collector.expstore.read.reader import StoreReader
from tau_collector.expstore.store import ExpStore
from tau_collector.sinks.base import SinkError
from tau_collector.sinks.expstore import ExpstoreSink
from tau_collector.spool.manifest import SpoolError

from ..polling import DEADLINE, wait_until


def test_one_shot_delivers_new_files_read_together_as_one_chunk_and_checkpoints_each(tmp_path):
    write_chunk(tmp_path / "hist", 0, [row(0, loss=1.0, acc=0.1), row(1, loss=0.5)])
    write_chunk(tmp_path / "hist", 1, [row(2, loss=0.25)])
    sink = RecordingSink()
    result = Collector(options(tmp_path, [sink])).run()
    assert (result.chunks, result.events, result.completed) == (1, 4, False)
    assert [c.sequence for c in sink.chunks] == [1]
    assert [(e.metric_name, e.step, e.value) for e in sink.events()] == [
        ("acc", 0, 0.1), ("loss", 0, 1.0), ("loss", 1, 0.5), ("loss", 2, 0.25)]
    checkpoint = json.loads((tmp_path / "out" / "checkpoint.json").read_text())
    assert list(checkpoint) == ["schema_version", "config_identity", "next_sequence", "sources", "terminals",
                                "updated_at"]
    assert checkpoint["next_sequence"] == 2
    for index, lines in ((0, 2), (1, 1)):
        name = f"chunk-{index:06d}-{1_790_000_000_000 + index}.jsonl"
        source = checkpoint["sources"][str(tmp_path / "hist" / name)]
        data = (tmp_path / "hist" / name).read_bytes()
        assert source["offset"] == len(data) and source["lines"] == lines
        assert source["prefix_sha256"] == hashlib.sha256(data).hexdigest()
        assert source["sequence"] == 1
        assert source["chunk_digest"] == hashlib.sha256(sink.chunks[0].ndjson).hexdigest()
        assert list(source) == ["path", "file_id", "offset", "prefix_sha256", "sequence", "chunk_digest", "lines",
                                "updated_at"]
    assert os.listdir(tmp_path / "out" / "pending") == []


def test_a_single_new_file_is_a_chunk_of_its_own_in_taugrids_exact_manifest(tmp_path, monkeypatch):
    from tau_collector.spool import manifest as spool
    written = []
    real = spool.Spool.write_pending
    monkeypatch.setattr(spool.Spool, "write_pending", lambda self, m: written.append(m.to_bytes()) or real(self, m))
    write_chunk(tmp_path / "hist", 0, [row(0, loss=1.0)])
    Collector(options(tmp_path, [RecordingSink()])).run()
    write_chunk(tmp_path / "hist", 1, [row(1, loss=0.5)])
    write_chunk(tmp_path / "hist", 2, [row(2, loss=0.25)])
    Collector(options(tmp_path, [RecordingSink()])).run()
    single, several = (json.loads(raw) for raw in written)
    assert "more_sources" not in single
    assert several["source_path"].endswith("chunk-000001-1790000000001.jsonl")
    assert [r["source_path"].rsplit("/", 1)[1] for r in several["more_sources"]] == ["chunk-000002-1790000000002.jsonl"]
    assert list(several["more_sources"][0]) == ["source_path", "source_file_id", "start_offset", "end_offset",
                                                "start_lines", "end_lines", "prefix_sha256"]


def test_a_second_pass_reads_only_what_was_appended_and_stops_at_the_last_newline(tmp_path):
    hist = tmp_path / "hist"
    hist.mkdir()
    path = hist / "history.jsonl"
    path.write_text(row(0, loss=1.0) + "\n" + row(1, loss=0.9)[:10])
    sink = RecordingSink()
    Collector(options(tmp_path, [sink])).run()
    assert [e.step for e in sink.events()] == [0]
    with path.open("a") as handle:
        handle.write(row(1, loss=0.9)[10:] + "\n")
    Collector(options(tmp_path, [sink])).run()
    assert [e.step for e in sink.events()] == [0, 1]
    Collector(options(tmp_path, [sink])).run()
    assert len(sink.chunks) == 2


def test_the_final_drain_after_completion_includes_an_unterminated_tail_and_emits_the_marker(tmp_path):
    hist = tmp_path / "hist"
    hist.mkdir()
    (hist / "history.jsonl").write_text(row(0, loss=1.0) + "\n" + row(1, loss=0.5))
    (tmp_path / "completion.json").write_text(json.dumps(
        {"state": "failed", "reason": "OOMKilled", "message": "out of memory", "completed_at": "2026-09-18T19:00:00Z"}))
    sink = RecordingSink()
    done = tmp_path / "done"
    opts = options(tmp_path, [sink], done_file=str(done), tags={"team": "vision"})
    result = Collector(opts).run()
    assert result.completed
    marker = sink.events()[-1]
    assert (marker.metric_name, marker.step, marker.value, marker.source) == ("tau/run_status", 0, -1.0,
                                                                              "stellar-online-status")
    assert marker.wall_time == marker.exported_at
    assert marker.tags == {"team": "vision", "tau.status.state": "failed", "tau.status.reason": "OOMKilled",
                           "tau.status.message": "out of memory"}
    assert marker.metric_file_id == ""
    assert sink.chunks[-1].kind == "terminal"
    assert [e.step for e in sink.events()[:-1]] == [0, 1]
    assert done.read_text() == "done\n"
    # A second run over the same completion does not emit the marker twice.
    Collector(opts).run()
    assert sum(c.kind == "terminal" for c in sink.chunks) == 1


@pytest.mark.parametrize(("content", "state", "value"), [
    ("", "succeeded", 1.0), ("done\n", "succeeded", 1.0), ("Canceled", "cancelled", -2.0),
    ("error", "failed", -1.0), ('{"state":"completed"}', "succeeded", 1.0),
])
def test_completion_file_forms_and_aliases(tmp_path, content, state, value):
    (tmp_path / "completion.json").write_text(content)
    (tmp_path / "hist").mkdir()
    sink = RecordingSink()
    Collector(options(tmp_path, [sink])).run()
    (marker,) = sink.events()
    assert (marker.tags["tau.status.state"], marker.value) == (state, value)
    if not content:
        assert marker.wall_time == os.stat(tmp_path / "completion.json").st_mtime_ns


@pytest.mark.parametrize(("content", "message"), [
    ("exploded", "completion state must be succeeded, failed, or cancelled"),
    ('{"state":"failed","exit_code":3}', "unknown field"),
    ('{"state":"failed","completed_at":"yesterday"}', "completed_at must be RFC3339"),
])
def test_bad_completion_files_are_errors_naming_the_problem(tmp_path, content, message):
    (tmp_path / "completion.json").write_text(content)
    (tmp_path / "hist").mkdir()
    with pytest.raises(CollectorError, match=message):
        Collector(options(tmp_path, [RecordingSink()])).run()


def test_pending_manifest_is_taugrids_shape_and_is_redelivered_after_a_failed_delivery(tmp_path):
    write_chunk(tmp_path / "hist", 0, [row(0, loss=1.0)])
    failing = RecordingSink(fail=SinkError("cluster said no", retryable=False))
    with pytest.raises(CollectorError, match="cluster said no"):
        Collector(options(tmp_path, [failing])).run()
    (pending,) = (tmp_path / "out" / "pending").iterdir()
    manifest = json.loads(pending.read_text())
    ndjson = base64.b64decode(manifest["ndjson"])
    assert pending.name == f"{1:020d}-{hashlib.sha256(ndjson).hexdigest()}.json"
    assert list(manifest) == ["schema_version", "manifest_digest", "chunk_digest", "config_identity", "kind",
                              "sequence", "source_path", "source_file_id", "start_offset", "end_offset",
                              "start_lines", "end_lines", "prefix_sha256", "event_count", "ndjson"]
    assert (manifest["schema_version"], manifest["kind"], manifest["sequence"], manifest["event_count"]) == (
        "tau.experiment.metric_chunk_manifest.v1", "history", 1, 1)
    # manifest_digest: sha256 of the compact JSON of the manifest with the digest left empty.
    compact = json.dumps({**manifest, "manifest_digest": ""}, separators=(",", ":")).encode()
    assert manifest["manifest_digest"] == hashlib.sha256(compact).hexdigest()
    assert not (tmp_path / "out" / "checkpoint.json").exists()

    sink = RecordingSink()
    result = Collector(options(tmp_path, [sink])).run()
    assert sink.chunks[0].ndjson == ndjson  # the same bytes, re-delivered from the spool
    assert (result.chunks, result.events) == (1, 1)
    assert os.listdir(tmp_path / "out" / "pending") == []
    Collector(options(tmp_path, [sink])).run()
    assert len(sink.chunks) == 1


def test_a_tampered_pending_manifest_is_refused(tmp_path):
    write_chunk(tmp_path / "hist", 0, [row(0, loss=1.0)])
    with pytest.raises(CollectorError):
        Collector(options(tmp_path, [RecordingSink(fail=SinkError("no", retryable=False))])).run()
    (pending,) = (tmp_path / "out" / "pending").iterdir()
    manifest = json.loads(pending.read_text())
    manifest["event_count"] = 2
    pending.write_text(json.dumps(manifest, indent=2))
    with pytest.raises(SpoolError, match="invalid schema, digest"):
        Collector(options(tmp_path, [RecordingSink()])).run()


def test_stray_files_in_the_pending_spool_are_fatal_and_interrupted_temp_files_are_removed(tmp_path):
    (tmp_path / "hist").mkdir()
    pending = tmp_path / "out" / "pending"
    pending.mkdir(parents=True)
    (pending / ".00000000000000000001-x.json.tmp-123").write_text("half")
    Collector(options(tmp_path, [RecordingSink()])).run()
    assert os.listdir(pending) == []
    (pending / "notes.txt").write_text("hello")
    with pytest.raises(SpoolError, match="unexpected file in pending spool"):
        Collector(options(tmp_path, [RecordingSink()])).run()


def test_a_changed_configuration_is_refused_with_a_clear_message(tmp_path):
    write_chunk(tmp_path / "hist", 0, [row(0, loss=1.0)])
    Collector(options(tmp_path, [RecordingSink()])).run()
    with pytest.raises(SpoolError, match="different collector configuration.*use a new --out"):
        Collector(options(tmp_path, [RecordingSink()], run="seed-2")).run()


def test_a_replaced_history_file_is_fatal_like_taugrid(tmp_path):
    path = write_chunk(tmp_path / "hist", 0, [row(0, loss=1.0)])
    Collector(options(tmp_path, [RecordingSink()])).run()
    path.unlink()
    write_chunk(tmp_path / "hist", 0, [row(0, loss=2.0)])
    with pytest.raises(CollectorError, match="identity changed|prefix mismatch"):
        Collector(options(tmp_path, [RecordingSink()])).run()


def test_bad_rows_are_reported_and_skipped_while_good_rows_flow(tmp_path):
    write_chunk(tmp_path / "hist", 0, [row(0, loss=1.0), "{not json", '{"_step": -3, "_timestamp": 1, "loss": 1}',
                                       "[1, 2]", row(4, loss=0.5)])
    sink = RecordingSink()
    result = Collector(options(tmp_path, [sink])).run()
    assert [e.step for e in sink.events()] == [0, 4]
    assert result.rejected_rows == 3
    assert sorted((p.line, p.kind) for p in result.problems) == [(2, "bad_row"), (3, "bad_row"), (4, "bad_row")]
    assert any("_step: must be nonnegative" in p.message for p in result.problems)


def test_non_finite_values_reach_the_store_but_never_a_metric_event(tmp_path):
    write_chunk(tmp_path / "hist", 0, [row(0, loss=1.0), '{"_step":1,"_timestamp":2,"loss":NaN}',
                                       '{"_step":2,"_timestamp":3,"loss":"Infinity"}'])
    store = tmp_path / "store"
    recording = RecordingSink()
    result = Collector(options(tmp_path, [recording, ExpstoreSink(store, source_id="t")])).run()
    assert [e.step for e in recording.events()] == [0]
    assert result.non_finite == 2
    assert result.first_non_finite["step"] == 1 and result.first_non_finite["metric"] == "loss"
    (summary,) = [s for s in StoreReader(ExpStore(store)).metric_summaries("seed-1") if s.metric_name == "loss"]
    assert (summary.count, summary.finite_count, summary.non_finite_count) == (3, 1, 2)
    assert os.listdir(tmp_path / "out" / "nonfinite") == []


def test_a_drains_non_finite_chunk_comes_under_its_history_chunks_sequence_and_its_key_is_pruned(tmp_path):
    """The store prunes a spool's keys past its replay horizon; the non-finite observations' with them."""
    from tau_collector.expstore.write.idempotency import STREAM_WINDOW

    store = tmp_path / "store"
    recording = RecordingSink()
    drains = STREAM_WINDOW + 8
    for d in range(drains):  # one drain, one chunk, each with a NaN
        write_chunk(tmp_path / "hist", d, [row(2 * d, loss=1.0), f'{{"_step":{2 * d + 1},"_timestamp":{2 * d + 2},'
                                           '"loss":NaN}'])
        Collector(options(tmp_path, [recording, ExpstoreSink(store, source_id="t")])).run()
    pairs = [(a.kind, a.sequence, b.kind, b.sequence) for a, b in zip(recording.chunks, recording.chunks[1:], strict=False)
             if a.kind == "non_finite"]
    assert pairs == [("non_finite", d + 1, "history", d + 1) for d in range(drains)]
    (summary,) = [s for s in StoreReader(ExpStore(store)).metric_summaries("seed-1") if s.metric_name == "loss"]
    assert (summary.finite_count, summary.non_finite_count) == (drains, drains)
    conn = ExpStore(store).connection()
    assert conn.execute("SELECT COUNT(*) FROM idempotency_keys").fetchone()[0] == 2 * (STREAM_WINDOW + 1)


def test_tensorboard_runs_are_collected_with_run_prefixes_and_a_corrupt_file_stops_alone(tmp_path):
    logdir = tmp_path / "tb"
    write_tensorboardx(logdir / "trial_1", [("loss", s, 1.0 / (s + 1), 1_790_000_000 + s) for s in range(5)])
    bad = write_tensorboardx(logdir / "trial_2", [("loss", s, 2.0, 1_790_000_000 + s) for s in range(5)])
    data = bytearray(bad.read_bytes())
    data[-6] ^= 0xFF  # inside the last frame's payload: its CRC no longer matches
    bad.write_bytes(bytes(data))
    (tmp_path / "hist").mkdir()
    sink = RecordingSink()
    result = Collector(options(tmp_path, [sink], tfevents=[str(logdir)])).run()
    names = sorted({e.metric_name for e in sink.events()})
    assert names == ["trial_1/loss", "trial_2/loss"]
    assert sorted(e.step for e in sink.events() if e.metric_name == "trial_1/loss") == [0, 1, 2, 3, 4]
    assert sorted(e.step for e in sink.events() if e.metric_name == "trial_2/loss") == [0, 1, 2, 3]
    assert result.corrupt_files == 1
    (problem,) = [p for p in result.problems if p.kind == "crc_mismatch"]
    assert problem.path == str(bad) and problem.offset is not None and problem.offset > 0
    ids = {e.metric_file_id for e in sink.events()}
    assert len(ids) == 2 and all(i.startswith("tfevents-") for i in ids)


def run_cli(*args, cwd, timeout=60, env=None):
    return subprocess.run([sys.executable, "-m", "tau_collector", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=env)


def test_cli_without_required_flags_exits_2_naming_the_flag(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TAU_METRICS")}
    proc = run_cli("collect", "--out", "o", "--history", "h.jsonl", cwd=tmp_path, env=env)
    assert proc.returncode == 2
    assert "--run is required" in proc.stderr


def test_cli_reads_taugrid_environment_when_flags_are_absent(tmp_path):
    write_chunk(tmp_path / "hist", 0, [row(0, loss=1.0)])
    (tmp_path / "completion.json").write_text("")
    env = dict(os.environ, TAU_METRICS_OFFLOAD_RUN="r-env", TAU_METRICS_OFFLOAD_PROJECT="p",
               TAU_METRICS_OFFLOAD_EXPERIMENT="e", TAU_METRICS_OFFLOAD_GROUP="g",
               TAU_METRICS_OFFLOAD_OUT=str(tmp_path / "out"), TAU_METRICS_HISTORY=str(tmp_path / "hist" / "*.jsonl"),
               TAU_METRICS_OFFLOAD_COMPLETION_FILE=str(tmp_path / "completion.json"),
               TAU_METRICS_OFFLOAD_TAGS="team=vision,tier=gold")
    proc = run_cli("collect", "--sink", "expstore", "--store", str(tmp_path / "store"), cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    status = json.loads(proc.stdout)
    assert status == {"chunks": 2, "events": 2, "completed": True, "non_finite": 0, "rejected_rows": 0,
                      "non_scalars": 0, "corrupt_files": 0}
    run = StoreReader(ExpStore(tmp_path / "store")).run("r-env")
    assert run is not None and run.state == "succeeded"


def test_adx_sink_needs_its_flags(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TAU_METRICS")}
    proc = run_cli("collect", "--run", "r", "--project", "p", "--experiment", "e", "--group", "g", "--out", "o",
                   "--history", "h.jsonl", cwd=tmp_path, env=env)
    assert proc.returncode == 2
    assert "--adx-cluster-uri is required for the adx-queued-v1 sink" in proc.stderr


def start_watching(tmp_path, *extra):
    args = ["collect", "--watch", "--interval", "30s", "--run", "seed-1", "--project", "demo", "--experiment", "sweep",
            "--group", "lr", "--out", str(tmp_path / "out"), "--history", str(tmp_path / "hist" / "*.jsonl"),
            "--completion-file", str(tmp_path / "completion.json"), "--store", str(tmp_path / "store"),
            "--ready-file", str(tmp_path / "ready"), "--done-file", str(tmp_path / "done"), *extra]
    return subprocess.Popen([sys.executable, "-m", "tau_collector", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def wait_for(predicate, timeout=DEADLINE):
    return wait_until(predicate, "the condition", timeout, interval=0.05)


def store_steps(store: Path, metric="loss"):
    if not (store / "manifest.json").exists():
        return []
    reader = StoreReader(ExpStore(store))
    if reader.run("seed-1") is None:
        return []
    return [int(s) for s in reader.rows("seed-1", metric).step]


def test_watch_mode_picks_up_new_chunks_and_exits_after_completion(tmp_path):
    (tmp_path / "hist").mkdir()
    proc = start_watching(tmp_path)
    try:
        wait_for(lambda: (tmp_path / "ready").exists())
        for i in range(3):
            write_chunk(tmp_path / "hist", i, [row(i, loss=1.0 / (i + 1))])
            wait_for(lambda i=i: store_steps(tmp_path / "store") == list(range(i + 1)))
        (tmp_path / "completion.json").write_text("")
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert json.loads(out)["completed"] is True
    assert (tmp_path / "done").read_text() == "done\n"
    assert StoreReader(ExpStore(tmp_path / "store")).run("seed-1").state == "succeeded"


def _write_rows_every(path: Path, rows: int, seconds: float) -> None:
    for step in range(rows):
        with open(path, "a") as handle:
            handle.write(row(step, loss=1.0 / (step + 1)) + "\n")
        time.sleep(seconds)


@pytest.mark.parametrize(("batching", "least_gap"), [(["--cpu-budget", "0"], None),
                                                      (["--batch-wait", "600ms"], 0.6),
                                                      (["--cpu-budget", "0.1%"], 0.0)])
def test_a_fast_writer_is_read_in_batches_and_nothing_is_lost(tmp_path, batching, least_gap):
    # With --batch-wait 600ms at most one drain per 0.6 s: 40 appends 50 ms apart make at most (the time they
    # took) / 0.6 drains, plus the first, the one after it (a new file waits at most 0.3 s), the one that finds
    # the rest and the status marker -- bounded by the time measured, so a loaded machine that writes slower
    # does not break it. A CPU budget of 0.1% waits C / 0.1% after a drain that cost C of CPU, which depends on
    # the machine: it only has to read the rows in fewer chunks than there are rows. With neither, a drain
    # follows every append: the writer appends the next row once the collector has stored the last (its
    # progress, not a clock), and each row is a chunk.
    (tmp_path / "hist").mkdir()
    history = tmp_path / "hist" / "history.jsonl"
    proc = start_watching(tmp_path, *batching)
    try:
        wait_for(lambda: (tmp_path / "ready").exists())
        started = time.monotonic()
        if least_gap is None:
            for step in range(40):
                with open(history, "a") as handle:
                    handle.write(row(step, loss=1.0 / (step + 1)) + "\n")
                wait_for(lambda step=step: store_steps(tmp_path / "store") == list(range(step + 1)))
        else:
            _write_rows_every(history, 40, 0.05)
        wait_for(lambda: store_steps(tmp_path / "store") == list(range(40)))
        took = time.monotonic() - started
        (tmp_path / "completion.json").write_text("")
        out, err = proc.communicate(timeout=DEADLINE)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    status = json.loads(out)
    assert status["events"] == 41  # every row, and the status marker
    if least_gap is None:
        assert status["chunks"] == 41
    elif least_gap:
        assert status["chunks"] <= int(took / least_gap) + 4, (status, took)
    else:
        assert status["chunks"] < 41, (status, took)


def test_sigterm_without_completion_emits_a_cancelled_marker_and_exits_1(tmp_path):
    write_chunk(tmp_path / "hist", 0, [row(0, loss=1.0)])
    proc = start_watching(tmp_path)
    try:
        wait_for(lambda: store_steps(tmp_path / "store") == [0])
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=90)
    finally:
        proc.kill()
    assert proc.returncode == 1
    assert "stopped by a signal" in err
    reader = StoreReader(ExpStore(tmp_path / "store"))
    assert reader.run("seed-1").state == "cancelled"
    assert [float(v) for v in reader.rows("seed-1", "tau/run_status").value] == [-2.0]
    assert not math.isnan(reader.rows("seed-1", "loss").value[0])


def test_source_problems_are_recorded_in_the_store_for_readers(tmp_path):
    logdir = tmp_path / "tb"
    bad = write_tensorboardx(logdir, [("loss", s, 1.0, 1_790_000_000 + s) for s in range(3)])
    data = bytearray(bad.read_bytes())
    data[-6] ^= 0xFF
    bad.write_bytes(bytes(data))
    write_chunk(tmp_path / "hist", 0, [row(0, loss=1.0), "{oops"])
    store = tmp_path / "store"
    Collector(options(tmp_path, [ExpstoreSink(store, source_id="t")], tfevents=[str(logdir)])).run()
    Collector(options(tmp_path, [ExpstoreSink(store, source_id="t")], tfevents=[str(logdir)])).run()  # again: no dups
    events = StoreReader(ExpStore(store)).run_events("seed-1")
    assert sorted(e.payload["error"] for e in events) == ["bad_row", "crc_mismatch"]
    (crc,) = [e for e in events if e.payload["error"] == "crc_mismatch"]
    assert crc.severity == "error" and str(bad) in crc.message and crc.payload["offset"] > 0
