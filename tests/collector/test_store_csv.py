"""``tau-collector store rows --format csv``: every stored point as CSV, the same text as the Portal's export."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

IDENTITY = ["--run", "r1", "--project", "demo", "--experiment", "e", "--group", "g"]


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tau_collector", *args], cwd=cwd, capture_output=True, timeout=120)


@pytest.fixture
def store(tmp_path) -> Path:
    """A run of 2,500 steps (two history files), NaN at 3, +Inf at 5, -Inf at 8, step 7 logged twice."""
    rows = []
    for step in range(2500):
        value = {3: float("nan"), 5: float("inf"), 8: float("-inf")}.get(step, 1.0 / (step + 1))
        rows.append({"_step": step, "_timestamp": 1_790_000_000.25 + step, "loss": value})
    rows.append({"_step": 7, "_timestamp": 1_790_009_000.5, "loss": 42.0})  # later: it wins
    (tmp_path / "a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[:1200]))
    (tmp_path / "b.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[1200:]))
    (tmp_path / "done").write_text("")
    out = cli("collect", *IDENTITY, "--out", "out", "--history", "*.jsonl", "--store", "store",
              "--completion-file", "done", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    return tmp_path / "store"


def test_rows_as_csv_hold_every_stored_point_with_non_finite_values_spelled_out(store, tmp_path):
    out = cli("store", "rows", "--store", str(store), "--run", "r1", "--metric", "loss", "--format", "csv",
              cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.decode().splitlines()
    assert lines[0] == "step,wall_time,value"
    assert len(lines) == 1 + 2500
    assert lines[1:10] == ["0,1790000000.25,1", "1,1790000001.25,0.5", "2,1790000002.25,0.3333333333333333",
                           "3,1790000003.25,NaN", "4,1790000004.25,0.2", "5,1790000005.25,Infinity",
                           "6,1790000006.25,0.14285714285714285", "7,1790009000.5,42", "8,1790000008.25,-Infinity"]


def test_csv_rows_agree_with_the_json_lines_point_for_point(store, tmp_path):
    csv_out = cli("store", "rows", "--store", str(store), "--run", "r1", "--metric", "loss", "--format", "csv",
                  cwd=tmp_path).stdout.decode().splitlines()[1:]
    jsonl = [json.loads(line) for line in cli("store", "rows", "--store", str(store), "--run", "r1", "--metric",
                                               "loss", cwd=tmp_path).stdout.decode().splitlines()]
    assert [int(line.split(",")[0]) for line in csv_out] == [p["step"] for p in jsonl]
    spelled = {"NaN": "NaN", "Infinity": "Infinity", "-Infinity": "-Infinity"}
    assert [line.split(",")[2] for line in csv_out] == [
        spelled[p["value"]] if isinstance(p["value"], str) else repr(float(p["value"])).removesuffix(".0")
        for p in jsonl]


def test_a_window_of_rows_as_csv(store, tmp_path):
    out = cli("store", "rows", "--store", str(store), "--run", "r1", "--metric", "loss", "--format", "csv",
              "--start-step", "1199", "--end-step", "1201", cwd=tmp_path)
    assert [line.split(",")[0] for line in out.stdout.decode().splitlines()] == ["step", "1199", "1200", "1201"]


@pytest.mark.parametrize(("args", "message"), [
    (["series", "--format", "csv"], "--format csv is for rows (every stored point), not series"),
    (["rows", "--format", "xlsx"], "argument --format: invalid choice: 'xlsx'"),
])
def test_csv_usage_errors_name_the_flag(store, tmp_path, args, message):
    what, *rest = args
    out = cli("store", what, "--store", str(store), "--run", "r1", "--metric", "loss", *rest, cwd=tmp_path)
    assert out.returncode == 2
    assert message in out.stderr.decode()
