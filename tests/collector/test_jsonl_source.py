"""Specification of the JSONL history source: framing, checkpoints, forgiving decoding, file identity."""

from __future__ import annotations

import hashlib
import math
import os

import pytest

from tau_collector.sources.history_listing import expand_history, iter_glob
from tau_collector.sources.jsonl import (
    HistoryPathError,
    history_metric_file_id,
    read_history,
    read_history_file,
)
from tau_collector.sources.records import ProblemKind
from tau_collector.spool.fingerprint import file_id, prefix_sha256


def write(path, data: bytes) -> str:
    path.write_bytes(data)
    return str(path)


def append(path: str, data: bytes) -> None:
    with open(path, "ab") as handle:
        handle.write(data)


# -- framing: last newline while running, tail on the final drain --------------------------


def test_running_read_stops_after_the_last_newline(tmp_path):
    path = write(tmp_path / "h.jsonl", b'{"_step":0,"loss":1}\n{"_step":1,"lo')
    read = read_history(path)
    assert [row.fields for row in read.rows] == [{"_step": 0, "loss": 1}]
    assert (read.offset, read.lines, read.pending_bytes) == (21, 1, len(b'{"_step":1,"lo'))


def test_a_file_without_any_newline_is_not_consumed_while_running(tmp_path):
    path = write(tmp_path / "h.jsonl", b'{"_step":0,"loss":1}')
    read = read_history(path)
    assert read.rows == [] and read.problems == []
    assert (read.offset, read.lines, read.pending_bytes) == (0, 0, 20)


def test_final_drain_consumes_the_unterminated_tail(tmp_path):
    path = write(tmp_path / "h.jsonl", b'{"_step":0,"loss":1}\n{"_step":1,"loss":2}')
    first = read_history(path)
    final = read_history(path, first.offset, first.lines, final=True)
    assert [(row.fields, row.line, row.offset) for row in final.rows] == [({"_step": 1, "loss": 2}, 2, 21)]
    assert (final.offset, final.lines, final.pending_bytes) == (41, 2, 0)


def test_final_drain_of_a_newline_terminated_file_adds_no_line(tmp_path):
    path = write(tmp_path / "h.jsonl", b'{"_step":0}\n{"_step":1}\n')
    read = read_history_file(path)
    assert (read.offset, read.lines) == (24, 2)
    assert [row.line for row in read.rows] == [1, 2]


def test_resume_from_a_checkpoint_returns_exactly_the_rest(tmp_path):
    path = write(tmp_path / "h.jsonl", b"")
    lines = [f'{{"_step":{i},"loss":{i / 7}}}\n'.encode() for i in range(50)]
    seen = []
    offset, count = 0, 0
    # the writer appends in pieces that split lines anywhere; each pass resumes from the last one
    blob = b"".join(lines)
    for cut in range(0, len(blob), 37):
        append(path, blob[cut : cut + 37])
        read = read_history(path, offset, count)
        seen.extend(read.rows)
        offset, count = read.offset, read.lines
    assert [row.fields["_step"] for row in seen] == list(range(50))
    assert [row.line for row in seen] == list(range(1, 51))
    assert [row.offset for row in seen] == [sum(map(len, lines[:i])) for i in range(50)]
    assert (offset, count) == (len(blob), 50)
    again = read_history(path, offset, count, final=True)
    assert again.rows == [] and (again.offset, again.lines) == (offset, count)


def test_passes_bounded_by_max_bytes_add_up_to_one_whole_read(tmp_path):
    lines = [b'{"_step":%d,"pad":"%s"}' % (i, b"x" * (i % 13)) for i in range(200)]
    lines[77] = b'{"_step":77,"long":"' + b"y" * 500 + b'"}'  # longer than max_bytes
    path = write(tmp_path / "h.jsonl", b"\n".join(lines) + b"\n" + b'{"_step":200}')
    whole = read_history_file(path)
    rows, offset, count, passes = [], 0, 0, 0
    while True:
        read = read_history(path, offset, count, final=True, max_bytes=64)
        rows.extend(read.rows)
        offset, count, passes = read.offset, read.lines, passes + 1
        if read.reached_end:
            break
    assert passes > 50
    assert rows == whole.rows and (offset, count) == (whole.offset, whole.lines) == (
        os.path.getsize(path), 201)


