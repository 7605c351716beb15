"""Every ``tau-collector`` command: ``--help`` with examples, usage errors exit 2 naming the parameter,
structured logs quiet by default (``-v`` info, ``--log-format json``), progress only on a terminal."""

from __future__ import annotations

import io
import json
import logging
import os
import pty
import re
import select
import subprocess
import sys
from pathlib import Path

import pytest

from tau_collector.cli import logging_setup as logs
from tau_collector.cli import main, progress

from ..terminal import run_on_a_terminal

COMMANDS = ("collect", "wrap", "normalize", "dump", "project", "store")
TAU_COLLECTOR = [sys.executable, "-m", "tau_collector"]
LOGFMT = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|\S*)')
IDENTITY = ["--run", "r1", "--project", "demo", "--experiment", "sweep", "--group", "lr"]


def run_main(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)


def cli(*args: str, cwd: Path, stdin: bytes = b"", env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*TAU_COLLECTOR, *args], cwd=cwd, input=stdin, capture_output=True, timeout=120,
                          env={**os.environ, **(env or {})})


def parse_logfmt(line: str) -> dict[str, str]:
    fields = {}
    for key, raw in LOGFMT.findall(line):
        fields[key] = json.loads(raw) if raw.startswith('"') else raw
    return fields


def log_lines(stderr: bytes | str) -> list[dict[str, str]]:
    text = stderr.decode() if isinstance(stderr, bytes) else stderr
    return [parse_logfmt(line) for line in text.splitlines() if line.startswith("ts=")]


@pytest.fixture
def history(tmp_path: Path) -> Path:
    path = tmp_path / "h.jsonl"
    path.write_text('{"_step": 1, "_timestamp": 10.5, "loss": 0.5}\n{"_step": 2, "_timestamp": 11, "loss": 0.25}\n')
    return path


