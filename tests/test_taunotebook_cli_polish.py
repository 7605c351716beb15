"""``taunotebook``, ``taunotebook import`` and ``taunotebook portal``: ``--help`` with examples, usage
errors exit 2 naming the parameter, logs quiet by default (``-v`` info, ``--log-format json``), the
import progress bar only on a terminal unless asked, and no token in the Portal's request log."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest
from polling import DEADLINE, wait_until

from taunotebook import cli
from taunotebook.portal.cli import main as portal_main

from .terminal import run_on_a_terminal

TAUNOTEBOOK = [sys.executable, "-m", "taunotebook"]
LOGFMT = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|\S*)')


def run_main(argv: list[str]) -> int:
    try:
        return cli.main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)


def logfmt(text: str) -> list[dict[str, str]]:
    return [{k: json.loads(v) if v.startswith('"') else v for k, v in LOGFMT.findall(line)}
            for line in text.splitlines() if line.startswith("ts=")]


@pytest.fixture
def history(tmp_path: Path) -> Path:
    path = tmp_path / "history.jsonl"
    path.write_text("".join(f'{{"_step": {s}, "_timestamp": {1760000000 + s}, "loss": {1 / (s + 1)}}}\n'
                            for s in range(20)))
    return path


@pytest.mark.parametrize("argv", [["--help"], ["-h"], ["import", "--help"], ["portal", "--help"]])
def test_help_exits_0_with_examples(argv, capsys):
    assert run_main(argv) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: taunotebook")
    examples = out.split("examples:", 1)[1]
    command = "taunotebook " + (argv[0] if argv[0] in ("import", "portal") else "")
    assert command in examples
    assert max(map(len, examples.splitlines())) <= 120, "an example line lost its line break"
    if argv[0] in ("import", "portal"):
        assert "-v, --verbose" in out and "--log-format {logfmt,json}" in out


USAGE_ERRORS = [
    ([], "a command is required"),
    (["nope"], "'nope'"),
    (["--bogus"], "'--bogus'"),
    (["import"], "PATH"),
    (["import", "{history}", "--project", "Bad/Project"], "--project"),
    (["import", "{history}", "--group", ""], "--group"),
    (["import", "{history}", "--log-format", "xml"], "--log-format"),
    (["import", "{missing}"], "no such file or directory"),
    (["portal"], "--store"),
    (["portal", "--store", "{store}", "--port", "70000"], "--port"),
    (["portal", "--store", "{store}", "--host", "0.0.0.0"], "--host"),
    (["portal", "--store", "{missing}"], "--store"),
]


@pytest.mark.parametrize(("argv", "parameter"), USAGE_ERRORS, ids=lambda v: " ".join(v) if isinstance(v, list) else v)
def test_usage_errors_exit_2_with_one_line_naming_the_parameter(argv, parameter, history, tmp_path, capsys):
    from tau_collector.expstore import open_store

    open_store(tmp_path / "store", create=True).close()
    argv = [a.format(history=history, missing=tmp_path / "missing", store=tmp_path / "store") for a in argv]
    assert run_main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: taunotebook")
    last = err.rstrip("\n").splitlines()[-1]
    assert re.match(r"taunotebook( \w+)?: error: ", last), last
    assert parameter in last


def test_import_is_quiet_by_default_and_v_logs_each_source(history, tmp_path, capsys):
    store = str(tmp_path / "store")
    assert run_main(["import", str(history), "--store", store]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""  # not a terminal: no progress bar, and no log line at the default level
    assert "store: " + store in captured.out
    assert run_main(["import", str(history), "--store", store, "-v"]) == 0
    captured = capsys.readouterr()
    (record,) = logfmt(captured.err)
    assert (record["level"], record["logger"], record["msg"]) == ("info", "taunotebook.import", "importing")
    assert (record["kind"], record["run"]) == ("jsonl", "history") and record["source"] == str(history)
    assert "importing" not in captured.out


def test_import_json_logs_parse_and_errors_say_what_to_do(history, tmp_path, capsys):
    store = str(tmp_path / "store")
    assert run_main(["import", str(history), "--store", store, "-v", "--log-format", "json"]) == 0
    (record,) = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    assert record["msg"] == "importing" and record["run"] == "history"
    assert run_main(["import", str(history), "--store", store, "--project", "other", "--log-format", "json"]) == 1
    (error,) = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    assert error["level"] == "error" and "--project" in error["msg"] and "another --store" in error["msg"]


def test_import_progress_bar_on_a_terminal_only_unless_asked(history, tmp_path):
    code, out, err = run_on_a_terminal([*TAUNOTEBOOK, "import", str(history), "--store", "s1"], tmp_path)
    assert code == 0 and b"import: 1/1 sources" in err and b"import:" not in out.replace(b"imported", b"")
    piped = subprocess.run([*TAUNOTEBOOK, "import", str(history), "--store", "s2"], cwd=tmp_path,
                           capture_output=True, timeout=120)
    assert piped.returncode == 0 and piped.stderr == b""
    asked = subprocess.run([*TAUNOTEBOOK, "import", str(history), "--store", "s3", "--progress"], cwd=tmp_path,
                           capture_output=True, timeout=120)
    assert asked.returncode == 0 and b"import: 1/1 sources" in asked.stderr
    code, _, err = run_on_a_terminal([*TAUNOTEBOOK, "import", str(history), "--store", "s4", "-q"], tmp_path)
    assert code == 0 and b"import:" not in err


def test_portal_request_log_with_v_redacts_the_token(tmp_path):
    from tau_collector.expstore import open_store

    open_store(tmp_path / "store", create=True).close()
    token = "tok-" + "x" * 20
    proc = subprocess.Popen([*TAUNOTEBOOK, "portal", "--store", str(tmp_path / "store"), "-v"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "TAU_PORTAL_TOKEN": token, "PYTHONUNBUFFERED": "1"})
    err_lines: list[str] = []
    # stderr read as it comes, so the test waits for the access log line itself, not a guessed time
    drain = threading.Thread(target=lambda: err_lines.extend(iter(proc.stderr.readline, "")), daemon=True)
    drain.start()
    try:
        lines = [proc.stdout.readline() for _ in range(3)]
        page = lines[1].strip()
        assert page.endswith(f"/stellar?token={token}"), lines
        assert httpx.get(page, timeout=DEADLINE).status_code in (200, 302)
        wait_until(lambda: any("uvicorn.access" in line for line in err_lines), "the request's access log line")
    finally:
        proc.terminate()
        proc.wait(timeout=DEADLINE)
        drain.join(timeout=DEADLINE)
    err = "".join(err_lines)
    records = logfmt(err)
    assert token not in err
    assert any(r["logger"] == "taunotebook.portal" and r["msg"] == "portal listening" for r in records)
    access = [r for r in records if r["logger"] == "uvicorn.access"]
    assert access and "token=REDACTED" in access[0]["msg"]


def test_portal_is_quiet_by_default(tmp_path, capsys):
    # a port that is taken: the only stderr line is the error, which says what to do
    import socket

    from tau_collector.expstore import open_store

    open_store(tmp_path / "store", create=True).close()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        assert portal_main(["--store", str(tmp_path / "store"), "--port", str(port)]) == 1
    (record,) = logfmt(capsys.readouterr().err)
    assert record["level"] == "error" and "pick another --port" in record["msg"]
