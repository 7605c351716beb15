"""Specification of the normalizer: notebook rows to house rows, and the ``normalize`` stdin filter."""

from __future__ import annotations

import glob
import math
import os
import signal
import subprocess
import sys
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tau_collector.job.history_writer import HistoryWriter
from tau_collector.job.normalizer import Normalizer, StepError, classify_line, normalize_row
from tau_collector.sources.jsonl import read_history_file

from ..polling import DEADLINE

NOW = 1760000000.125
# The real command line, as the console script runs it (the package has no __main__ module).
TAU_COLLECTOR = [sys.executable, "-c", "import sys; from tau_collector.cli import main; sys.exit(main())"]


# -- normalize_row --------------------------------------------------------------------------


def test_step_becomes_underscore_step_and_now_the_timestamp():
    row = normalize_row({"step": 3, "loss": 1.25}, now=NOW)
    assert row == {"_step": 3, "_timestamp": NOW, "loss": 1.25}
    assert list(row) == ["_step", "_timestamp", "loss"]


def test_other_keys_keep_their_order_and_values():
    row = normalize_row({"z": 1, "step": 0, "a": "text", "m": None, "n": [1, 2]}, now=NOW)
    assert list(row) == ["_step", "_timestamp", "z", "a", "m", "n"]
    assert row["a"] == "text" and row["m"] is None and row["n"] == [1, 2]


@pytest.mark.parametrize("key", ["timestamp", "wall_time"])
def test_the_rows_own_time_key_is_the_timestamp_and_is_consumed(key):
    row = normalize_row({"step": 1, key: 1700000000.5, "loss": 2}, now=NOW)
    assert row == {"_step": 1, "_timestamp": 1700000000.5, "loss": 2}


def test_own_underscore_timestamp_wins_over_other_time_keys():
    row = normalize_row({"_timestamp": 5.5, "timestamp": 7, "step": 0}, now=NOW)
    assert row == {"_step": 0, "_timestamp": 5.5, "timestamp": 7}


def test_a_non_numeric_time_key_is_kept_as_is_and_now_is_used():
    row = normalize_row({"step": 0, "timestamp": "yesterday"}, now=NOW)
    assert row == {"_step": 0, "_timestamp": NOW, "timestamp": "yesterday"}


def test_a_house_row_passes_through_and_only_gains_a_missing_timestamp():
    assert normalize_row({"_step": 9, "_timestamp": 1.5, "loss": 1}, now=NOW) == {
        "_step": 9, "_timestamp": 1.5, "loss": 1}
    assert normalize_row({"_step": 9, "loss": 1}, now=NOW) == {"_step": 9, "_timestamp": NOW, "loss": 1}


def test_rows_without_a_step_count_up_from_the_previous_step_starting_at_zero():
    normalizer = Normalizer()
    steps = [normalizer.normalize_row(obj, now=NOW)["_step"]
             for obj in [{"a": 1}, {"a": 2}, {"step": 10, "a": 3}, {"a": 4}, {"_step": 20}, {"a": 5}]]
    assert steps == [0, 1, 10, 11, 20, 21]


def test_an_integral_float_step_is_an_integer():
    row = normalize_row({"step": 3.0}, now=NOW)
    assert row["_step"] == 3 and type(row["_step"]) is int


@pytest.mark.parametrize("step", ["abc", -1, 1.5, True, None, [1], 2**63, math.nan])
def test_a_step_that_is_not_a_non_negative_integer_is_rejected_with_a_clear_message(step):
    with pytest.raises(StepError, match="step") as raised:
        Normalizer().normalize_row({"step": step, "loss": 1}, now=NOW)
    assert "\n" not in str(raised.value)
    assert "non-negative" in str(raised.value)


def test_a_rejected_row_does_not_move_the_auto_step():
    normalizer = Normalizer()
    normalizer.normalize_row({"step": 4}, now=NOW)
    with pytest.raises(StepError):
        normalizer.normalize_row({"step": -1}, now=NOW)
    assert normalizer.normalize_row({}, now=NOW)["_step"] == 5


def test_non_finite_values_are_written_as_strings():
    row = normalize_row({"step": 0, "a": math.nan, "b": math.inf, "c": -math.inf, "d": 1.0}, now=NOW)
    assert row == {"_step": 0, "_timestamp": NOW, "a": "NaN", "b": "Infinity", "c": "-Infinity", "d": 1.0}


# -- classify_line --------------------------------------------------------------------------


