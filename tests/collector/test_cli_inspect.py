"""``tau-collector dump`` and ``project``: their output is a contract other tools depend on."""

from __future__ import annotations

import dataclasses
import json
import math
import subprocess
import sys
from pathlib import Path

import orjson

from fixtures.tb_writers import write_tensorboard_summary, write_tensorboardx
from tau_collector.collect.loop import Collector, CollectorOptions
from tau_collector.projection.metric_event import decode_canonical_ndjson, encode_ndjson
from tau_collector.sinks.base import Chunk, Sink
from tau_collector.taugrid.gojson import parse_time


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tau_collector", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120)


def lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines()]


def test_dump_prints_one_object_per_scalar_in_file_order_with_non_finite_as_strings(tmp_path):
    (tmp_path / "h.jsonl").write_text(
        '{"_step": 1, "_timestamp": 10.5, "loss": 0.5, "acc": NaN, "_runtime": 3, "note": "x"}\r\n'
        '{"_step": 2, "_timestamp": 11.25, "loss": Infinity}\n'
        '{"_step": 3, "_timestamp": 12, "loss": -Infinity}'  # unterminated last line: read too
    )
    proc = cli("dump", "h.jsonl", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert lines(proc.stdout) == [
        {"file": "h.jsonl", "metric": "acc", "step": 1, "wall_time": 10.5, "value": "NaN"},
        {"file": "h.jsonl", "metric": "loss", "step": 1, "wall_time": 10.5, "value": 0.5},
        {"file": "h.jsonl", "metric": "loss", "step": 2, "wall_time": 11.25, "value": "Infinity"},
        {"file": "h.jsonl", "metric": "loss", "step": 3, "wall_time": 12, "value": "-Infinity"},
    ]


def test_dump_of_history_prints_each_observation_as_orjson_writes_its_object(tmp_path):
    # Rows of several shapes (more than a print batch of them), names to strip, keys that are not metrics,
    # booleans and strings skipped, a bad row between good ones, integers beyond float64.
    rows = []
    for s in range(20_000):
        row = {"_step": s, "_timestamp": 1_790_000_000 + s / 8, " loss ": 1 / (s + 1), "_runtime": s}
        if s % 3 == 0:
            row.update({"acc": s % 7, "flag": True, "note": "x", "": 1.0, "big": 2**1100})
        if s % 1000 == 0:
            row["z"] = float("nan")
        rows.append(json.dumps(row))
    rows.insert(5, '{"_step": -1, "_timestamp": 1, "loss": 1}')
    (tmp_path / "h.jsonl").write_text("\n".join(rows) + "\n")
    proc = cli("dump", "h.jsonl", cwd=tmp_path)
    assert proc.returncode == 3
    assert [problem["line"] for problem in lines(proc.stderr)] == [6]
    expected = []
    for text in rows[:5] + rows[6:]:
        row = json.loads(text)
        for key in sorted(k for k in row if not k.startswith("_") and k.strip()):
            value = row[key]
            if isinstance(value, bool) or not isinstance(value, int | float):
                continue
            value = math.inf if isinstance(value, int) and value > 2**1000 else float(value)
            expected.append(orjson.dumps({"file": "h.jsonl", "metric": key.strip(), "step": row["_step"],
                                          "wall_time": float(row["_timestamp"]),
                                          "value": "NaN" if value != value else "Infinity" if value == math.inf
                                          else value}, option=orjson.OPT_APPEND_NEWLINE))
    assert proc.stdout.encode() == b"".join(expected)


def test_dump_reports_bad_rows_on_stderr_keeps_the_good_ones_and_exits_3(tmp_path):
    (tmp_path / "h.jsonl").write_text(
        '{"_step": 0, "_timestamp": 1, "loss": 1}\n'
        "oops\n"
        '{"_step": -2, "_timestamp": 1, "loss": 1}\n'
        '{"_step": 3, "_timestamp": 1, "loss": 3}\n'
    )
    proc = cli("dump", "h.jsonl", cwd=tmp_path)
    assert proc.returncode == 3
    assert [(r["step"], r["value"]) for r in lines(proc.stdout)] == [(0, 1), (3, 3)]
    problems = lines(proc.stderr)
    assert [(p["file"], p["line"], p["error"]) for p in problems] == [("h.jsonl", 2, "bad_row"), ("h.jsonl", 3, "bad_row")]
    assert problems[1]["message"] == "_step: must be nonnegative"


def test_dump_step_and_time_fields_for_ray_tune_results(tmp_path):
    (tmp_path / "result.json").write_text('{"training_iteration": 4, "timestamp": 1700000000, "mean_loss": 0.25}\n')
    proc = cli("dump", "result.json", "--step-field", "training_iteration", "--time-field", "timestamp", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert lines(proc.stdout) == [
        {"file": "result.json", "metric": "mean_loss", "step": 4, "wall_time": 1700000000, "value": 0.25}]


def test_dump_of_a_logdir_prefixes_metrics_with_the_run_directory(tmp_path):
    write_tensorboardx(tmp_path / "logs" / "trial_1", [("loss", 0, 1.0, 1_790_000_000.5)])
    write_tensorboardx(tmp_path / "logs" / "trial_2" / "train", [("loss", 0, 2.0, 1_790_000_001.25)])
    proc = cli("dump", "logs", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    records = lines(proc.stdout)
    assert [(r["metric"], r["value"], r["wall_time"]) for r in records] == [
        ("trial_1/loss", 1.0, 1_790_000_000.5), ("trial_2/train/loss", 2.0, 1_790_000_001.25)]
    assert records[0]["file"].startswith("logs/trial_1/") and "tfevents" in records[0]["file"]


def test_dump_of_event_files_reads_columns_and_prints_what_the_per_observation_path_prints(tmp_path):
    # Many blocks (a small --batch-bytes), several tags, non-finite values, tiny and huge exponents,
    # TF2 tensor scalars beside tensorboardX's simple values: the columnar fast path and the path
    # --tensorboard-purge takes (one object per observation) print the same bytes.
    values = [0.5, float("nan"), float("inf"), -float("inf"), 2.0**-20, 2.0**70, -0.0, 3.0]  # exact in float32
    write_tensorboardx(tmp_path / "logs" / "a", [(f"t{s % 3}", s, values[s % len(values)], 1_790_000_000 + s / 7)
                                                 for s in range(3000)])
    write_tensorboard_summary(tmp_path / "logs" / "b", [("loss", s, s / 4, 1_790_000_000 + s) for s in range(50)])
    fast = cli("dump", "logs", "--batch-bytes", "4096", cwd=tmp_path)
    slow = cli("dump", "logs", "--tensorboard-purge", cwd=tmp_path)
    assert fast.returncode == slow.returncode == 0, fast.stderr + slow.stderr
    assert fast.stdout == slow.stdout
    records = lines(fast.stdout)
    assert len(records) == 3050
    assert [r["value"] for r in records[:8]] == [0.5, "NaN", "Infinity", "-Infinity", *values[4:]]
    assert records[-1] == {"file": records[-1]["file"], "metric": "b/loss", "step": 49, "wall_time": 1_790_000_049,
                           "value": 49 / 4}


def test_dump_stops_a_corrupt_event_file_at_the_bad_frame_and_exits_3(tmp_path):
    path = write_tensorboardx(tmp_path / "logs", [("loss", s, float(s), 1_790_000_000 + s) for s in range(4)])
    data = bytearray(path.read_bytes())
    data[-6] ^= 0x01
    path.write_bytes(bytes(data))
    proc = cli("dump", str(path.relative_to(tmp_path)), cwd=tmp_path)
    assert proc.returncode == 3
    assert [r["step"] for r in lines(proc.stdout)] == [0, 1, 2]
    (problem,) = lines(proc.stderr)
    assert problem["error"] == "crc_mismatch"
    assert 0 < problem["offset"] < len(data)


def test_dump_treats_a_truncated_tail_as_not_an_error(tmp_path):
    path = write_tensorboardx(tmp_path / "logs", [("loss", s, float(s), 1_790_000_000 + s) for s in range(4)])
    path.write_bytes(path.read_bytes()[:-7])
    proc = cli("dump", str(path.relative_to(tmp_path)), cwd=tmp_path)
    assert proc.returncode == 0
    assert [r["step"] for r in lines(proc.stdout)] == [0, 1, 2]
    (problem,) = lines(proc.stderr)
    assert problem["error"] == "truncated" and problem["offset"] > 0


def test_dump_usage_errors_exit_2_and_missing_files_are_problems(tmp_path):
    assert cli("dump", cwd=tmp_path).returncode == 2
    proc = cli("dump", "missing.jsonl", cwd=tmp_path)
    assert proc.returncode == 3
    assert lines(proc.stderr)[0]["error"] == "unreadable"


class Recording(Sink):
    name = "recording"

    def __init__(self) -> None:
        self.chunks: list[Chunk] = []

    def identity(self) -> str:
        return "memory"

    def deliver(self, chunk: Chunk) -> None:
        self.chunks.append(chunk)


def test_project_prints_exactly_what_the_collector_delivers(tmp_path):
    hist = tmp_path / "hist"
    hist.mkdir()
    (hist / "history.jsonl").write_text(
        '{"_step": 0, "_timestamp": 1790000000.125, "train/loss": 1.5, "acc": 0.5}\n'
        '{"_step": 1, "_timestamp": 1790000001.25, "train/loss": 1.25, "acc": NaN}\n'
    )
    sink = Recording()
    Collector(CollectorOptions(run="seed-1", project="demo", experiment="sweep", group="lr", out=str(tmp_path / "out"),
                               sinks=[sink], history=[str(hist / "history.jsonl")], tags={"team": "vision"})).run()
    delivered = decode_canonical_ndjson(b"".join(c.ndjson for c in sink.chunks))
    exported = "2026-09-18T19:00:00Z"
    expected = b"".join(encode_ndjson(dataclasses.replace(e, exported_at=parse_time(exported))) for e in delivered)
    source_store_id = delivered[0].source_store_id
    proc = subprocess.run(
        [sys.executable, "-m", "tau_collector", "project", str(hist / "history.jsonl"), "--run", "seed-1",
         "--project", "demo", "--experiment", "sweep", "--group", "lr", "--tag", "team=vision",
         "--source-store-id", source_store_id, "--exported-at", exported],
        capture_output=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == expected
    (note,) = lines(proc.stderr.decode())
    assert (note["error"], note["metric"], note["step"], note["value"]) == ("non_finite", "acc", 1, "NaN")


def test_project_reproduces_taugrids_history_golden_from_the_command_line(tmp_path):
    from .golden import HISTORY_EVENTS_GOLDEN, HISTORY_ROW

    history = tmp_path / "runs" / "seed-1" / "history.jsonl"
    history.parent.mkdir(parents=True)
    history.write_bytes(b"\n" * 8 + HISTORY_ROW + b"\n")  # the golden row is line 9
    proc = subprocess.run(
        [sys.executable, "-m", "tau_collector", "project", "runs/seed-1/history.jsonl", "--run", "seed-1",
         "--project", "project-alpha", "--experiment", "experiment-alpha", "--group", "baseline",
         "--workspace-id", "workspace-a", "--cluster", "cluster-a", "--source-store-id", "store-a",
         "--source", "captioner-jsonl", "--metric-prefix", "trial", "--tag", " dataset = vision ",
         "--tag", "recipe=vit-enc", "--exported-at", "2026-09-18T19:00:00Z", "--metric-file-id", "jsonl-seed-1",
         "--metric-file-path", "metrics/seed-1.parquet"],
        cwd=tmp_path, capture_output=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == HISTORY_EVENTS_GOLDEN


def test_project_without_identity_is_a_usage_error(tmp_path):
    proc = cli("project", "h.jsonl", "--run", "r", cwd=tmp_path)
    assert proc.returncode == 2
    assert "--project" in proc.stderr