# -- --help ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["", *COMMANDS])
def test_help_exits_0_with_a_description_and_examples(command, capsys):
    assert run_main([command, "--help"] if command else ["--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: tau-collector")
    assert "examples:" in out
    examples = out.split("examples:", 1)[1]
    assert "tau-collector " + (command or "") in examples
    assert max(map(len, examples.splitlines())) <= 120, "an example line lost its line break"
    if command not in ("", "wrap"):  # wrap's own flags only; the rest pass through to collect
        assert "-v, --verbose" in out and "--log-format {logfmt,json}" in out


def test_the_help_examples_of_dump_project_normalize_and_store_run(tmp_path):
    """The examples as printed, with their paths created (no network, no ADX)."""
    runs = tmp_path / "runs" / "seed-1"
    runs.mkdir(parents=True)
    (runs / "history.jsonl").write_text('{"_step": 1, "_timestamp": 10, "train/loss": 0.5}\n')
    dump = cli("dump", "runs/seed-1/history.jsonl", cwd=tmp_path)
    assert dump.returncode == 0 and b'"metric":"train/loss"' in dump.stdout
    project = cli("project", "runs/seed-1/history.jsonl", "--run", "seed-1", "--project", "demo", "--experiment",
                  "sweep", "--group", "lr", cwd=tmp_path)
    assert project.returncode == 0 and b'"schema_version":"tau.experiment.metric.v1"' in project.stdout
    normalize = cli("normalize", "--out", "runs/seed-1/metrics-history-attempt-0", cwd=tmp_path,
                    stdin=b'{"step": 0, "loss": 1.0}\nepoch done\n')
    assert normalize.returncode == 0 and normalize.stdout == b"epoch done\n"
    collect = cli("collect", *IDENTITY, "--out", "run/collector", "--history",
                  "runs/seed-1/metrics-history-attempt-0/*.jsonl", "--store", "store", cwd=tmp_path)
    assert collect.returncode == 0, collect.stderr
    assert json.loads(collect.stdout)["events"] == 1
    for what, extra in (("runs", []), ("metrics", ["--run", "r1"]), ("rows", ["--run", "r1", "--metric", "loss"]),
                        ("series", ["--run", "r1", "--metric", "loss", "--max-points", "400"])):
        proc = cli("store", what, "--store", "store", *extra, cwd=tmp_path)
        assert proc.returncode == 0 and proc.stdout, (what, proc.stderr)


# -- usage errors ---------------------------------------------------------------------------------


USAGE_ERRORS = [
    ([], "COMMAND"),
    (["bogus"], "COMMAND"),
    (["collect", "--out", "o", "--history", "h.jsonl"], "--run"),
    (["collect", *IDENTITY, "--out", "o", "--history", "h", "--interval", "soon"], "--interval"),
    (["collect", *IDENTITY, "--out", "o", "--history", "h", "--interval", "0s"], "--interval"),
    (["collect", *IDENTITY, "--out", "o", "--history", "h", "--max-iterations", "-1"], "--max-iterations"),
    (["collect", *IDENTITY, "--out", "o", "--history", "h", "--batch-wait", "-1s"], "--batch-wait"),
    (["collect", *IDENTITY, "--out", "o", "--history", "h", "--batch-wait", "later"], "--batch-wait"),
    (["collect", *IDENTITY, "--out", "o", "--history", "h", "--cpu-budget", "150%"], "--cpu-budget"),
    (["collect", *IDENTITY, "--out", "o", "--history", "h", "--cpu-budget", "some"], "--cpu-budget"),
    (["collect", *IDENTITY, "--out", "o", "--history", "h", "--baseline-existing-history"], "--ready-file"),
    (["collect", *IDENTITY, "--out", "o", "--history", "h", "--sink", "expstore"], "--store"),
    (["collect", *IDENTITY, "--out", "o", "--history", "h", "--tag", "novalue"], "--tag"),
    (["collect", *IDENTITY, "--out", "o", "--history", "h", "--store", "s", "--bogus"], "--bogus"),
    (["wrap", "--run-dir", "rd"], "--"),
    (["wrap", "--run-dir", "rd", "--ready-timeout", "-1", "--", "true"], "--ready-timeout"),
    (["wrap", "--run-dir", "rd", "--interval", "soon", "--", "true"], "--interval"),
    (["wrap", "--", "true"], "--run-dir"),
    (["normalize"], "--out"),
    (["normalize", "--out", "d", "--max-rows", "0"], "--max-rows"),
    (["dump"], "PATH"),
    (["dump", "h.jsonl", "--log-format", "xml"], "--log-format"),
    (["project", "h.jsonl", "--run", "r"], "--project"),
    (["project", "h.jsonl", "--run", " ", "--project", "p", "--experiment", "e", "--group", "g"], "--run"),
    (["project", "h.jsonl", *IDENTITY, "--tag", "tau.metric.card=x"], "--tag"),
    (["project", "h.jsonl", *IDENTITY, "--exported-at", "yesterday"], "--exported-at"),
    (["store", "rows", "--store", "s", "--run", "r"], "--metric"),
    (["store", "metrics", "--store", "s"], "--run"),
    (["store", "series", "--store", "s", "--run", "r", "--metric", "m", "--max-points", "0"], "--max-points"),
    (["store", "everything", "--store", "s"], "what"),
]


@pytest.mark.parametrize(("argv", "parameter"), USAGE_ERRORS, ids=lambda v: " ".join(v) if isinstance(v, list) else v)
def test_usage_errors_exit_2_with_one_line_naming_the_parameter(argv, parameter, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "h.jsonl").write_text('{"_step": 1, "_timestamp": 1, "x": 1}\n')
    assert run_main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: tau-collector")
    last = err.rstrip("\n").splitlines()[-1]
    assert re.match(r"tau-collector( \w+)?: error: ", last), last
    assert parameter in last
    assert not (tmp_path / "o").exists() and not (tmp_path / "rd").exists() and not (tmp_path / "d").exists()


def test_a_bad_environment_variable_is_a_usage_error_naming_the_variable(tmp_path, history):
    proc = cli("collect", *IDENTITY, "--out", "o", "--history", str(history), "--store", "s", cwd=tmp_path,
               env={"TAU_METRICS_OFFLOAD_INTERVAL": "soon"})
    assert proc.returncode == 2
    assert proc.stderr.decode().splitlines()[-1].startswith(
        "tau-collector collect: error: $TAU_METRICS_OFFLOAD_INTERVAL: invalid duration 'soon'")


@pytest.mark.parametrize(("variable", "value", "says"), [
    ("TAU_COLLECTOR_BATCH_WAIT", "soon", "invalid duration 'soon'"),
    ("TAU_COLLECTOR_CPU_BUDGET", "-5%", "must be between 0% and 100%, got '-5%'"),
])
def test_a_bad_batching_variable_is_a_usage_error_naming_it(tmp_path, history, variable, value, says):
    proc = cli("collect", *IDENTITY, "--out", "o", "--history", str(history), "--store", "s", cwd=tmp_path,
               env={variable: value})
    assert proc.returncode == 2
    assert proc.stderr.decode().splitlines()[-1].startswith(f"tau-collector collect: error: ${variable}: {says}")


def test_the_console_script_exits_2_on_a_usage_error(tmp_path):
    script = Path(sys.executable).with_name("tau-collector")
    assert script.exists(), "installing tau-collector puts its console script next to the interpreter"
    proc = subprocess.run([str(script), "store", "rows", "--store", "s", "--run", "r"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.splitlines()[-1].startswith("tau-collector store: error: rows needs --metric")


# -- runtime errors -------------------------------------------------------------------------------


def test_runtime_errors_exit_1_and_say_what_to_do(tmp_path, history):
    missing = cli("store", "runs", "--store", "nowhere", cwd=tmp_path)
    assert missing.returncode == 1
    (record,) = log_lines(missing.stderr)
    assert record["level"] == "error" and "manifest.json" in record["msg"] and "--store" in record["msg"]
    collect = cli("collect", *IDENTITY, "--out", "o", "--history", str(history), "--store", "s", cwd=tmp_path)
    assert collect.returncode == 0
    other_group = cli("collect", *IDENTITY[:-1], "other", "--out", "o", "--history", str(history), "--store", "s",
                      cwd=tmp_path)
    assert other_group.returncode == 1
    (record,) = log_lines(other_group.stderr)
    assert record["level"] == "error" and "use a new --out directory" in record["msg"]
    unknown_run = cli("store", "metrics", "--store", "s", "--run", "nope", cwd=tmp_path)
    assert unknown_run.returncode == 1
    assert "tau-collector store runs --store s" in log_lines(unknown_run.stderr)[0]["msg"]


# -- logs -----------------------------------------------------------------------------------------


def test_default_runs_are_quiet_and_v_adds_info_lines(tmp_path, history):
    args = {
        "collect": ["collect", *IDENTITY, "--out", "o", "--history", str(history), "--store", "s"],
        "dump": ["dump", str(history)],
        "project": ["project", str(history), *IDENTITY],
        "store": ["store", "runs", "--store", "s"],
    }
    for name, argv in args.items():
        quiet = cli(*argv, cwd=tmp_path)
        assert quiet.returncode == 0, (name, quiet.stderr)
        assert quiet.stderr == b"", name
        loud = cli(*argv, "-v", cwd=tmp_path)
        assert loud.returncode == 0
        assert loud.stdout.count(b"\n") == quiet.stdout.count(b"\n"), name  # logs never reach stdout
        records = log_lines(loud.stderr)
        assert records and {r["level"] for r in records} == {"info"}, (name, loud.stderr)
        assert all(r["logger"] == f"tau_collector.{name}" and r["ts"].endswith("Z") for r in records)
    collect = log_lines(cli(*args["collect"], "-v", cwd=tmp_path).stderr)
    assert [r["msg"] for r in collect] == ["collector starting", "collector finished"]
    assert collect[0]["run"] == "r1" and collect[0]["sinks"] == "expstore" and collect[1]["chunks"] == "0"


def test_normalize_warns_about_a_bad_step_by_default_and_summarizes_with_v(tmp_path):
    rows = b'{"step": 0, "loss": 1}\n{"step": -1, "loss": 2}\nplain text\n'
    quiet = cli("normalize", "--out", "h", cwd=tmp_path, stdin=rows)
    assert quiet.returncode == 0
    (warning,) = log_lines(quiet.stderr)
    assert warning["level"] == "warning" and warning["line"] == "2" and "stdin line 2" in warning["msg"]
    loud = cli("normalize", "--out", "h2", "-v", cwd=tmp_path, stdin=rows)
    summary = [r for r in log_lines(loud.stderr) if r["msg"] == "stdin closed"]
    assert summary and (summary[0]["rows"], summary[0]["lines_passed"], summary[0]["chunks"]) == ("1", "2", "1")
    assert loud.stdout == quiet.stdout == b'{"step": -1, "loss": 2}\nplain text\n'


def test_json_log_lines_parse(tmp_path, history):
    proc = cli("collect", *IDENTITY, "--out", "o", "--history", str(history), "--store", "s", "-vv",
               "--log-format", "json", cwd=tmp_path)
    assert proc.returncode == 0
    records = [json.loads(line) for line in proc.stderr.decode().splitlines()]
    assert len(records) >= 2
    for record in records:
        assert list(record)[:4] == ["ts", "level", "logger", "msg"]
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", record["ts"])
    assert records[-1]["msg"] == "collector finished" and records[-1]["events"] == 2
    assert records[-1]["completed"] is False


def test_logfmt_quotes_what_needs_quoting_and_round_trips():
    stream = io.StringIO()
    logs.configure(1, "logfmt", stream=stream)
    try:
        logging.getLogger("tau_collector.test").info(
            'say "hi"\nthen go', extra={"plain": "a/b.c", "spaced": "a b", "empty": "", "eq": "k=v",
                                        "n": 3, "flag": True, "quote": 'x"y'})
        logging.getLogger("tau_collector.test").debug("not shown at -v")
    finally:
        logs.configure(0)
    (line,) = stream.getvalue().splitlines()
    assert ' plain=a/b.c ' in line and " n=3 " in line and " flag=true " in line
    assert parse_logfmt(line) == {
        "ts": parse_logfmt(line)["ts"], "level": "info", "logger": "tau_collector.test", "msg": 'say "hi"\nthen go',
        "plain": "a/b.c", "spaced": "a b", "empty": "", "eq": "k=v", "n": "3", "flag": "true", "quote": 'x"y',
    }


def test_verbosity_levels():
    assert [logs.level_for(v) for v in (0, 1, 2, 5)] == [logging.WARNING, logging.INFO, logging.DEBUG, logging.DEBUG]


# -- progress -------------------------------------------------------------------------------------


@pytest.fixture
def logdir(tmp_path: Path) -> list[str]:
    paths = []
    for i in range(3):
        path = tmp_path / f"h{i}.jsonl"
        path.write_text("".join(f'{{"_step": {s}, "_timestamp": {s}.5, "loss": {s}}}\n' for s in range(50)))
        paths.append(path.name)
    return paths


def test_dump_shows_progress_on_a_terminal_and_never_in_stdout(tmp_path, logdir):
    size = progress.human_bytes(sum((tmp_path / name).stat().st_size for name in logdir))
    code, out, err = run_on_a_terminal([*TAU_COLLECTOR, "dump", *logdir], tmp_path)
    assert code == 0
    assert b"\rdump: " in err and f"dump: 3/3 inputs, {size}/{size}, 150 observations (".encode() in err
    assert len(out.splitlines()) == 150 and b"dump:" not in out
    code, _, err = run_on_a_terminal([*TAU_COLLECTOR, "dump", "--no-progress", *logdir], tmp_path)
    assert code == 0 and b"dump:" not in err


def test_progress_is_off_when_piped_unless_asked(tmp_path, logdir):
    piped = cli("dump", *logdir, cwd=tmp_path)
    assert piped.returncode == 0 and piped.stderr == b""
    asked = cli("dump", "--progress", *logdir, cwd=tmp_path)
    lines = asked.stderr.decode().splitlines()
    assert lines[-1].startswith("dump: 3/3 inputs") and "\r" not in asked.stderr.decode()
    assert asked.stdout == piped.stdout
    size = progress.human_bytes(sum((tmp_path / name).stat().st_size for name in logdir))
    project = cli("project", "--progress", *logdir, *IDENTITY, cwd=tmp_path)
    assert project.stderr.decode().splitlines()[-1].startswith(f"project: 3/3 inputs, {size}/{size}, 150 events")
    collect = cli("collect", "--progress", *IDENTITY, "--out", "o", "--history", "h*.jsonl", "--store", "s",
                  cwd=tmp_path)
    assert collect.returncode == 0
    # the three files are read in one drain: one chunk
    assert collect.stderr.decode().splitlines()[-1].startswith("collect: 1 chunks, 150 events delivered")
    assert json.loads(collect.stdout)["events"] == 150


def read_all(fd: int) -> str:
    """What a pty master holds, read until nothing more arrives (a read may return a part)."""
    data = bytearray()
    while select.select([fd], [], [], 0.5)[0]:
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        data.extend(chunk)
    return data.decode()


def test_a_log_record_clears_the_progress_line_first():
    master, slave = pty.openpty()
    stream = os.fdopen(slave, "w", buffering=1)
    try:
        logs.configure(0, stream=stream)
        bar = progress.Progress("work", enabled=progress.wanted(None, stream), stream=stream)
        assert bar.enabled and bar.tty
        bar.update("1/2")
        logging.getLogger("tau_collector.test").warning("disk almost full")
        bar.update("2/2")
        bar.close()
        stream.flush()
        text = read_all(master)
    finally:
        logs.configure(0)
        stream.close()
        os.close(master)
    # the bar, erased (\r, clear to end of line) before the log line, then drawn again below it
    assert text.startswith("\rwork: 1/2\x1b[K\r\x1b[Kts=")
    first, rest = text.split("level=warning", 1)
    assert "work" not in first.split("\x1b[K\r\x1b[K", 1)[1]
    assert 'msg="disk almost full"' in rest and rest.index("disk almost full") < rest.index("\rwork: 2/2")
    assert "work: 2/2 (" in rest


def test_wrap_is_quiet_by_default_and_logs_its_steps_with_v(tmp_path):
    trainer = [sys.executable, "-c", "print('{\"step\": 0, \"loss\": 1.0}'); print('hello')"]
    wrap = ["wrap", "--run-dir", "rd", *IDENTITY, "--store", "s"]
    quiet = cli(*wrap, "--", *trainer, cwd=tmp_path)
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stdout == b"hello\n" and quiet.stderr == b""
    loud = cli(*wrap, "-v", "--log-format", "json", "--run-dir", "rd2", "--", *trainer, cwd=tmp_path)
    assert loud.returncode == 0, loud.stderr
    # wrap's own steps (the system-metrics sampler says whether it found NVML, by its own logger)
    records = [r for r in map(json.loads, loud.stderr.decode().splitlines()) if r["logger"] == "tau_collector.wrap"]
    assert [r["msg"] for r in records] == [
        "collector started", "collector ready", "trainer started", "trainer exited", "collector done"]
    assert records[3]["code"] == 0 and records[4]["state"] == "succeeded"
    # the sidecar logs in wrap's format, at info level, into collector.log
    sidecar = [json.loads(line) for line in (tmp_path / "rd2" / "collector.log").read_text().splitlines()]
    assert sidecar[-1]["msg"] == "collector finished" and sidecar[-1]["completed"] is True