def test_a_json_object_line_is_a_row_nan_tokens_included():
    value = classify_line(b'{"step": 1, "loss": NaN}\n')
    assert isinstance(value, dict) and value["step"] == 1 and math.isnan(value["loss"])
    assert classify_line(b'  {"step": 1}\r\n') == {"step": 1}


@pytest.mark.parametrize(
    "line",
    [
        b"epoch 1 done\n",
        b"[1, 2, 3]\n",
        b"42\n",
        b'"text"\n',
        b"null\n",
        b"{'step': 1}\n",  # a Python dict repr is log text
        b'{"step": 1} trailing\n',
        b"\r 10%|#         | 1/10\r 20%|##        | 2/10\n",
        b"\xff\xfe not utf-8 \x80\n",
        b"no newline at the end",
        b"\n",
        b"",
    ],
)
def test_anything_else_passes_through_byte_for_byte(line):
    assert classify_line(line) is line


# -- the normalize filter, end to end as a real subprocess -----------------------------------


def start_filter(out_dir, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [*TAU_COLLECTOR, "normalize", "--out", str(out_dir), *extra],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def chunk_files(out_dir) -> list[str]:
    return sorted(glob.glob(os.path.join(str(out_dir), "chunk-*.jsonl")))


def read_rows(out_dir) -> list[dict]:
    rows = []
    for path in chunk_files(out_dir):
        read = read_history_file(path)
        assert read.problems == []
        rows.extend(row.fields for row in read.rows)
    return rows


def test_filter_writes_rows_to_chunks_and_everything_else_to_stdout_unchanged(tmp_path):
    stdin = (b"starting\n"
             b'{"step": 0, "loss": 2.0}\n'
             b"\xff\xfe raw bytes \x80\n"
             b'{"loss": NaN}\r\n'
             b"progress\r 50%\r100%\n"
             b'{"step": "abc", "loss": 1}\n'
             b"[1, 2]\n"
             b"bye, no newline")
    proc = start_filter(tmp_path / "out")
    out, err = proc.communicate(stdin)
    assert proc.returncode == 0
    assert out == (b"starting\n\xff\xfe raw bytes \x80\nprogress\r 50%\r100%\n"
                   b'{"step": "abc", "loss": 1}\n[1, 2]\nbye, no newline')
    assert b"stdin line 6" in err and b"'abc'" in err and err.count(b"\n") == 1
    rows = read_rows(tmp_path / "out")
    assert [row["_step"] for row in rows] == [0, 1]
    assert rows[0]["loss"] == 2.0 and math.isnan(rows[1]["loss"])
    assert all(isinstance(row["_timestamp"], float) for row in rows)
    assert not [name for name in os.listdir(tmp_path / "out") if name.startswith(".")]


def test_filter_turns_an_unterminated_last_row_into_a_row(tmp_path):
    proc = start_filter(tmp_path / "out")
    out, _ = proc.communicate(b'{"step": 1, "loss": 0.5}')
    assert proc.returncode == 0 and out == b""
    assert read_rows(tmp_path / "out")[0]["loss"] == 0.5


def test_filter_writes_a_row_after_a_pause_before_eof_and_passes_log_lines_at_once(tmp_path):
    out_dir = tmp_path / "out"
    proc = start_filter(out_dir, "--max-delay", "0.05")
    try:
        proc.stdin.write(b'{"step": 0, "loss": 1.5}\nhello\n')
        proc.stdin.flush()
        # the log line arrives while stdin is still open
        assert proc.stdout.readline() == b"hello\n"
        # and the row is written with no more input and no EOF
        deadline = time.monotonic() + 30
        while not (chunk_files(out_dir) and read_rows(out_dir)) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert proc.poll() is None
        assert [row["loss"] for row in read_rows(out_dir)] == [1.5]
        proc.stdin.write(b'{"loss": 2.5}\n')
        proc.stdin.close()
        assert proc.wait(timeout=DEADLINE) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert [(row["_step"], row["loss"]) for row in read_rows(out_dir)] == [(0, 1.5), (1, 2.5)]
    assert len(chunk_files(out_dir)) == 1  # the second row was appended to the first row's file


def test_filter_passes_log_text_without_newline_at_once(tmp_path):
    proc = start_filter(tmp_path / "out")
    try:
        proc.stdin.write(b"epoch 1:  50%\r")  # a progress bar redrawn in place, no newline yet
        proc.stdin.flush()
        assert proc.stdout.read1(100) == b"epoch 1:  50%\r"
        proc.stdin.write(b"epoch 1: 100%\n")
        proc.stdin.close()
        assert proc.stdout.read() == b"epoch 1: 100%\n"
        assert proc.wait(timeout=DEADLINE) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_filter_sigterm_writes_the_buffered_rows(tmp_path):
    out_dir = tmp_path / "out"
    proc = start_filter(out_dir, "--max-delay", "3600")
    try:
        proc.stdin.write(b'{"step": 5, "loss": 0.75}\nmarker\n')
        proc.stdin.flush()
        assert proc.stdout.readline() == b"marker\n"  # lines are handled in order: the row is buffered
        assert chunk_files(out_dir) == []
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=DEADLINE) == 128 + signal.SIGTERM
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert [(row["_step"], row["loss"]) for row in read_rows(out_dir)] == [(5, 0.75)]