def test_rows_offsets_point_at_their_first_byte(tmp_path):
    path = write(tmp_path / "h.jsonl", b'{"a":1}\n\n{"b":2}\r\n{"c":3}\n')
    read = read_history_file(path)
    data = open(path, "rb").read()
    for row in read.rows:
        assert data[row.offset : row.offset + 1] == b"{"
    assert [row.line for row in read.rows] == [1, 3, 4]


def test_prefix_hash_is_carried_over_the_consumed_bytes(tmp_path):
    path = write(tmp_path / "h.jsonl", b'{"_step":0}\n{"_step":1}\n{"_st')
    running = hashlib.sha256()
    read = read_history(path, prefix_hash=running)
    assert running.hexdigest() == prefix_sha256(path, read.offset)


def test_offset_past_the_end_is_reported_not_read(tmp_path):
    path = write(tmp_path / "h.jsonl", b'{"_step":0}\n')
    read = read_history(path, 100, 3)
    assert read.rows == [] and (read.offset, read.lines) == (100, 3)
    [problem] = read.problems
    assert problem.kind == ProblemKind.UNREADABLE
    assert "past the end" in problem.message and path in str(problem)


def test_a_missing_file_is_unreadable(tmp_path):
    read = read_history(str(tmp_path / "gone.jsonl"))
    [problem] = read.problems
    assert problem.kind == ProblemKind.UNREADABLE and "gone.jsonl" in str(problem)


# -- decoding ------------------------------------------------------------------------------


def test_python_nan_and_infinity_tokens_are_non_finite_values(tmp_path):
    path = write(tmp_path / "h.jsonl", b'{"_step":0,"a":NaN,"b":Infinity,"c":-Infinity,"d":1}\n')
    [row] = read_history_file(path).rows
    assert math.isnan(row.fields["a"])
    assert row.fields["b"] == math.inf and row.fields["c"] == -math.inf and row.fields["d"] == 1


def test_non_finite_strings_are_non_finite_values_for_metrics_only(tmp_path):
    path = write(
        tmp_path / "h.jsonl",
        b'{"_step":0,"a":"NaN","b":"Infinity","c":"-Infinity","_note":"NaN","d":"nan","e":"Infinity!"}\n')
    [row] = read_history_file(path).rows
    assert math.isnan(row.fields["a"])
    assert row.fields["b"] == math.inf and row.fields["c"] == -math.inf
    assert row.fields["_note"] == "NaN"  # keys starting with "_" are left alone
    assert row.fields["d"] == "nan" and row.fields["e"] == "Infinity!"


def test_a_number_too_large_for_float64_is_infinite(tmp_path):
    path = write(tmp_path / "h.jsonl", b'{"_step":0,"a":1e400}\n')
    [row] = read_history_file(path).rows
    assert row.fields["a"] == math.inf


def test_crlf_line_endings_are_tolerated(tmp_path):
    path = write(tmp_path / "h.jsonl", b'{"_step":0,"a":1}\r\n{"_step":1,"a":2}\r\n')
    read = read_history_file(path)
    assert [row.fields for row in read.rows] == [{"_step": 0, "a": 1}, {"_step": 1, "a": 2}]
    assert read.problems == []


def test_blank_and_whitespace_lines_are_skipped_silently_but_counted(tmp_path):
    path = write(tmp_path / "h.jsonl", b'\n   \n\t\r\n{"_step":0}\n\n')
    read = read_history_file(path)
    assert [row.line for row in read.rows] == [4]
    assert read.problems == [] and read.lines == 5


