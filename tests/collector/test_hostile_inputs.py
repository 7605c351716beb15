"""Every hostile file of issue 11, generated cheaply, through the real readers and commands.

A history line that never ends (a sparse gigabyte), a line over the line limit followed by good
rows, an event-file header claiming 2**60 bytes after good frames, rows nested a thousand levels
deep: each is an error naming file and offset, the good data before and after is kept, and no
command holds what the file claims in memory (the peak is measured in the subprocess itself).
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from tensorboard.compat.proto import event_pb2 as tb_event_pb2

from fixtures.collector import measured
from fixtures.tb_writers import write_tensorboardx
from tau_collector.expstore.read.reader import StoreReader
from tau_collector.sources.jsonl import read_history
from tau_collector.sources.logdir import discover_runs
from tau_collector.sources.masked_crc import masked_crc32c
from tau_collector.sources.records import ProblemKind
from tau_collector.sources.tensorboard_run import read_segment
from tau_collector.sources.tf_record import encode_frame, scan_file
from taunotebook.importer import import_paths

T0 = 1_790_000_000.0
GIB = 1 << 30

def rows(steps, **extra) -> str:
    return "".join(json.dumps({"_step": s, "_timestamp": T0 + s / 4, "loss": 1.0 / (s + 1), **extra}) + "\n"
                   for s in steps)


def collect(tmp_path: Path, *extra: str, history: Path | None = None, tfevents: Path | None = None) -> list[str]:
    args = ["tau_collector", "collect", "--run", "r", "--project", "p", "--experiment", "e", "--group", "g",
            "--out", str(tmp_path / "out"), "--sink", "expstore", "--store", str(tmp_path / "store"),
            "--completion-file", str(tmp_path / "completion.json"), *extra]
    if history is not None:
        args += ["--history", str(history)]
    if tfevents is not None:
        args += ["--tfevents", str(tfevents)]
    return args


# --- a history line that never ends ---------------------------------------------------------------------------------


@pytest.fixture()
def endless_line(tmp_path: Path) -> Path:
    """Three good rows, then one gigabyte of a line with no newline: a sparse file, cheap to make."""
    path = tmp_path / "hist" / "history.jsonl"
    path.parent.mkdir()
    path.write_text(rows(range(3)) + '{"_step": 3, "blob": "')
    with open(path, "r+b") as handle:
        handle.truncate(path.stat().st_size + GIB)
    return path


def test_a_line_that_never_ends_is_left_pending_while_the_job_runs_and_skipped_at_the_end(endless_line: Path):
    good_end = len(rows(range(3)))
    live = read_history(str(endless_line), final=False)
    assert [row.fields["_step"] for row in live.rows] == [0, 1, 2] and live.offset == good_end
    (problem,) = live.problems
    assert problem.kind == ProblemKind.BAD_ROW and problem.offset == good_end and problem.line == 4
    assert "over the line limit of 16777216 bytes" in problem.message and "no end yet" in problem.message
    final = read_history(str(endless_line), live.offset, live.lines, final=True)
    assert final.rows == [] and final.offset == endless_line.stat().st_size and final.lines == 4
    assert "skipped it without reading it" in final.problems[0].message


@pytest.mark.slow
def test_collect_import_and_dump_of_a_line_that_never_ends_stay_small(endless_line: Path, tmp_path: Path):
    (tmp_path / "completion.json").write_text("")
    code, out, err, peak = measured(collect(tmp_path, history=endless_line), tmp_path)
    assert code == 0, err
    assert json.loads(out)["events"] == 3 + 1 and json.loads(out)["rejected_rows"] == 1  # 3 rows + the marker
    assert f"{endless_line}:4: line is {GIB + len(chr(123)) + 17} bytes long" in err.replace('"', "") or \
        "over the line limit" in err
    assert peak < 400, f"collect peaked at {peak} MiB"
    assert StoreReader(tmp_path / "store").rows("r", "loss").step.tolist() == [0, 1, 2]

    code, out, err, peak = measured(["taunotebook", "import", str(endless_line), "--store", str(tmp_path / "s2"),
                                     "-q"], tmp_path)
    assert code == 0, err
    assert "imported 1 runs, 1 metrics, 3 points (0 non-finite); 1 rejected rows" in out
    assert peak < 400, f"import peaked at {peak} MiB"

    code, out, err, peak = measured(["tau_collector", "dump", str(endless_line)], tmp_path)
    assert code == 3 and len(out.splitlines()) == 3
    (problem,) = [json.loads(line) for line in err.strip().splitlines()]
    assert problem["error"] == "bad_row" and problem["offset"] == len(rows(range(3)))
    assert peak < 400, f"dump peaked at {peak} MiB"


def test_a_line_over_the_limit_is_a_bad_row_and_the_rows_after_it_are_read(tmp_path: Path):
    path = tmp_path / "hist" / "history.jsonl"
    path.parent.mkdir()
    long_line = json.dumps({"_step": 2, "_timestamp": T0, "loss": 0.5, "note": "x" * 5000}) + "\n"
    path.write_text(rows(range(2)) + long_line + rows(range(3, 6)))
    (tmp_path / "completion.json").write_text("")
    proc = subprocess.run([sys.executable, "-m", *collect(tmp_path, "--max-line-bytes", "1024", history=path)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert f"{path}:3: line is {len(long_line) - 1} bytes long, over the line limit of 1024 bytes" in proc.stderr
    assert StoreReader(tmp_path / "store").rows("r", "loss").step.tolist() == [0, 1, 3, 4, 5]
    (event,) = StoreReader(tmp_path / "store").run_events("r")
    assert event.payload["offset"] == len(rows(range(2))) and event.payload["error"] == "bad_row"


def test_the_line_limit_comes_from_the_environment_when_the_flag_is_absent(tmp_path: Path):
    path = tmp_path / "history.jsonl"
    path.write_text(rows(range(2)) + json.dumps({"_step": 2, "pad": "y" * 300}) + "\n")
    env = {"TAU_COLLECTOR_MAX_LINE_BYTES": "100"}
    proc = subprocess.run([sys.executable, "-m", "tau_collector", "dump", str(path)], capture_output=True,
                          text=True, env={**__import__("os").environ, **env}, timeout=120)
    assert proc.returncode == 3 and len(proc.stdout.splitlines()) == 2
    assert "over the line limit of 100 bytes" in proc.stderr
    bad = subprocess.run([sys.executable, "-m", "tau_collector", "dump", str(path)], capture_output=True, text=True,
                         env={**__import__("os").environ, "TAU_COLLECTOR_MAX_LINE_BYTES": "lots"}, timeout=120)
    assert bad.returncode == 2 and "$TAU_COLLECTOR_MAX_LINE_BYTES: 'lots' is not an integer" in bad.stderr


# --- a line of a million short keys --------------------------------------------------------------------------------


@pytest.fixture()
def wide_row(tmp_path: Path) -> Path:
    """Within the 16 MiB line limit, a row of 1.1 million ``"kN":1`` keys: as events, ~700 MB of NDJSON."""
    path = tmp_path / "wide" / "history.jsonl"
    path.parent.mkdir()
    with open(path, "w") as handle:
        handle.write(rows(range(2)))
        handle.write('{"_step": 2, ' + ",".join(f'"k{i:x}":1' for i in range(1_100_000)) + "}\n")
        handle.write(rows(range(3, 5)))
    assert path.stat().st_size < 16 << 20
    return path


@pytest.mark.slow
def test_a_row_of_a_million_keys_is_a_bad_row_in_collect_import_and_dump_and_nothing_grows(wide_row: Path,
                                                                                         tmp_path: Path):
    (tmp_path / "completion.json").write_text("")
    offset = len(rows(range(2)))
    code, out, err, peak = measured(collect(tmp_path, history=wide_row), tmp_path)
    assert code == 0, err
    assert json.loads(out)["events"] == 4 + 1 and json.loads(out)["rejected_rows"] == 1
    assert f"{wide_row}:3: line has 1100001 keys, over the limit of 20000 a row may have (--max-row-fields)" in err
    assert StoreReader(tmp_path / "store").rows("r", "loss").step.tolist() == [0, 1, 3, 4]
    assert peak < 250, f"collect peaked at {peak} MiB"

    code, out, err, peak = measured(["taunotebook", "import", str(wide_row), "--store", str(tmp_path / "s2"), "-q"],
                                    tmp_path)
    assert code == 0, err
    assert "imported 1 runs, 1 metrics, 4 points (0 non-finite); 1 rejected rows" in out
    assert peak < 250, f"import peaked at {peak} MiB"

    code, out, err, peak = measured(["tau_collector", "dump", str(wide_row)], tmp_path)
    assert code == 3 and len(out.splitlines()) == 4
    (problem,) = [json.loads(line) for line in err.strip().splitlines()]
    assert problem["error"] == "bad_row" and problem["offset"] == offset
    assert peak < 250, f"dump peaked at {peak} MiB"


def test_the_row_key_limit_is_a_flag_and_an_environment_variable(tmp_path: Path):
    path = tmp_path / "history.jsonl"
    path.write_text(rows(range(2)) + json.dumps({"_step": 2, "_timestamp": T0, **{f"m{i}": i for i in range(12)}}) + "\n")
    proc = subprocess.run([sys.executable, "-m", "tau_collector", "dump", str(path), "--max-row-fields", "10"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 3 and len(proc.stdout.splitlines()) == 2
    assert "line has 14 keys, over the limit of 10 a row may have" in proc.stderr
    env = {**__import__("os").environ, "TAU_COLLECTOR_MAX_ROW_FIELDS": "14"}
    proc = subprocess.run([sys.executable, "-m", "tau_collector", "dump", str(path)], capture_output=True, text=True,
                          env=env, timeout=120)
    assert proc.returncode == 0 and len(proc.stdout.splitlines()) == 2 + 12


# --- an event-file header that claims 2**60 bytes -----------------------------------------------------------------------


@pytest.fixture()
def huge_claim(tmp_path: Path) -> tuple[Path, int]:
    """A real writer's file (version record + 3 scalars), then a header claiming 2**60 bytes with a valid CRC."""
    path = write_tensorboardx(tmp_path / "tb" / "run", [("loss", s, 1.0 / (s + 1), T0 + s) for s in range(3)])
    good = path.stat().st_size
    length = struct.pack("<Q", 1 << 60)
    with open(path, "ab") as handle:
        handle.write(length + struct.pack("<I", masked_crc32c(length)) + b"\x08" * 100)
    return path, good