def test_filter_rows_split_across_writes_are_reassembled(tmp_path):
    proc = start_filter(tmp_path / "out")
    for piece in (b'{"step": 7, "lo', b'ss": 3', b".25}\nlog ", b"line\n"):
        proc.stdin.write(piece)
        proc.stdin.flush()
        time.sleep(0.02)
    out, _ = proc.communicate()
    assert out == b"log line\n"
    [row] = read_rows(tmp_path / "out")
    assert row["_step"] == 7 and row["loss"] == 3.25 and isinstance(row["_timestamp"], float)


def test_filter_many_rows_fill_chunks_of_max_rows(tmp_path):
    lines = b"".join(b'{"step": %d, "x": %d}\n' % (i, i * i) for i in range(2500))
    proc = start_filter(tmp_path / "out", "--max-rows", "1000", "--max-delay", "60")
    _, err = proc.communicate(lines)
    assert proc.returncode == 0, err
    chunks = chunk_files(tmp_path / "out")
    assert [len(read_history_file(path).rows) for path in chunks] == [1000, 1000, 500]
    assert [row["x"] for row in read_rows(tmp_path / "out")] == [i * i for i in range(2500)]


@pytest.mark.parametrize("args", [[], ["--out"], ["--out", "d", "--max-rows", "0"],
                                  ["--out", "d", "--max-delay", "-1"], ["--out", "d", "--bogus"]])
def test_filter_usage_errors_exit_2(tmp_path, args):
    proc = subprocess.run([*TAU_COLLECTOR, "normalize", *args],
                          input=b"", capture_output=True, cwd=tmp_path)
    assert proc.returncode == 2
    assert b"usage:" in proc.stderr


def test_filter_help_has_an_example():
    proc = subprocess.run([*TAU_COLLECTOR, "normalize", "--help"],
                          capture_output=True)
    assert proc.returncode == 0
    assert b"tau-collector normalize --out" in proc.stdout


# -- round trip: normalizer -> writer -> JSONL source ----------------------------------------

_keys = st.text(min_size=1, max_size=12).filter(lambda key: not key.startswith("_") and key not in {
    "step", "timestamp", "wall_time"})
_values = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.booleans(),
    st.none(),
    st.text(max_size=8).filter(lambda text: text not in {"NaN", "Infinity", "-Infinity"}),
)
_rows = st.lists(
    st.tuples(st.one_of(st.none(), st.integers(min_value=0, max_value=2**63 - 2)),
              st.dictionaries(_keys, _values, max_size=6)),
    max_size=30)


def same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=_rows)
def test_rows_come_back_equal_through_normalizer_writer_and_source(tmp_path_factory, rows):
    out_dir = tmp_path_factory.mktemp("chunks")
    normalizer = Normalizer()
    expected = []
    with HistoryWriter(out_dir, max_rows=7, max_delay=30) as writer:
        for step, metrics in rows:
            obj = dict(metrics) if step is None else {"step": step, **metrics}
            house = normalizer.normalize_row(obj, now=NOW)
            writer.write(house)
            expected.append((house["_step"], metrics))
    got = []
    for path in chunk_files(out_dir):
        read = read_history_file(path)
        assert read.problems == []
        got.extend(row.fields for row in read.rows)
    assert len(got) == len(expected)
    for fields, (step, metrics) in zip(got, expected, strict=True):
        assert fields["_step"] == step and fields["_timestamp"] == NOW
        assert list(fields) == ["_step", "_timestamp", *metrics]
        for key, value in metrics.items():
            assert same(fields[key], value), (key, value, fields[key])
