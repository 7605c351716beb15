"""Specification of the history chunk writer and the ``log()`` helper."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from tau_collector.job.history_writer import CHUNK_NAME, HistoryWriter, encode_row, log
from tau_collector.sources.jsonl import read_history_file

from ..polling import DEADLINE


def chunk_names(directory) -> list[str]:
    return sorted(name for name in os.listdir(directory) if not name.startswith("."))


def rows_in(directory) -> list[dict]:
    rows = []
    for name in chunk_names(directory):
        read = read_history_file(os.path.join(directory, name))
        assert read.problems == []
        rows.extend(row.fields for row in read.rows)
    return rows


def wait_for(predicate, *, limit: float = DEADLINE) -> None:
    """Poll until ``predicate()``; the limit only keeps a broken build from hanging forever."""
    deadline = time.monotonic() + limit
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.005)


def test_chunks_are_named_with_a_six_digit_counter_and_unix_milliseconds(tmp_path):
    before_ms = time.time_ns() // 1_000_000
    with HistoryWriter(tmp_path, max_rows=2, max_delay=60) as writer:
        for step in range(5):
            writer.write({"_step": step, "_timestamp": 1.5, "loss": step / 2})
    after_ms = time.time_ns() // 1_000_000
    names = chunk_names(tmp_path)
    assert [CHUNK_NAME.match(name).group(1) for name in names] == ["000001", "000002", "000003"]
    assert all(before_ms <= int(CHUNK_NAME.match(name).group(2)) <= after_ms for name in names)
    assert [row["_step"] for row in rows_in(tmp_path)] == [0, 1, 2, 3, 4]
    assert writer.rows_written == 5 and [os.path.basename(p) for p in writer.chunk_paths] == names


def test_rows_are_compact_keep_their_key_order_and_raw_utf8(tmp_path):
    with HistoryWriter(tmp_path) as writer:
        writer.write({"_step": 0, "_timestamp": 2.25, "zeta": 1, "alpha": "é", "big": 2**70})
    [name] = chunk_names(tmp_path)
    data = (tmp_path / name).read_bytes()
    expected = '{"_step":0,"_timestamp":2.25,"zeta":1,"alpha":"é","big":1180591620717411303424}\n'
    assert data == expected.encode()


def test_a_lone_surrogate_is_written_as_an_escape_so_the_file_stays_utf8():
    line = encode_row({"_step": 0, "note": "a\ud800b"})
    line.decode("utf-8")
    assert json.loads(line) == {"_step": 0, "note": "a\ud800b"}


def test_rows_are_appended_to_one_file_when_the_oldest_is_max_delay_old_without_more_rows(tmp_path):
    writer = HistoryWriter(tmp_path, max_rows=1000, max_delay=0.05)
    try:
        writer.write({"_step": 0, "_timestamp": 1.0, "loss": 1})
        wait_for(lambda: chunk_names(tmp_path) and rows_in(tmp_path))
        assert rows_in(tmp_path) == [{"_step": 0, "_timestamp": 1.0, "loss": 1}]
        writer.write({"_step": 1, "_timestamp": 2.0, "loss": 2})
        wait_for(lambda: len(rows_in(tmp_path)) == 2)
        assert [row["_step"] for row in rows_in(tmp_path)] == [0, 1]
        assert len(chunk_names(tmp_path)) == 1
    finally:
        writer.close()
    assert len(chunk_names(tmp_path)) == 1 and writer.rows_written == 2


def test_a_file_takes_max_rows_rows_then_the_next_number_starts(tmp_path):
    with HistoryWriter(tmp_path, max_rows=4, max_delay=0.001) as writer:
        for step in range(10):
            writer.write({"_step": step, "_timestamp": 1.0})
            time.sleep(0.01)  # each row written on its own: the files fill by appending
    names = chunk_names(tmp_path)
    assert [CHUNK_NAME.match(name).group(1) for name in names] == ["000001", "000002", "000003"]
    assert [len(read_history_file(str(tmp_path / name)).rows) for name in names] == [4, 4, 2]
    assert [row["_step"] for row in rows_in(tmp_path)] == list(range(10))


def test_close_writes_the_buffered_rows_and_is_idempotent(tmp_path):
    writer = HistoryWriter(tmp_path, max_rows=1000, max_delay=3600)
    writer.write({"_step": 0, "_timestamp": 1.0})
    assert chunk_names(tmp_path) == []
    writer.close()
    writer.close()
    assert rows_in(tmp_path) == [{"_step": 0, "_timestamp": 1.0}]
    with pytest.raises(ValueError, match="closed"):
        writer.write({"_step": 1, "_timestamp": 1.0})


def test_closing_an_empty_writer_writes_no_chunk(tmp_path):
    HistoryWriter(tmp_path).close()
    assert os.listdir(tmp_path) == []


def test_the_counter_continues_after_a_restart_and_past_leftover_dotfiles(tmp_path):
    with HistoryWriter(tmp_path) as writer:
        writer.write({"_step": 0, "_timestamp": 1.0})
    (tmp_path / ".chunk-000007-1.jsonl.tmp").write_bytes(b'{"_step":')  # a crashed writer's leftover
    with HistoryWriter(tmp_path) as writer:
        writer.write({"_step": 1, "_timestamp": 1.0})
    names = chunk_names(tmp_path)
    assert [CHUNK_NAME.match(name).group(1) for name in names] == ["000001", "000008"]
    assert [row["_step"] for row in rows_in(tmp_path)] == [0, 1]


def test_two_writers_in_one_directory_never_replace_each_others_chunks(tmp_path):
    first = HistoryWriter(tmp_path, max_rows=3, max_delay=3600)
    second = HistoryWriter(tmp_path, max_rows=3, max_delay=3600)  # both start at chunk 1
    for step in range(30):
        (first if step % 2 else second).write({"_step": step, "_timestamp": 1.0})
    first.close()
    second.close()
    assert sorted(row["_step"] for row in rows_in(tmp_path)) == list(range(30))
    assert len(chunk_names(tmp_path)) == 10


def test_writes_from_many_threads_all_land_exactly_once(tmp_path):
    with HistoryWriter(tmp_path, max_rows=50, max_delay=0.01) as writer:
        def produce(worker: int) -> None:
            for index in range(500):
                writer.write({"_step": worker * 1000 + index, "_timestamp": 1.0})

        threads = [threading.Thread(target=produce, args=(worker,)) for worker in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    steps = [row["_step"] for row in rows_in(tmp_path)]
    assert sorted(steps) == sorted(worker * 1000 + index for worker in range(4) for index in range(500))
    for worker in range(4):  # one thread's rows keep their order across chunks
        mine = [step for step in steps if step // 1000 == worker]
        assert mine == sorted(mine)


def test_a_concurrent_reader_up_to_the_last_newline_only_ever_sees_whole_rows_in_order(tmp_path):
    rows_per_file = 200
    done = threading.Event()
    seen: dict[str, int] = {}
    failures: list[str] = []

    def reader() -> None:
        while True:
            finished = done.is_set()
            for name in chunk_names(tmp_path):
                # as a collector reads a file its job appends to (TauGrid's last-newline rule)
                read = read_history_file(str(tmp_path / name), final=False)
                steps = [row.fields["_step"] for row in read.rows]
                if read.problems or len(steps) < seen.get(name, 0) or len(steps) > rows_per_file \
                        or steps != sorted(steps):
                    failures.append(f"{name}: {len(steps)} rows, {read.problems}")
                seen[name] = len(steps)
            if finished:
                return

    thread = threading.Thread(target=reader)
    # switch threads often, so the reader looks at the files in the middle of writes
    switch_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    thread.start()
    try:
        padding = "x" * 200  # big rows make partial reads likely
        with HistoryWriter(tmp_path, max_rows=rows_per_file, max_delay=0.001) as writer:
            for step in range(rows_per_file * 40):
                writer.write({"_step": step, "_timestamp": 1.0, "pad": padding})
                if not step % 50:
                    time.sleep(0.002)  # let the background thread append what is buffered
    finally:
        done.set()
        thread.join()
        sys.setswitchinterval(switch_interval)
    assert failures == []
    assert len(seen) == 40 and sum(seen.values()) == rows_per_file * 40
    assert [row["_step"] for row in rows_in(tmp_path)] == list(range(rows_per_file * 40))
    assert not [name for name in os.listdir(tmp_path) if name.startswith(".")]


def test_a_failed_write_leaves_no_part_of_a_row_and_the_rows_are_retried(tmp_path):
    # A real failure: the file size limit (RLIMIT_FSIZE) stops a write part-way through a row.
    script = textwrap.dedent("""
        import os, resource, signal, sys
        from tau_collector.job.history_writer import HistoryWriter, HistoryWriteError
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        out = sys.argv[1]
        writer = HistoryWriter(out, max_delay=3600)
        for step in range(5):
            writer.write({"_step": step, "_timestamp": 1.0, "pad": "x" * 100})
        writer.flush()
        (name,) = os.listdir(out)
        size = os.path.getsize(os.path.join(out, name))
        resource.setrlimit(resource.RLIMIT_FSIZE, (size + 300, resource.RLIM_INFINITY))
        for step in range(5, 10):
            writer.write({"_step": step, "_timestamp": 1.0, "pad": "x" * 100})
        try:
            writer.flush()
        except HistoryWriteError as err:
            print("refused:", err)
        print("size after the failure:", os.path.getsize(os.path.join(out, name)) == size)
        resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        writer.close()
    """)
    proc = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "refused: cannot write history rows in" in proc.stdout and "the rows are kept and retried" in proc.stdout
    assert "size after the failure: True" in proc.stdout  # the torn row was cut off again
    [name] = chunk_names(tmp_path)
    read = read_history_file(str(tmp_path / name))
    assert read.problems == [] and [row.fields["_step"] for row in read.rows] == list(range(10))


def test_writer_rejects_nonsense_limits(tmp_path):
    with pytest.raises(ValueError, match="max_rows"):
        HistoryWriter(tmp_path, max_rows=0)
    with pytest.raises(ValueError, match="max_delay"):
        HistoryWriter(tmp_path, max_delay=0)


# -- log() ----------------------------------------------------------------------------------


def test_log_without_a_history_dir_prints_one_json_line(monkeypatch, capsys):
    monkeypatch.delenv("TAU_HISTORY_DIR", raising=False)
    log(3, loss=0.5, **{"train/acc": 1})
    log(loss=math.nan)
    log({"eval/score": 2.0})
    lines = capsys.readouterr().out.splitlines()
    assert json.loads(lines[0]) == {"step": 3, "loss": 0.5, "train/acc": 1}
    assert lines[1] == '{"loss": NaN}'
    assert json.loads(lines[2]) == {"eval/score": 2.0}


def test_log_refuses_values_that_are_not_numbers(monkeypatch):
    monkeypatch.delenv("TAU_HISTORY_DIR", raising=False)

    class Thing:
        pass

    with pytest.raises(TypeError, match="loss is a Thing"):
        log(loss=Thing())


def test_log_with_a_history_dir_writes_rows_at_exit_from_numpy_and_torch_values(tmp_path):
    script = textwrap.dedent("""
        import math, numpy, torch
        from tau_collector.job.history_writer import log
        log(0, loss=numpy.float32(1.5), tokens=numpy.int64(7))
        log(loss=torch.tensor(0.25), lr=torch.tensor(3, dtype=torch.int32))
        log(loss=math.inf)
        try:
            log(loss=numpy.array([1.0, 2.0]))
        except TypeError as err:
            print("refused:", err)
    """)
    env = {**os.environ, "TAU_HISTORY_DIR": str(tmp_path / "hist")}
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("refused: log(): loss holds more than one value")
    rows = rows_in(tmp_path / "hist")
    assert [(row["_step"], row["loss"]) for row in rows] == [(0, 1.5), (1, 0.25), (2, math.inf)]
    assert rows[0]["tokens"] == 7 and type(rows[0]["tokens"]) is int
    assert rows[1]["lr"] == 3 and type(rows[1]["lr"]) is int
    assert all(isinstance(row["_timestamp"], float) for row in rows)
    assert all(re.fullmatch(r"chunk-\d{6}-\d+\.jsonl", name) for name in chunk_names(tmp_path / "hist"))