@pytest.mark.parametrize(
    ("line", "words"),
    [
        (b'{"_step":1,', "invalid JSON"),
        (b"loss=0.5", "invalid JSON"),
        (b"[1, 2]", "an array"),
        (b'"text"', "a string"),
        (b"42", "a number"),
        (b"null", "null"),
        (b"true", "a boolean"),
        (b'{"_step":1} {"_step":2}', "trailing data"),
        (b'{"_step":1}x', "trailing data"),
    ],
)
def test_a_bad_row_is_named_by_file_and_line_and_the_rows_around_it_are_kept(tmp_path, line, words):
    path = write(tmp_path / "h.jsonl", b'{"_step":0}\n' + line + b'\n{"_step":2}\n')
    read = read_history_file(path)
    assert [row.fields["_step"] for row in read.rows] == [0, 2]
    assert [row.line for row in read.rows] == [1, 3]
    [problem] = read.problems
    assert problem.kind == ProblemKind.BAD_ROW
    assert (problem.line, problem.offset) == (2, 12)
    assert words in problem.message
    assert str(problem).startswith(f"{path}:2: ")
    assert "JSON object" in problem.message  # says what a line must be


def test_bad_rows_inside_a_large_file_keep_every_other_row(tmp_path):
    lines = [b'{"_step":%d,"x":1}' % i for i in range(10000)]
    lines[4321] = b"oops"
    lines[9999] = b"[]"
    path = write(tmp_path / "h.jsonl", b"\n".join(lines) + b"\n")
    read = read_history_file(path)
    assert len(read.rows) == 9998
    assert [problem.line for problem in read.problems] == [4322, 10000]
    assert read.rows[4321].fields["_step"] == 4322 and read.rows[4321].line == 4323


def test_invalid_utf8_decodes_like_go(tmp_path):
    path = write(tmp_path / "h.jsonl", b'{"_step":0,"note":"a\xffb\xe2\x82","ok\xc3":1}\n')
    [row] = read_history_file(path).rows
    assert row.fields == {"_step": 0, "note": "a\ufffdb\ufffd\ufffd", "ok\ufffd": 1}


def test_a_lone_surrogate_escape_becomes_the_replacement_character(tmp_path):
    path = write(tmp_path / "h.jsonl", b'{"_step":0,"note":"x\\ud800y","pair":"\\ud83d\\ude00"}\n')
    [row] = read_history_file(path).rows
    assert row.fields["note"] == "x\ufffdy" and row.fields["pair"] == "\U0001f600"


@pytest.mark.parametrize(
    "number", [2**64, 2**70 + 1, -(2**63) - 1, 123456789012345678901234567890, 18446744073709551615])
def test_integers_beyond_64_bits_parse_exactly(tmp_path, number):
    path = write(tmp_path / "h.jsonl", b'{"_step":0,"big":%d,"small":0.00001234567890123456789}\n' % number)
    [row] = read_history_file(path).rows
    assert row.fields["big"] == number and type(row.fields["big"]) is int
    assert row.fields["small"] == 0.00001234567890123456789


def test_a_big_integer_line_among_ordinary_ones_does_not_disturb_them(tmp_path):
    lines = [b'{"_step":%d,"v":0.000012345678901234567}' % i for i in range(100)]
    lines[50] = b'{"_step":50,"v":%d}' % 2**80
    path = write(tmp_path / "h.jsonl", b"\n".join(lines) + b"\n")
    read = read_history_file(path)
    assert [row.fields["_step"] for row in read.rows] == list(range(100))
    assert read.rows[50].fields["v"] == 2**80
    assert read.rows[51].fields["v"] == 0.000012345678901234567


def test_a_file_starting_with_a_big_integer_line_is_a_number_not_an_object(tmp_path):
    path = write(tmp_path / "h.jsonl", b"%d\n" % 2**70)
    read = read_history_file(path)
    assert read.rows == [] and "a number" in read.problems[0].message


# -- file identity and path expansion -----------------------------------------------------


def test_file_id_is_device_and_inode_and_changes_when_the_file_is_replaced(tmp_path):
    path = write(tmp_path / "h.jsonl", b"{}\n")
    st = os.stat(path)
    assert file_id(path) == f"{st.st_dev}:{st.st_ino}"
    before = file_id(path)
    (tmp_path / "other").write_bytes(b"{}\n")
    os.replace(tmp_path / "other", path)
    assert file_id(path) != before


