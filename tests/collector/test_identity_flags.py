"""TauGrid's ID rule at every entry point that names a run: ``collect``, ``wrap`` and ``project`` refuse a bad
``--run/--project/--experiment/--group`` (or its ``TAU_METRICS_OFFLOAD_*`` variable) with a usage error, exit 2,
naming the flag or variable and giving TauGrid's message -- before anything is read, spooled or started."""

from __future__ import annotations

import pytest

from tau_collector.cli import main

GOOD = {"run": "r1", "project": "demo", "experiment": "sweep", "group": "lr"}
KIND = {"run": "run_id", "project": "project", "experiment": "experiment_id", "group": "run_group_id"}
BAD = {
    "a/b": "is invalid (use lowercase alphanumerics with internal '-', '_' or '.')",
    "..": "is invalid (must start and end with an alphanumeric)",
    "<b>x</b>": "is invalid (use lowercase alphanumerics with internal '-', '_' or '.')",
    "Seed-1": "is invalid (use lowercase alphanumerics with internal '-', '_' or '.')",
    "my run": "is invalid (use lowercase alphanumerics with internal '-', '_' or '.')",
    "a\\b": "is invalid (use lowercase alphanumerics with internal '-', '_' or '.')",
    "r1-": "is invalid (must start and end with an alphanumeric)",
    "r" * 513: "is invalid (513 bytes; at most 512, the longest id TauGrid's v2 API serves in a path)",
}


def _identity(**override: str) -> list[str]:
    values = {**GOOD, **override}
    return [arg for flag in ("run", "project", "experiment", "group") for arg in (f"--{flag}", values[flag])]


def _run(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch, tmp_path):
    for name in ("RUN", "PROJECT", "EXPERIMENT", "GROUP"):
        monkeypatch.delenv(f"TAU_METRICS_OFFLOAD_{name}", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "h.jsonl").write_text('{"_step": 1, "_timestamp": 1, "x": 1}\n')


def _expect_usage_error(capsys, command: str, where: str, value: str, kind: str) -> None:
    err = capsys.readouterr().err
    assert err.startswith(f"usage: tau-collector {command}")
    message = err.strip().splitlines()[-1]
    assert message.startswith(f"tau-collector {command}: error: {where}: {kind} ")
    assert message.endswith(BAD[value])


@pytest.mark.parametrize("flag", list(GOOD))
@pytest.mark.parametrize("value", list(BAD))
def test_collect_refuses_a_bad_id_naming_the_flag(flag, value, capsys, tmp_path):
    argv = ["collect", *_identity(**{flag: value}), "--out", "out", "--history", "h.jsonl", "--store", "store"]
    assert _run(argv) == 2
    _expect_usage_error(capsys, "collect", f"--{flag}", value, KIND[flag])
    assert not (tmp_path / "out").exists() and not (tmp_path / "store").exists()


@pytest.mark.parametrize("flag", list(GOOD))
def test_collect_names_the_variable_when_the_bad_id_came_from_the_environment(flag, monkeypatch, capsys, tmp_path):
    monkeypatch.setenv(f"TAU_METRICS_OFFLOAD_{flag.upper()}", "Has Spaces")
    identity = [arg for f in GOOD if f != flag for arg in (f"--{f}", GOOD[f])]
    assert _run(["collect", *identity, "--out", "out", "--history", "h.jsonl", "--store", "store"]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err == (f'tau-collector collect: error: $TAU_METRICS_OFFLOAD_{flag.upper()}: {KIND[flag]} "Has Spaces" '
                   "is invalid (use lowercase alphanumerics with internal '-', '_' or '.')")


def test_a_flag_wins_over_a_bad_variable(monkeypatch, tmp_path):
    monkeypatch.setenv("TAU_METRICS_OFFLOAD_RUN", "Bad Run")
    argv = ["collect", *_identity(), "--out", "out", "--history", "h.jsonl", "--store", "store"]
    assert _run(argv) == 0
    assert (tmp_path / "store" / "manifest.json").exists()


@pytest.mark.parametrize("flag", list(GOOD))
@pytest.mark.parametrize("value", ["a/b", "..", "Seed-1", "r" * 513])
def test_wrap_refuses_a_bad_id_before_starting_anything(flag, value, capsys, tmp_path):
    argv = ["wrap", "--run-dir", "rd", *_identity(**{flag: value}), "--store", "store", "--",
            "python", "-c", "open('started', 'w')"]
    assert _run(argv) == 2
    _expect_usage_error(capsys, "wrap", f"--{flag}", value, KIND[flag])
    assert not (tmp_path / "rd").exists() and not (tmp_path / "started").exists()


def test_wrap_takes_the_equals_form_too(capsys, tmp_path):
    assert _run(["wrap", "--run-dir", "rd", *_identity(), "--run=a/b", "--", "true"]) == 2
    _expect_usage_error(capsys, "wrap", "--run", "a/b", "run_id")


def test_wrap_without_a_run_is_a_usage_error(capsys, tmp_path):
    identity = [a for f in ("project", "experiment", "group") for a in (f"--{f}", GOOD[f])]
    assert _run(["wrap", "--run-dir", "rd", *identity, "--", "true"]) == 2
    assert "--run is required (or $TAU_METRICS_OFFLOAD_RUN)" in capsys.readouterr().err
    assert not (tmp_path / "rd").exists()


@pytest.mark.parametrize("flag", list(GOOD))
@pytest.mark.parametrize("value", ["a/b", "<b>x</b>", "Seed-1", "r" * 513])
def test_project_refuses_a_bad_id(flag, value, capsys):
    assert _run(["project", "h.jsonl", *_identity(**{flag: value})]) == 2
    _expect_usage_error(capsys, "project", f"--{flag}", value, KIND[flag])
    assert capsys.readouterr().out == ""