def test_a_length_beyond_the_file_is_a_truncated_tail_while_live_and_corruption_once_complete(huge_claim):
    path, good = huge_claim
    (run,) = discover_runs(path.parent)
    live = read_segment(run, str(path))
    assert [o.step for o in live.observations] == [0, 1, 2] and live.checkpoint == good
    assert [p.kind for p in live.problems] == [ProblemKind.TRUNCATED] and live.problems[0].offset == good
    done = read_segment(run, str(path), final=True)
    (problem,) = done.problems
    assert problem.kind == ProblemKind.CORRUPT and problem.offset == good
    assert f"the frame at byte {good} needs {(1 << 60) + 16} bytes and the file holds 112" in problem.message
    assert f"Records before byte {good} were read" in problem.message


def test_collect_import_and_dump_keep_the_good_frames_of_a_file_claiming_2_60_bytes(huge_claim, tmp_path: Path):
    path, good = huge_claim
    live = subprocess.run([sys.executable, "-m", *collect(tmp_path, tfevents=path.parent)], capture_output=True,
                          text=True, timeout=300)
    assert live.returncode == 0 and json.loads(live.stdout)["events"] == 3 and "claims" not in live.stderr
    (tmp_path / "completion.json").write_text("")
    final = subprocess.run([sys.executable, "-m", *collect(tmp_path, tfevents=path.parent)], capture_output=True,
                           text=True, timeout=300)
    assert final.returncode == 0, final.stderr
    assert json.loads(final.stdout)["corrupt_files"] == 1
    assert f"{path}:5: the run is complete but its event file ends inside a record" in final.stderr
    assert StoreReader(tmp_path / "store").rows("r", "loss").step.tolist() == [0, 1, 2]

    summary = import_paths([str(path.parent)], tmp_path / "s2")
    assert (summary.points, summary.corrupt_files) == (3, 1)
    assert any(f"at byte {good}" in p or ":5:" in p for p in summary.problems)

    dump = subprocess.run([sys.executable, "-m", "tau_collector", "dump", str(path)], capture_output=True, text=True,
                          timeout=120)
    assert dump.returncode == 0 and len(dump.stdout.splitlines()) == 3
    assert json.loads(dump.stderr)["offset"] == good