def test_prefix_sha256_is_empty_at_zero_and_hashes_the_bytes_before_the_offset(tmp_path):
    path = write(tmp_path / "h.jsonl", b'{"_step":0}\n{"_step":1}\n')
    assert prefix_sha256(path, 0) == ""
    assert prefix_sha256(path, 12) == hashlib.sha256(b'{"_step":0}\n').hexdigest()
    with pytest.raises(ValueError, match="fewer than the checkpoint offset"):
        prefix_sha256(path, 1000)


def test_history_metric_file_id_hashes_the_clean_absolute_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    expected = "history-" + hashlib.sha256(str(tmp_path / "h.jsonl").encode()).hexdigest()[:16]
    assert history_metric_file_id("h.jsonl") == expected
    assert history_metric_file_id("./sub/../h.jsonl") == expected
    assert len(expected) == len("history-") + 16


def test_history_metric_file_id_cleans_a_leading_double_slash_like_go():
    assert history_metric_file_id("//tmp/h.jsonl") == history_metric_file_id("/tmp/h.jsonl")
    assert history_metric_file_id("/tmp/h.jsonl") == (
        "history-" + hashlib.sha256(b"/tmp/h.jsonl").hexdigest()[:16])


def test_expand_history_globs_absolutizes_dedupes_sorts_and_ignores_missing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name in ("b.jsonl", "a.jsonl", "c.txt", ".hidden.jsonl"):
        (tmp_path / name).write_bytes(b"")
    paths = expand_history(["*.jsonl", "a.jsonl", str(tmp_path / "b.jsonl"), "missing.jsonl", "nomatch*"])
    assert paths == [str(tmp_path / ".hidden.jsonl"), str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl")]


def test_iter_glob_matches_what_glob_matches(tmp_path, monkeypatch):
    import glob

    monkeypatch.chdir(tmp_path)
    for name in ("a/x.jsonl", "a/.h.jsonl", "a/y.txt", "b/x.jsonl", ".c/x.jsonl", "a/sub/x.jsonl", "top.jsonl",
                 "a/[x].jsonl"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"")
    (tmp_path / "a" / "dir.jsonl").mkdir()
    os.symlink(tmp_path / "missing", tmp_path / "a" / "broken.jsonl")
    for pattern in ("a/*.jsonl", "*/x.jsonl", "*/*.jsonl", "?/*", "*.jsonl", str(tmp_path / "a" / "*.json?"),
                    "a/[[]x].jsonl", "missing/*.jsonl", "*/missing.jsonl", "a/*/x.jsonl", "*/", "top.json[l]"):
        assert sorted(iter_glob(pattern)) == sorted(glob.glob(pattern, include_hidden=True)), pattern


def test_a_full_listing_reads_the_directory_one_entry_at_a_time_and_holds_no_skipped_path(tmp_path, monkeypatch):
    """200,000 closed files folded as completely read cost a restarted sidecar no memory: each name is tested as
    the directory is read (glob read the whole directory first), and what ``skip`` takes is never held."""
    for index in range(300):
        (tmp_path / f"chunk-{index:05d}.jsonl").write_bytes(b"{}\n")
    produced = [0]
    real_scandir = os.scandir

    class Counting:
        def __init__(self, path):
            self.inner = real_scandir(path)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.inner.close()

        def __iter__(self):
            for entry in self.inner:
                produced[0] += 1
                yield entry

    monkeypatch.setattr(os, "scandir", Counting)
    asked = []

    def skip(path: str) -> bool:
        asked.append(produced[0])  # entries read from the directory when this one is tested
        return os.path.basename(path) < "chunk-00290"

    paths = expand_history([str(tmp_path / "*.jsonl")], skip=skip)
    assert paths == [str(tmp_path / f"chunk-{index:05d}.jsonl") for index in range(290, 300)]
    assert len(asked) == 300
    assert asked == list(range(1, 301))  # tested one by one as read, never after a whole listing


def test_expand_history_refuses_a_directory_and_names_it(tmp_path):
    (tmp_path / "run").mkdir()
    with pytest.raises(HistoryPathError, match="is a directory") as raised:
        expand_history([str(tmp_path / "run")])
    assert str(tmp_path / "run") in str(raised.value)
    with pytest.raises(HistoryPathError, match="is a directory"):
        expand_history([str(tmp_path / "r*")])
