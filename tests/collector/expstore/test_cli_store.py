"""``tau-collector store`` prints runs, metrics, rows and series of a store as JSON lines."""

from __future__ import annotations

import argparse
import json
import math

import pytest

from tau_collector.cli import store as store_cli

from .events import event, new_store, non_finite


def _main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="tau-collector")
    store_cli.add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


@pytest.fixture
def store_dir(tmp_path):
    store, writer = new_store(tmp_path)
    writer.write_chunk("k", [event(0, 1.5), event(1, 2.0), event(3, 0.25)], [non_finite(2, math.inf)],
                       request_hash="h")
    return str(store.root)


def _lines(capsys) -> list[dict]:
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def test_runs(store_dir, capsys):
    assert _main(["store", "runs", "--store", store_dir]) == 0
    (run,) = _lines(capsys)
    assert run["run_id"] == "seed-1" and run["state"] == "running" and run["metric_names"] == ["train/loss"]


def test_metrics(store_dir, capsys):
    assert _main(["store", "metrics", "--store", store_dir, "--run", "seed-1"]) == 0
    (m,) = _lines(capsys)
    assert m["name"] == "train/loss"
    assert (m["count"], m["finite_count"], m["non_finite_count"], m["latest_value"]) == (4, 3, 1, 0.25)


def test_rows_print_rfc3339_times_and_non_finite_strings(store_dir, capsys):
    assert _main(["store", "rows", "--store", store_dir, "--run", "seed-1", "--metric", "train/loss",
                  "--start-step", "1"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == '{"metric":"train/loss","step":1,"wall_time":"2025-10-09T08:53:20.001Z","value":2}'
    assert json.loads(out[1])["value"] == "Infinity"
    assert [json.loads(line)["step"] for line in out] == [1, 2, 3]


def test_series_ends_with_its_counts(store_dir, capsys):
    assert _main(["store", "series", "--store", store_dir, "--run", "seed-1", "--metric", "train/loss",
                  "--max-points", "1"]) == 0
    lines = _lines(capsys)
    assert lines[0]["step"] == 3
    assert lines[-1] == {"source_points": 4, "returned_points": 1, "partial": True}


def test_missing_store_exits_1(tmp_path, capsys):
    assert _main(["store", "runs", "--store", str(tmp_path / "nowhere")]) == 1
    assert "no expstore" in capsys.readouterr().err


def test_missing_run_exits_1(store_dir, capsys):
    assert _main(["store", "metrics", "--store", store_dir, "--run", "nope"]) == 1
    assert "not found" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [
    ["store", "rows", "--run", "seed-1"],
    ["store", "metrics"],
    ["store", "series", "--run", "seed-1", "--metric", "m", "--max-points", "0"],
    ["store", "rows", "--run", "seed-1", "--metric", "m", "--start-step", "5", "--end-step", "1"],
])
def test_usage_errors_exit_2(store_dir, argv, capsys):
    assert _main([*argv, "--store", store_dir]) == 2
    assert "error" in capsys.readouterr().err


def test_unknown_action_exits_2(store_dir):
    with pytest.raises(SystemExit) as info:
        _main(["store", "bogus", "--store", store_dir])
    assert info.value.code == 2


def test_rows_without_a_sayable_wall_time_print_null(tmp_path, capsys):
    """No wall time (the reader's INT64_MIN) or one past year 9999 (the store holds any int64 µs): null."""
    store, writer = new_store(tmp_path)
    missing, far = event(1, 1.0), event(2, 2.0)
    missing.wall_time, far.wall_time = None, (2**63 - 1) * 1000  # as another writer's file may hold them
    writer.write_chunk("a", [missing, far, event(3, 3.0, wall_ns=253_402_300_799_999_999_000)], [], request_hash="h")
    assert _main(["store", "rows", "--store", str(store.root), "--run", "seed-1", "--metric", "train/loss"]) == 0
    assert [json.loads(line)["wall_time"] for line in capsys.readouterr().out.splitlines()] == [
        None, None, "9999-12-31T23:59:59.999999Z"]