def test_a_record_over_the_limit_is_checked_in_pieces_and_skipped(tmp_path: Path):
    from tensorboard.compat.proto import event_pb2

    from fixtures.tb_writers import write_events

    big = event_pb2.Event(wall_time=T0, step=1, graph_def=b"g" * 300_000)
    events = [event_pb2.Event(wall_time=T0, step=0), big, event_pb2.Event(wall_time=T0 + 2, step=2)]
    events[0].summary.value.add(tag="loss", simple_value=1.0)
    events[2].summary.value.add(tag="loss", simple_value=0.5)
    path = write_events(tmp_path / "run", events)
    (run,) = discover_runs(tmp_path / "run")
    batch = read_segment(run, str(path), max_record_bytes=100_000, read_size=4096)
    assert [(o.step, o.value) for o in batch.observations] == [(0, 1.0), (2, 0.5)]
    assert batch.dropped == {"oversized_record": 1} and batch.problems == [] and batch.records == 4
    # The same record with one byte flipped is a checksum mismatch at its offset, found the same way.
    data = bytearray(path.read_bytes())
    at = data.index(b"g" * 1000) + 500
    data[at] ^= 1
    path.write_bytes(bytes(data))
    broken = read_segment(run, str(path), max_record_bytes=100_000, read_size=4096)
    assert [o.step for o in broken.observations] == [0] and broken.problems[0].kind == ProblemKind.CRC_MISMATCH


