"""``taunotebook import``: real TensorBoard writers, generated W&B / Ray Tune / JSONL history, into a real store."""

from __future__ import annotations

import json
import math
import shutil
import sqlite3
from pathlib import Path

import pytest

from fixtures.tb_writers import reference_scalars, write_tensorboardx, write_torch
from tau_collector.expstore.read.reader import StoreReader
from tau_collector.sources.read_limits import Limits
from taunotebook import cli, importer
from taunotebook.importer import discover_sources, import_paths, safe_run_id

T0 = 1_700_000_000.0


def _tensorboard(root: Path) -> Path:
    logdir = root / "tb"
    write_tensorboardx(logdir / "exp1" / "train", [("loss", s, 1.0 / (s + 1), T0 + s) for s in range(40)])
    write_torch(logdir / "exp1" / "Eval Set", [("acc", s, s / 100.0, T0 + s) for s in range(0, 40, 10)])
    return logdir


def _wandb(root: Path) -> Path:
    run = root / "wandb" / "run-20240101_120000-AbC123"
    (run / "files").mkdir(parents=True)
    lines = [json.dumps({"_step": s, "_timestamp": T0 + s + 0.5, "_runtime": s, "train/loss": 2.0 - s / 10,
                         "media": {"_type": "image-file", "path": "x.png"},
                         "val": {"acc": s / 10, "note": "text"}}) for s in range(8)]
    lines.append('{"_step": 8, "_timestamp": 1700000009, "train/loss": NaN}')
    lines.append("this is not json")
    (run / "files" / "wandb-history.jsonl").write_text("\n".join(lines) + "\n")
    (run / "files" / "x.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(16))  # the image its rows name
    return run


def _tune(root: Path) -> Path:
    experiment = root / "ray_results" / "sweep"
    for trial, lr in (("train_fn_0001_lr=0.1", 0.1), ("train_fn_0002_lr=0.01", 0.01)):
        directory = experiment / trial
        directory.mkdir(parents=True)
        rows = [{"training_iteration": i, "timestamp": int(T0) + i, "mean_loss": lr / i, "done": i == 5,
                 "trial_id": trial[9:13], "pid": 123, "config": {"lr": lr}, "info": {"grad_norm": i * 1.5}}
                for i in range(1, 6)]
        (directory / "result.json").write_text("".join(json.dumps(r) + "\n" for r in rows))
        (directory / "params.json").write_text(json.dumps({"lr": lr}))
    return experiment


def _jsonl(root: Path) -> Path:
    path = root / "history.jsonl"
    path.write_text("".join(json.dumps({"_step": s, "_timestamp": T0 + s, "reward": s * 2}) + "\n" for s in range(6)))
    return path


def _table_counts(store: Path) -> dict[str, object]:
    with sqlite3.connect(store / "index.sqlite") as conn:
        counts = {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
                  for t in ("runs", "metric_files", "metric_summaries", "idempotency_keys", "events")}
        counts["summaries"] = conn.execute(
            "SELECT run_id, metric_name, count, finite_count, non_finite_count, min_step, max_step "
            "FROM metric_summaries ORDER BY run_id, metric_name").fetchall()
    return counts


@pytest.fixture()
def sources(tmp_path: Path) -> dict[str, Path]:
    return {"tb": _tensorboard(tmp_path), "wandb": _wandb(tmp_path), "tune": _tune(tmp_path),
            "jsonl": _jsonl(tmp_path)}


def test_discovery_gives_one_valid_run_per_source(sources: dict[str, Path]) -> None:
    found = discover_sources([str(p) for p in sources.values()])
    assert [(s.kind, s.run_id) for s in found] == [
        ("tensorboard", "exp1-eval-set"),
        ("tensorboard", "exp1-train"),
        ("wandb", "run-20240101_120000-abc123"),
        ("tune", "train_fn_0001_lr-0.1"),
        ("tune", "train_fn_0002_lr-0.01"),
        ("jsonl", "history"),
    ]


def test_import_all_kinds_then_reimport_changes_nothing(sources, tmp_path: Path, capsys) -> None:
    store = tmp_path / "store"
    argv = ["import", *map(str, sources.values()), "--store", str(store), "--project", "old",
            "--experiment", "legacy", "--group", "g1", "-q"]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    # 6 runs; metrics: acc, loss, train/loss, val.acc, 2 x (mean_loss, info/grad_norm), reward
    assert "imported 6 runs, 9 metrics" in out
    points = 4 + 40 + 8 + 8 + 2 * (5 + 5) + 6
    assert f"{points} points (1 non-finite); 1 rejected rows, 0 corrupt files" in out

    reader = StoreReader(store)
    runs = {r.run_id: r for r in reader.runs()}
    assert set(runs) == {"exp1-eval-set", "exp1-train", "run-20240101_120000-abc123", "train_fn_0001_lr-0.1",
                         "train_fn_0002_lr-0.01", "history"}
    assert {(r.project, r.experiment_id, r.run_group_id) for r in runs.values()} == {("old", "legacy", "g1")}
    # Imported history has ended: completed at its newest point (not "running" forever).
    assert {r.state for r in runs.values()} == {"completed"}
    assert runs["history"].completed_at == "2023-11-14T22:13:25Z"  # T0 + 5 s
    assert runs["exp1-train"].metric_names == ("loss",)
    assert runs["train_fn_0001_lr-0.1"].metric_names == ("info/grad_norm", "mean_loss")

    # TensorBoard points are TensorBoard's own view of the run
    train = sources["tb"] / "exp1" / "train"
    reference = reference_scalars(train)["loss"]
    rows = reader.rows("exp1-train", "loss")
    assert rows.step.tolist() == [step for step, _, _ in reference]
    assert rows.value.tolist() == pytest.approx([value for _, _, value in reference])
    assert rows.wall_time.tolist() == [round(wall * 1e6) for _, wall, _ in reference]

    wandb = reader.rows("run-20240101_120000-abc123", "train/loss")
    assert wandb.step.tolist() == list(range(9))
    assert math.isnan(wandb.value[-1]) and wandb.value[0] == 2.0
    assert runs["run-20240101_120000-abc123"].metric_names == ("train/loss", "val.acc")
    assert reader.rows("run-20240101_120000-abc123", "val.acc").value.tolist() == pytest.approx(
        [s / 10 for s in range(8)])
    tune = reader.rows("train_fn_0002_lr-0.01", "mean_loss")
    assert tune.step.tolist() == [1, 2, 3, 4, 5]
    assert tune.value.tolist() == pytest.approx([0.01 / i for i in range(1, 6)])
    assert tune.wall_time.tolist() == [(int(T0) + i) * 1_000_000 for i in range(1, 6)]
    assert reader.rows("history", "reward").value.tolist() == [0, 2, 4, 6, 8, 10]
    problems = reader.run_events("run-20240101_120000-abc123")
    assert len(problems) == 1 and "not json" not in problems[0].message and ":10:" in problems[0].message

    before = _table_counts(store)
    assert before["runs"] == 6
    assert cli.main(argv) == 0
    assert _table_counts(store) == before


def test_reimport_through_api_keeps_summaries(sources, tmp_path: Path) -> None:
    store = tmp_path / "store"
    first = import_paths([str(sources["tb"])], store)
    before = _table_counts(store)
    second = import_paths([str(sources["tb"])], store)
    assert _table_counts(store) == before
    assert (first.runs, first.metrics, first.points, first.unchanged) == (2, 2, 44, 0)
    # The same bytes again are not even read: both runs are reported unchanged.
    assert (second.runs, second.points, second.unchanged, second.files) == (0, 0, 2, 2)
    assert "2 sources unchanged since an earlier import (skipped)" in second.text()
    assert [s[2] for s in before["summaries"]] == [4, 40]


def test_corrupt_event_file_is_counted_and_the_rest_imported(tmp_path: Path) -> None:
    logdir = tmp_path / "tb"
    write_tensorboardx(logdir / "good", [("loss", s, float(s), T0 + s) for s in range(20)])
    bad = write_tensorboardx(logdir / "bad", [("loss", s, float(s), T0 + s) for s in range(20)])
    data = bytearray(bad.read_bytes())
    data[len(data) // 2] ^= 0xFF
    bad.write_bytes(bytes(data))
    summary = import_paths([str(logdir)], tmp_path / "store")
    assert summary.corrupt_files == 1
    reader = StoreReader(tmp_path / "store")
    assert len(reader.rows("good", "loss")) == 20
    assert 0 < len(reader.rows("bad", "loss")) < 20
    assert reader.run_events("bad")


def test_a_file_that_vanishes_before_it_is_read_is_reported_and_the_rest_imported(tmp_path: Path,
                                                                                  monkeypatch) -> None:
    logdir = _tensorboard(tmp_path)
    found = discover_sources([str(logdir)])
    gone = Path(found[0].files()[0])
    monkeypatch.setattr(importer, "discover_sources", lambda paths, limits: found)
    gone.unlink()  # between discovery and reading: deleted by a cleanup job, a moved logdir...
    summary = import_paths([str(logdir)], tmp_path / "store")
    assert summary.corrupt_files == 1 and summary.runs == 1 and summary.points == 40
    assert any("cannot read event file" in p and str(gone) in p for p in summary.problems)
    # Nothing was recorded for the vanished source: once the file is back, it is imported.
    write_torch(gone.parent, [("acc", s, s / 100.0, T0 + s) for s in range(0, 40, 10)], name=gone.name)
    again = import_paths([str(logdir)], tmp_path / "store")
    assert (again.runs, again.points, again.unchanged) == (1, 4, 1)


def test_progress_counts_sources_bytes_and_points_on_stderr(sources, tmp_path: Path, capsys) -> None:
    import_paths([str(sources["jsonl"]), str(sources["tune"])], tmp_path / "store", progress=True)
    captured = capsys.readouterr()
    size = sources["jsonl"].stat().st_size + sum(p.stat().st_size for p in sources["tune"].rglob("result.json"))
    last = captured.err.strip().splitlines()[-1]
    assert last.startswith(f"import: 3/3 sources, {size / 1024:.1f} KiB, 26 points (")
    assert captured.out == ""


def test_small_batches_and_a_grown_run_adds_only_its_new_points(sources, tmp_path: Path) -> None:
    train = sources["tb"] / "exp1" / "train"
    summary = import_paths([str(train)], tmp_path / "store", limits=Limits(batch_bytes=300))
    size = sum(p.stat().st_size for p in train.iterdir())
    before = _table_counts(tmp_path / "store")
    # every batch is delivered under its own block key (the run's files are then clustered into one)
    with sqlite3.connect(tmp_path / "store" / "index.sqlite") as conn:
        blocks = conn.execute("SELECT count(*) FROM idempotency_keys WHERE key LIKE 'import-block-%'").fetchone()[0]
    assert summary.points == 40 and blocks >= size // 300
    assert before["summaries"][0][2:5] == (40, 40, 0)
    # The run goes on in a new event file: importing again reads the run, finds the blocks of the first
    # file already written, and adds the new file's points only.
    write_tensorboardx(train, [("loss", s, 1.0 / (s + 1), T0 + s) for s in range(40, 60)],
                       name="events.out.tfevents.9999999999.later")
    again = import_paths([str(train)], tmp_path / "store")
    assert again.unchanged == 0 and again.points == 20
    after = _table_counts(tmp_path / "store")
    assert after["summaries"][0][2:7] == (60, 60, 0, 0, 59)
    assert StoreReader(tmp_path / "store").rows("train", "loss").step.tolist() == list(range(60))


def test_default_store_is_under_tau_home(sources, tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("TAU_HOME", str(tmp_path / "home"))
    assert cli.main(["import", str(sources["jsonl"]), "-q"]) == 0
    assert (tmp_path / "home" / "store" / "index.sqlite").is_file()
    assert [r.run_id for r in StoreReader(tmp_path / "home" / "store").runs()] == ["history"]


@pytest.mark.parametrize("argv", [
    ["import"],
    ["import", "does-not-exist"],
    ["import", "{jsonl}", "--project", "Bad/Project"],
    ["import", "{jsonl}", "--bogus"],
    ["import", "{empty}"],
])
def test_usage_errors_exit_2(argv, sources, tmp_path: Path, capsys) -> None:
    (tmp_path / "empty").mkdir()
    argv = [a.format(jsonl=sources["jsonl"], empty=tmp_path / "empty") for a in argv]
    with pytest.raises(SystemExit) as exc:
        cli.main([*argv, "--store", str(tmp_path / "store")])
    assert exc.value.code == 2
    assert "usage: taunotebook import" in capsys.readouterr().err
    assert not (tmp_path / "store").exists()


def test_run_of_another_project_is_an_error_not_a_traceback(sources, tmp_path: Path, capsys) -> None:
    store = str(tmp_path / "store")
    assert cli.main(["import", str(sources["jsonl"]), "--store", store, "-q"]) == 0
    before = _table_counts(tmp_path / "store")
    assert cli.main(["import", str(sources["jsonl"]), "--store", store, "-q", "--project", "other"]) == 1
    err = capsys.readouterr().err
    assert "already belongs to project 'default'" in err and "--project" in err
    assert _table_counts(tmp_path / "store") == before


def test_help_has_examples(capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(["import", "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "examples:" in out and "taunotebook import runs/" in out and "--store DIR" in out
    assert cli.main(["--help"]) == 0
    assert "import" in capsys.readouterr().out


def test_safe_run_id() -> None:
    assert safe_run_id("Exp 1/Train") == "exp-1-train"
    assert safe_run_id("__x__") == "x"
    assert safe_run_id("///") == "run"
    assert safe_run_id("trial_0001_lr=0.1") == "trial_0001_lr-0.1"


def test_single_event_file_and_copy_of_a_logdir_are_distinct_sources(tmp_path: Path) -> None:
    logdir = _tensorboard(tmp_path)
    copy = tmp_path / "copy"
    shutil.copytree(logdir, copy)
    event_file = next((logdir / "exp1" / "train").iterdir())
    found = discover_sources([str(event_file), str(copy)])
    assert [(s.kind, s.run_id) for s in found] == [
        ("tensorboard", "train"), ("tensorboard", "exp1-eval-set"), ("tensorboard", "exp1-train")]


def _append_frames(target: Path, source: Path) -> None:
    """Append the frames of ``source`` after its file_version record to ``target``: a writer going on."""
    from tau_collector.sources.tf_record import scan_frames

    data = source.read_bytes()
    first_end = scan_frames(data).frames[1][0]
    with open(target, "ab") as fh:
        fh.write(data[first_end:])


@pytest.mark.parametrize("block_bytes", [300, 8 * 1024 * 1024])
def test_a_grown_event_file_and_a_grown_history_file_import_only_their_new_points(tmp_path: Path,
                                                                                  block_bytes) -> None:
    limits = Limits(batch_bytes=block_bytes)
    run = tmp_path / "logdir" / "run"
    path = write_tensorboardx(run, [("loss", s, 1.0 / (s + 1), T0 + s) for s in range(40)])
    history = tmp_path / "logdir" / "history.jsonl"
    history.write_text("".join(json.dumps({"_step": s, "_timestamp": T0 + s, "reward": s}) + "\n" for s in range(10))
                       + '{"_step": 10, "_timestamp": 1700000010, "reward": 10}')  # no newline yet: being written
    store = tmp_path / "store"
    first = import_paths([str(tmp_path / "logdir")], store, limits=limits)
    assert first.points == 40 + 11
    later = write_tensorboardx(tmp_path / "later", [("loss", s, 1.0 / (s + 1), T0 + s) for s in range(40, 70)])
    _append_frames(path, later)
    with open(history, "a") as fh:
        fh.write("\n" + "".join(json.dumps({"_step": s, "_timestamp": T0 + s, "reward": s}) + "\n"
                                for s in range(11, 15)))
    again = import_paths([str(tmp_path / "logdir")], store, limits=limits)
    # The line that had no newline yet is read again (it may have been incomplete); all else only once.
    assert (again.points, again.unchanged, again.rejected_rows) == (30 + 5, 0, 0)
    counts = {row[1]: row[2:5] for row in _table_counts(store)["summaries"]}
    assert counts == {"loss": (70, 70, 0), "reward": (16, 16, 0)}
    reader = StoreReader(store)
    assert reader.rows("run", "loss").step.tolist() == list(range(70))
    assert reader.rows("history", "reward").step.tolist() == list(range(15))
    third = import_paths([str(tmp_path / "logdir")], store, limits=limits)
    assert (third.points, third.unchanged) == (0, 2)


def test_a_rewritten_file_is_imported_again_from_its_start(tmp_path: Path) -> None:
    history = tmp_path / "history.jsonl"
    history.write_text("".join(json.dumps({"_step": s, "_timestamp": T0 + s, "reward": s}) + "\n" for s in range(10)))
    import_paths([str(history)], tmp_path / "store")
    history.write_text("".join(json.dumps({"_step": s, "_timestamp": T0 + s, "reward": -s}) + "\n" for s in range(12)))
    again = import_paths([str(history)], tmp_path / "store")
    assert again.points == 12  # the old prefix no longer matches: nothing is skipped


# --- the bulk event-file path stores exactly what the projection path stores --------------------------------------


def _odd_run(root: Path) -> Path:
    """One run holding every case the bulk path must treat as the projection does."""
    from tensorboard.compat.proto import event_pb2

    from fixtures.tb_writers import restart_event, scalar_tensor, tensor_event, write_events

    events = []
    for i in range(60):
        event = event_pb2.Event(wall_time=T0 + i * 0.001, step=i // 3)
        tag = ["loss", " loss ", "_private", "acc/top1", "tau/run_status", "ünï"][i % 6]
        value = [0.25 * i, float("nan"), 1.0, float("inf"), 1.0 if i > 50 else 0.0, -float(i)][i % 6]
        event.summary.value.add(tag=tag, simple_value=value)
        events.append(event)
    odd = [event_pb2.Event(wall_time=T0, step=-4), event_pb2.Event(wall_time=float("nan"), step=3),
           event_pb2.Event(wall_time=1e12, step=5), event_pb2.Event(wall_time=-1e3, step=6)]
    for event in odd:
        event.summary.value.add(tag="loss", simple_value=9.0)
    several = event_pb2.Event(wall_time=T0 + 1, step=7)
    several.summary.value.add(tag="x", simple_value=1.0)
    several.summary.value.add(tag="loss", simple_value=2.0)
    events[10:10] = [*odd, several, restart_event(2, T0 + 2),
                     tensor_event("tensor/loss", 8, T0 + 3, scalar_tensor(0.5, "float32"))]
    write_events(root / "odd" / "run", events)
    return root / "odd"


def _projection_path_store(logdir: Path, store: Path) -> None:
    """The reference: every observation through the projection, one MetricEvent per point, into a store."""
    from tau_collector.expstore.store import ExpStore
    from tau_collector.expstore.write.writer import MetricWriter
    from tau_collector.projection.projector import ProjectionConfig, Projector
    from tau_collector.sources.tensorboard_run import (
        RunMemory,
        TensorBoardRun,
        metric_file_id,
        read_segment,
        to_history_row,
    )

    writer = MetricWriter(ExpStore(store, create=True))
    for source in discover_sources([str(logdir)]):
        config = ProjectionConfig(project="default", experiment_id="imported", run_group_id="imported",
                                  run_id=source.run_id, exported_at=0, source="tensorboard",
                                  tags={"import.kind": "tensorboard"})
        run = TensorBoardRun(source.location, "", metric_file_id(source.location))
        memory = RunMemory()
        for n, segment in enumerate(source.files()):
            batch = read_segment(run, segment, memory=memory)
            projector = Projector(config, history_path=segment, metric_file_id=run.metric_file_id,
                                  metric_file_path=run.directory)
            projected, _ = projector.project_rows([to_history_row(o) for o in batch.observations])
            writer.write_chunk(f"ref-{source.run_id}-{n}", projected.events, projected.non_finite, request_hash="h")


def _stored(store: Path) -> tuple[list, list, list]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    with sqlite3.connect(store / "index.sqlite") as conn:
        # the registered files (a clustered run's retired ones stay on disk for a grace period)
        paths = [store / p for (p,) in conn.execute("SELECT path FROM metric_files ORDER BY path")]
    table = pa.concat_tables(pq.read_table(p) for p in paths)
    rows = sorted(tuple(repr(v) for v in row.values()) for row in table.to_pylist())
    with sqlite3.connect(store / "index.sqlite") as conn:
        summaries = conn.execute(
            "SELECT run_id, metric_name, project, run_group_id, count, finite_count, non_finite_count, min_step, "
            "max_step, latest_step, latest_wall_time, latest_value, min_value, max_value "
            "FROM metric_summaries ORDER BY run_id, metric_name").fetchall()
        runs = conn.execute("SELECT run_id, project, experiment_id, run_group_id, state, started_at, completed_at "
                            "FROM runs ORDER BY run_id").fetchall()
        tags = conn.execute("SELECT * FROM tags ORDER BY scope_id, key").fetchall()
    return rows, [tuple(repr(v) for v in s) for s in summaries], runs + tags


@pytest.mark.parametrize("block_bytes", [200, 8 * 1024 * 1024])
def test_bulk_import_stores_what_the_projection_path_stores(tmp_path: Path, block_bytes) -> None:
    logdir = _odd_run(tmp_path)
    summary = import_paths([str(logdir)], tmp_path / "bulk", limits=Limits(batch_bytes=block_bytes))
    _projection_path_store(logdir, tmp_path / "reference")
    bulk, reference = _stored(tmp_path / "bulk"), _stored(tmp_path / "reference")
    assert len(bulk[0]) == 54  # 60 scalars - 10 "_private" + 1 valid odd + 2 in one event + 1 tensor
    assert bulk == reference
    # The odd rows were judged by the projection: a negative step and a NaN or far-future time are rejected.
    assert summary.rejected_rows == 3
    assert any("_step: must be nonnegative" in p for p in summary.problems)
    assert any("_timestamp: must be finite epoch seconds" in p for p in summary.problems)
    run = StoreReader(tmp_path / "bulk").run("run")
    assert run.state == "succeeded" and "_private" not in run.metric_names and "loss" in run.metric_names


# --- one pipeline: a sidecar and an import make the same store ------------------------------------------------------


def _rows_and_summaries(store: Path) -> tuple[dict, list]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    with sqlite3.connect(store / "index.sqlite") as conn:  # registered files: retired ones wait on disk a while
        table = pa.concat_tables(pq.read_table(store / p) for (p,) in conn.execute("SELECT path FROM metric_files"))
    rows: dict = {}
    for row in table.select(["run_id", "metric_name", "step", "wall_time", "value"]).to_pylist():
        rows.setdefault((row["run_id"], row["metric_name"]), []).append(
            (row["step"], row["wall_time"], repr(row["value"])))
    with sqlite3.connect(store / "index.sqlite") as conn:
        summaries = conn.execute(
            "SELECT run_id, metric_name, count, finite_count, non_finite_count, min_step, max_step, latest_step, "
            "latest_wall_time, latest_value, min_value, max_value FROM metric_summaries ORDER BY run_id, metric_name"
        ).fetchall()
    return {key: sorted(points) for key, points in rows.items()}, summaries


def test_collect_and_import_make_the_same_store_from_the_same_files(tmp_path: Path) -> None:
    import subprocess
    import sys

    run_dir = tmp_path / "logs" / "train"
    write_tensorboardx(run_dir, [(tag, s, (s % 7) / (s + 1), T0 + s / 3) for s in range(900) for tag in ("a", "b")]
                       + [("a", 900, float("nan"), T0 + 400)])
    history = tmp_path / "logs" / "history.jsonl"
    history.write_text("".join(json.dumps({"_step": s, "_timestamp": T0 + s + 0.125, "reward": s * 2,
                                           "loss": 1 / (s + 1)}) + "\n" for s in range(3000))
                       + '{"_step": 3000, "_timestamp": 1790000000, "loss": NaN}\n')
    summary = import_paths([str(tmp_path / "logs")], tmp_path / "imported", limits=Limits(batch_bytes=8192))
    assert summary.run_ids == ["history", "train"] and summary.points == 1800 + 6000
    for run_id, source in (("train", ["--tfevents", str(run_dir)]), ("history", ["--history", str(history)])):
        proc = subprocess.run([sys.executable, "-m", "tau_collector", "collect", "--run", run_id, "--project", "default",
                               "--experiment", "imported", "--group", "imported", "--out", str(tmp_path / run_id),
                               *source, "--store", str(tmp_path / "collected"), "--batch-bytes", "5000"],
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["chunks"] > 5
    collected, imported = _rows_and_summaries(tmp_path / "collected"), _rows_and_summaries(tmp_path / "imported")
    assert sum(map(len, imported[0].values())) == 1801 + 6001
    assert collected == imported


# --- run ids ------------------------------------------------------------------------------------------------------


def test_sources_that_derive_one_id_are_told_apart_by_a_hash_of_their_path(tmp_path: Path, capsys) -> None:
    for name in ("Exp 1", "exp-1"):
        (tmp_path / "runs" / name).mkdir(parents=True)
        (tmp_path / "runs" / name / "history.jsonl").write_text(
            json.dumps({"_step": 0, "_timestamp": T0, "loss": 1.0}) + "\n")
    deep = tmp_path / "runs" / "/".join(["level-of-a-very-deep-tree"] * 12)
    deep.mkdir(parents=True)
    write_tensorboardx(deep, [("loss", 0, 1.0, T0)])
    found = discover_sources([str(tmp_path / "runs")])
    ids = [run.run_id for run in found]
    assert len(set(ids)) == 3
    assert ids[0].startswith("exp-1-history-") and ids[1].startswith("exp-1-history-") and ids[0] != ids[1]
    assert len(ids[2]) <= 200 and ids[2].startswith("level-of-a-very-deep-tree-level")
    # Deterministic: the same sources give the same ids, whatever else is imported beside them.
    assert [r.run_id for r in discover_sources([str(tmp_path / "runs")])] == ids
    assert [r.run_id for r in discover_sources([str(deep)])] == ["level-of-a-very-deep-tree"]
    assert cli.main(["import", str(tmp_path / "runs"), "--store", str(tmp_path / "store"), "-q"]) == 0
    out = capsys.readouterr().out
    for run in found:
        assert f"{run.location} -> {run.run_id}\n" in out
    assert "imported 3 runs" in out
    assert {r.run_id for r in StoreReader(tmp_path / "store").runs()} == set(ids)


# --- Ray Tune wall times ----------------------------------------------------------------------------------------------


def test_tune_trials_keep_the_sub_second_wall_times_of_their_event_file(tmp_path: Path) -> None:
    from tensorboardX import SummaryWriter

    trial = tmp_path / "exp" / "trainable_0_lr=0.1"
    trial.mkdir(parents=True)
    walls = [T0 + 0.515, T0 + 0.672, T0 + 0.809, T0 + 1.947]
    # What Ray's TBXLoggerCallback writes (the step is training_iteration, timestamp/time_total_s/
    # training_iteration are left out), beside result.json as Tune writes it; seen in a real Tune run.
    writer = SummaryWriter(str(trial), flush_secs=3600)
    rows = []
    for i, wall in enumerate(walls, 1):
        took = 0.13 + i / 1000
        for tag, value in (("ray/tune/mean_loss", 0.1 / i), ("ray/tune/time_this_iter_s", took)):
            writer.add_scalar(tag, value, global_step=i, walltime=wall)
        rows.append({"mean_loss": 0.1 / i, "timestamp": int(wall), "done": False, "training_iteration": i,
                     "trial_id": "b6f52_00000", "date": "2026-12-01_11-46-02", "time_this_iter_s": took,
                     "time_total_s": took * i, "pid": 1, "hostname": "vm", "node_ip": "192.0.2.2",
                     "config": {"lr": 0.1}, "time_since_restore": took * i, "iterations_since_restore": i})
    writer.close()
    rows[3]["time_this_iter_s"] = 5.0  # a row whose event does not match keeps Tune's whole second
    (trial / "result.json").write_text("".join(json.dumps(r) + "\n" for r in rows))
    import_paths([str(tmp_path / "exp")], tmp_path / "store")
    stored = StoreReader(tmp_path / "store").rows("trainable_0_lr-0.1", "mean_loss")
    assert stored.step.tolist() == [1, 2, 3, 4]
    assert stored.wall_time.tolist() == [int(w * 1e6) for w in walls[:3]] + [int(walls[3]) * 1_000_000]