# --- an event of a million summary values --------------------------------------------------------------------------


@pytest.fixture()
def wide_event(tmp_path: Path) -> Path:
    """Within the 16 MiB record limit, one event of 1.3 million scalar values between a real writer's scalars:
    decoded, ~700 MB of protobuf objects and observations (collect reached 2.4 GB)."""
    from tensorboard.compat.proto import event_pb2

    from fixtures.tb_writers import write_events

    events = [event_pb2.Event(wall_time=T0 + s, step=s) for s in range(5)]
    for s in (0, 1, 3, 4):
        events[s].summary.value.add(tag="loss", simple_value=1.0 / (s + 1))
    for i in range(1_300_000):
        events[2].summary.value.add(tag=f"t{i % 1000}", simple_value=float(i))
    path = write_events(tmp_path / "tb" / "run", events)
    assert path.stat().st_size < 16 << 20
    return path


@pytest.mark.slow
def test_an_event_of_a_million_values_is_a_bad_event_in_collect_import_and_dump_and_nothing_grows(wide_event: Path,
                                                                                                tmp_path: Path):
    path = wide_event
    (tmp_path / "completion.json").write_text("")
    code, out, err, peak = measured(collect(tmp_path, tfevents=path.parent), tmp_path)
    assert code == 0, err
    assert json.loads(out)["events"] == 4 + 1
    assert "record 4 holds more than 20000 summary values, over the limit an event may have (--max-row-fields)" in err
    assert StoreReader(tmp_path / "store").rows("r", "loss").step.tolist() == [0, 1, 3, 4]
    assert peak < 250, f"collect peaked at {peak} MiB"

    code, out, err, peak = measured(["taunotebook", "import", str(path.parent), "--store", str(tmp_path / "s2"), "-v"],
                                    tmp_path)
    assert code == 0, err
    assert "4 points (0 non-finite); 1 rejected rows" in out and "some rows or files could not be read" in out
    assert "record 4 holds more than 20000 summary values" in err
    assert peak < 250, f"import peaked at {peak} MiB"

    for extra in ([], ["--tensorboard-purge"]):
        code, out, err, peak = measured(["tau_collector", "dump", str(path), *extra], tmp_path)
        assert code == 3 and [json.loads(line)["step"] for line in out.splitlines()] == [0, 1, 3, 4]
        (problem,) = [json.loads(line) for line in err.strip().splitlines()]
        assert problem["error"] == "bad_event" and problem["line"] == 4
        assert peak < 250, f"dump {extra} peaked at {peak} MiB"


def test_the_event_value_limit_is_the_row_field_flag(tmp_path: Path):
    from tensorboard.compat.proto import event_pb2

    from fixtures.tb_writers import write_events

    event = event_pb2.Event(wall_time=T0, step=0)
    for i in range(12):
        event.summary.value.add(tag=f"m{i}", simple_value=float(i))
    path = write_events(tmp_path / "run", [event])
    proc = subprocess.run([sys.executable, "-m", "tau_collector", "dump", str(path), "--max-row-fields", "5"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 3 and proc.stdout == ""
    assert "holds more than 5 summary values" in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "tau_collector", "dump", str(path), "--max-row-fields", "12"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and len(proc.stdout.splitlines()) == 12


# --- rows nested a thousand levels deep ------------------------------------------------------------------------------


def nested(depth: int) -> str:
    """JSON text of a value nested ``depth`` objects deep (written by hand: json.dumps would recurse)."""
    return '{"d":' * depth + '{"x":1.5}' + "}" * depth


def test_wandb_and_tune_rows_nested_1000_deep_are_dropped_and_counted_and_the_rest_imported(tmp_path: Path):
    wandb = tmp_path / "wandb" / "run-1" / "files"
    wandb.mkdir(parents=True)
    (wandb / "wandb-history.jsonl").write_text("".join(
        json.dumps({"_step": s, "_timestamp": T0 + s, "loss": 1.0 / (s + 1), "shallow": {"acc": s / 10}})[:-1]
        + ', "deep": ' + nested(1000) + "}\n" for s in range(4)))
    trial = tmp_path / "tune" / "trial_1"
    trial.mkdir(parents=True)
    (trial / "result.json").write_text("".join(
        json.dumps({"training_iteration": i, "timestamp": int(T0) + i, "mean_loss": 1.0 / i})[:-1]
        + ', "info": ' + nested(999) + "}\n" for i in range(1, 4)))
    summary = import_paths([str(tmp_path / "wandb"), str(tmp_path / "tune")], tmp_path / "store")
    assert (summary.runs, summary.points, summary.dropped, summary.rejected_rows) == (2, 4 + 4 + 3, 4 + 3, 0)
    reader = StoreReader(tmp_path / "store")
    assert reader.run("run-1").metric_names == ("loss", "shallow.acc")
    assert reader.run("trial_1").metric_names == ("mean_loss",)
    assert "7 values that are not scalars dropped" in summary.text()


def test_the_depth_limit_is_a_flag(tmp_path: Path):
    trial = tmp_path / "trial"
    trial.mkdir()
    (trial / "result.json").write_text(json.dumps({"training_iteration": 1, "timestamp": int(T0),
                                                   "a": {"b": {"c": 1.0}}, "e": {"f": 2.0}}) + "\n")
    proc = subprocess.run([sys.executable, "-m", "taunotebook", "import", str(trial), "--store",
                           str(tmp_path / "store"), "-q", "--max-depth", "2"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "1 values that are not scalars dropped" in proc.stdout
    assert StoreReader(tmp_path / "store").run("trial").metric_names == ("e/f",)



# --- histograms, images and text that claim too much (issue 29) ---------------------------------------------------


def _media_event(step: int, *values) -> tb_event_pb2.Event:
    event = tb_event_pb2.Event(wall_time=T0 + step, step=step)
    event.summary.value.extend(values)
    return event


@pytest.fixture()
def huge_media(tmp_path: Path) -> tuple[Path, dict[str, int]]:
    """Between a real writer's histogram and text, each within the 16 MiB record limit: an old-style histogram
    of a million buckets, a ``[1000000, 3]`` histogram tensor, a text tensor of a million strings, and tensors
    whose shapes claim 2**40 values from one value (``make_ndarray`` would fill them)."""
    from tensorboard.compat.proto import summary_pb2
    from tensorboard.plugins.histogram import metadata as histogram_metadata
    from tensorboard.plugins.histogram import summary_v2 as histogram_summary
    from tensorboard.plugins.text import summary_v2 as text_summary

    from fixtures.tb_writers import raw_tensor, write_events

    hist = histogram_metadata.create_summary_metadata(display_name="", description="")
    million = 1_000_000
    histo = summary_pb2.HistogramProto(min=0.0, max=1.0, bucket_limit=np.linspace(0, 1, million).tolist(),
                                       bucket=[1.0] * million)
    events = [
        _media_event(0, *histogram_summary.histogram_pb("h", np.arange(10.0), buckets=3).value,
                     *text_summary.text_pb("t", "before").value),
        _media_event(1, summary_pb2.Summary.Value(tag="h", histo=histo)),
        _media_event(2, summary_pb2.Summary.Value(tag="h", tensor=raw_tensor(
            1, shape=(million, 3), tensor_content=np.ones((million, 3), np.float32).tobytes()))),
        _media_event(3, summary_pb2.Summary.Value(tag="t", tensor=raw_tensor(7, shape=(million,),
                                                                             string_val=[b""] * million))),
        _media_event(4, summary_pb2.Summary.Value(tag="h", tensor=raw_tensor(2, shape=(1 << 40, 3), double_val=[1.0]),
                                                  metadata=hist)),
        _media_event(5, summary_pb2.Summary.Value(tag="t", tensor=raw_tensor(7, shape=(1 << 40,), string_val=[b"x"]))),
        _media_event(6, *histogram_summary.histogram_pb("h", np.arange(4.0), buckets=2).value,
                     *text_summary.text_pb("t", "after").value),
    ]
    path = write_events(tmp_path / "tb" / "run", events)
    frames = [offset for offset, _ in scan_file(path).frames]
    return path, {"histo": frames[2], "tensor": frames[3], "strings": frames[4], "claim_h": frames[5],
                  "claim_t": frames[6]}


@pytest.mark.slow
def test_a_million_buckets_or_strings_and_shapes_claiming_2_40_values_are_bad_values_and_nothing_grows(
        huge_media, tmp_path: Path):
    path, at = huge_media
    code, out, err, peak = measured(["tau_collector", "dump", "--kind", "histograms", str(path)], tmp_path)
    assert code == 3
    assert [(r["step"], len(r["buckets"])) for r in map(json.loads, out.splitlines())] == [(0, 3), (6, 2)]
    problems = [json.loads(line) for line in err.strip().splitlines()]
    assert [(p["error"], p["offset"]) for p in problems] == [("bad_value", at["histo"]), ("bad_value", at["tensor"]),
                                                              ("bad_value", at["claim_h"])]
    assert "histogram holds 1000000 buckets, over the limit of 33333 (--max-tensor-values" in problems[0]["message"]
    assert "tensor shape [1000000, 3] holds 3000000 values, over the limit of 100000" in problems[1]["message"]
    assert "tensor shape [1099511627776, 3] holds 3298534883328 values" in problems[2]["message"]
    assert peak < 250, f"dump --kind histograms peaked at {peak} MiB"

    code, out, err, peak = measured(["tau_collector", "dump", "--kind", "text", str(path)], tmp_path)
    assert code == 3 and [json.loads(r)["text"] for r in out.splitlines()] == [["before"], ["after"]]
    problems = [json.loads(line) for line in err.strip().splitlines()]
    assert [(p["error"], p["offset"]) for p in problems] == [("bad_value", at["strings"]), ("bad_value", at["claim_t"])]
    assert f"{path}" == problems[0]["file"] and "holds 1000000 values, over the limit of 100000" in problems[0]["message"]
    assert peak < 250, f"dump --kind text peaked at {peak} MiB"


def _image_claiming(claim: int) -> bytes:
    """A ``Summary.Image`` whose ``encoded_image_string`` says it is ``claim`` bytes long; 16 bytes follow."""
    length = bytearray()
    while claim >= 0x80:
        length.append(claim & 0x7F | 0x80)
        claim >>= 7
    length.append(claim)
    return b"\x08\x02\x10\x02\x22" + bytes(length) + b"\x89PNG\r\n\x1a\n" + bytes(8)


def test_an_image_claiming_2_31_bytes_is_a_bad_value_at_its_offset_and_the_images_around_it_are_read(tmp_path: Path):
    from fixtures.tb_writers import pictures, tf_image_value, write_events
    from tau_collector.sources.tensorboard_proto import event_pb2 as ours

    path = write_events(tmp_path / "run", [_media_event(0, tf_image_value("im", pictures(2, 3, 3, 0)))])
    hostile = ours.Event(wall_time=T0 + 1, step=1)
    hostile.summary.value.add(tag="im", image=_image_claiming(1 << 31))
    good = _media_event(2, tf_image_value("im", pictures(1, 3, 3, 1), metadata=False))
    at = path.stat().st_size
    with path.open("ab") as handle:
        handle.write(encode_frame(hostile.SerializeToString()) + encode_frame(good.SerializeToString()))
    proc = subprocess.run([sys.executable, "-m", "tau_collector", "dump", "--kind", "images", str(path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 3
    assert [(r["step"], len(r["images"])) for r in map(json.loads, proc.stdout.splitlines())] == [(0, 2), (2, 1)]
    (problem,) = [json.loads(line) for line in proc.stderr.strip().splitlines()]
    assert (problem["error"], problem["offset"], problem["line"]) == ("bad_value", at, 3)
    assert problem["message"].startswith("images 'im' at step 1 cannot be read: not a SummaryImage")


def test_an_image_event_over_the_record_limit_is_a_bad_event_naming_its_offset_when_images_are_read(tmp_path: Path):
    from fixtures.tb_writers import pictures, tf_image_value, write_events

    small = _media_event(0, tf_image_value("im", pictures(1, 4, 4, 0)))
    big = _media_event(1, tf_image_value("im", pictures(1, 200, 200, 1), metadata=False))
    after = _media_event(2, tf_image_value("im", pictures(1, 4, 4, 2), metadata=False))
    path = write_events(tmp_path / "run", [small, big, after])
    offset = scan_file(path).frames[2][0]
    # (A record longer than the limit is read whole when a block holds it anyway: blocks of 4 KiB here.)
    limits = ["--max-line-bytes", "100000", "--batch-bytes", "4096"]
    proc = subprocess.run([sys.executable, "-m", "tau_collector", "dump", "--kind", "images", *limits, str(path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 3 and [json.loads(r)["step"] for r in proc.stdout.splitlines()] == [0, 2]
    (problem,) = [json.loads(line) for line in proc.stderr.strip().splitlines()]
    assert (problem["error"], problem["offset"], problem["line"]) == ("bad_event", offset, 3)
    assert "over the limit of 100000 a record may have (--max-line-bytes)" in problem["message"]
    # The scalar dump counts it as before, without a problem.
    scalars = subprocess.run([sys.executable, "-m", "tau_collector", "dump", *limits, str(path)],
                             capture_output=True, text=True, timeout=120)
    assert (scalars.returncode, scalars.stdout, scalars.stderr) == (0, "", "")


def test_the_tensor_value_limit_is_a_flag_and_an_environment_variable(tmp_path: Path):
    from tensorboard.plugins.histogram import summary_v2 as histogram_summary

    from fixtures.tb_writers import write_events

    path = write_events(tmp_path / "run", [_media_event(0, *histogram_summary.histogram_pb(
        "h", np.arange(100.0), buckets=10).value)])  # 30 values

    def run(*extra: str, env: dict | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "tau_collector", "dump", "--kind", "histograms", *extra, str(path)],
                              capture_output=True, text=True, timeout=120,
                              env={**os.environ, **(env or {})})

    refused = run("--max-tensor-values", "29")
    assert refused.returncode == 3 and refused.stdout == ""
    assert "holds 30 values, over the limit of 29 (--max-tensor-values)" in refused.stderr
    assert len(run("--max-tensor-values", "30").stdout.splitlines()) == 1
    assert run(env={"TAU_COLLECTOR_MAX_TENSOR_VALUES": "29"}).returncode == 3
