"""The one duration syntax (cli/durations) and every collector flag and variable that takes it."""

from __future__ import annotations

import argparse

import pytest

from tau_collector.cli import build_parser, wrap
from tau_collector.cli.collect import DURATIONS, UsageError, resolve_durations
from tau_collector.cli.durations import FORMS, DurationError, duration_type, parse_duration

# -- the parser -----------------------------------------------------------------------------------

PARSED = [
    ("10", 10.0), ("2.5", 2.5), (".5", 0.5), ("5.", 5.0), (" 10 ", 10.0), ("0", 0.0), ("0.0", 0.0), ("-0", 0.0),
    ("10s", 10.0), ("1m30s", 90.0), ("500ms", 0.5), ("1h", 3600.0), ("1.5h", 5400.0), ("+5s", 5.0), ("-0s", 0.0),
    ("1h2m3s", 3723.0), ("2m", 120.0), ("250us", 250e-6), ("250µs", 250e-6), ("250μs", 250e-6), ("7ns", 7e-9),
    ("1s500ms", 1.5), (".5s", 0.5), ("0s", 0.0),
]

REFUSED = [
    ("", "invalid duration"), ("soon", "invalid duration"), ("10 s", "invalid duration"),
    ("1m30", "invalid duration"), ("s", "invalid duration"), ("1d", "invalid duration"), ("1e3", "invalid duration"),
    ("inf", "invalid duration"), ("nan", "invalid duration"), ("1,5", "invalid duration"), ("--1s", "invalid duration"),
    ("١", "invalid duration"),  # a digit of another script: float() would take it, Go does not
    ("-1s", "cannot be negative"), ("-10", "cannot be negative"), ("-0.5", "cannot be negative"),
    ("1" + "0" * 400, "too long"), ("9" * 400 + "h", "too long"),
]


@pytest.mark.parametrize(("text", "seconds"), PARSED)
def test_a_duration_is_seconds_or_go_syntax(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds, rel=1e-12, abs=0)


@pytest.mark.parametrize(("text", "says"), REFUSED)
def test_anything_else_is_refused_quoting_it_and_showing_the_accepted_forms(text, says):
    with pytest.raises(DurationError) as caught:
        parse_duration(text)
    message = str(caught.value)
    assert says in message and repr(text) in message and FORMS in message
    assert isinstance(caught.value, argparse.ArgumentTypeError) and isinstance(caught.value, ValueError)


def test_zero_is_refused_unless_the_flag_gives_it_a_meaning():
    assert duration_type(zero=True)("0") == 0.0
    with pytest.raises(DurationError, match=r"must be more than 0, got '0s'"):
        duration_type()("0s")
    assert duration_type()("1ms") == 0.001


# -- every flag -----------------------------------------------------------------------------------

# ``--flag=value``: argparse reads ``--flag -1s`` as a flag without its value.
def _collect(flag, value):
    return resolve_durations(build_parser().parse_args(["collect", f"{flag}={value}"]))[flag[2:].replace("-", "_")]


def _wrap(flag, value):
    return wrap.parse([f"{flag}={value}", "--run-dir", "rd", "--", "true"])


def _normalize(flag, value):
    return build_parser().parse_args(["normalize", "--out", "d", f"{flag}={value}"]).max_delay


def _zero_ok(parse) -> bool:
    try:
        return parse("0") == 0
    except DurationError:
        return False


# (flag, whether 0 is allowed, its value in seconds after parsing)
FLAGS = [
    ("--interval", False, _collect),
    ("--batch-wait", True, _collect),
    ("--closed-after", True, _collect),
    ("--adx-retry-backoff", True, _collect),  # 0: TauGrid's default 1s
    ("--adx-final-status-timeout", True, _collect),  # 0: TauGrid's default 10m
    ("--ready-timeout", False, lambda f, v: _wrap(f, v).ready_timeout),
    ("--done-timeout", False, lambda f, v: _wrap(f, v).done_timeout),
    ("--interval", False, lambda f, v: parse_duration(_wrap(f, v).interval)),  # wrap's, passed on to collect
    ("--system-interval", True, lambda f, v: wrap.resolve_system_interval(_wrap(f, v))),
    ("--notify-grace", True, lambda f, v: _wrap(f, v).notify_grace),  # 0: exit without waiting for webhooks
    ("--max-delay", False, _normalize),
]
IDS = ["collect " + f for f, _, _ in FLAGS[:5]] + ["wrap " + f for f, _, _ in FLAGS[5:10]] + ["normalize --max-delay"]


def test_the_table_covers_every_duration_of_collect():
    assert {flag for flag, _, _, _ in DURATIONS} == {flag for flag, _, read in FLAGS if read is _collect}
    assert {flag: _zero_ok(parse) for flag, _, _, parse in DURATIONS} == \
        {flag: zero for flag, zero, read in FLAGS if read is _collect}


@pytest.mark.parametrize(("flag", "zero", "read"), FLAGS, ids=IDS)
def test_every_duration_flag_takes_the_one_syntax(flag, zero, read):
    assert read(flag, "1s") == 1.0
    assert read(flag, "10") == 10.0
    assert read(flag, "1m30s") == 90.0
    assert read(flag, "2.5") == 2.5
    if zero:
        assert read(flag, "0") == 0.0


@pytest.mark.parametrize(("flag", "zero", "read"), FLAGS, ids=IDS)
def test_a_bad_duration_flag_is_a_usage_error_naming_it(flag, zero, read, capsys):
    bad = ["soon", "-1s", "10x"] + ([] if zero else ["0", "0s"])
    for value in bad:
        with pytest.raises(SystemExit) as caught:
            read(flag, value)
        assert caught.value.code == 2
        last = capsys.readouterr().err.rstrip("\n").splitlines()[-1]
        assert f"error: argument {flag}: " in last and repr(value) in last, last
        if value == "0" or value == "0s":
            assert "must be more than 0" in last
        else:
            assert "1m30s" in last  # the accepted forms


# -- every variable -------------------------------------------------------------------------------

def _collect_variable(variable):
    flag = next(flag for flag, name, _, _ in DURATIONS if name == variable)
    return lambda: resolve_durations(build_parser().parse_args(["collect"]))[flag[2:].replace("-", "_")]


def _system_variable(_variable):
    return lambda: wrap.resolve_system_interval(wrap.parse(["--run-dir", "rd", "--", "true"]))


VARIABLES = [(variable, _zero_ok(parse), _collect_variable) for _, variable, _, parse in DURATIONS] + [
    (wrap.SYSTEM_INTERVAL_ENV, True, _system_variable)]


@pytest.mark.parametrize(("variable", "zero", "reader"), VARIABLES, ids=[v for v, _, _ in VARIABLES])
def test_every_duration_variable_takes_the_one_syntax(variable, zero, reader, monkeypatch):
    read = reader(variable)
    for value, seconds in (("1s", 1.0), ("10", 10.0), ("1m30s", 90.0), (" 2.5 ", 2.5)) + ((("0", 0.0),) if zero else ()):
        monkeypatch.setenv(variable, value)
        assert read() == seconds, value


@pytest.mark.parametrize(("variable", "zero", "reader"), VARIABLES, ids=[v for v, _, _ in VARIABLES])
def test_a_bad_duration_variable_is_a_usage_error_naming_it(variable, zero, reader, monkeypatch):
    read = reader(variable)
    for value in ["soon", "-1s"] + ([] if zero else ["0"]):
        monkeypatch.setenv(variable, value)
        with pytest.raises(UsageError) as caught:
            read()
        assert str(caught.value).startswith(f"${variable}: ") and repr(value) in str(caught.value)


def test_a_flag_wins_over_its_variable_and_an_empty_variable_is_the_default(monkeypatch):
    monkeypatch.setenv("TAU_COLLECTOR_BATCH_WAIT", "soon")
    assert _collect("--batch-wait", "250ms") == 0.25
    monkeypatch.setenv("TAU_COLLECTOR_BATCH_WAIT", " ")
    monkeypatch.setenv("TAU_METRICS_OFFLOAD_INTERVAL", "")
    assert resolve_durations(build_parser().parse_args(["collect"])) == {
        "interval": 60.0, "batch_wait": 0.0, "closed_after": 60.0, "adx_retry_backoff": 1.0,
        "adx_final_status_timeout": 600.0}
    monkeypatch.setenv(wrap.SYSTEM_INTERVAL_ENV, "")
    assert wrap.resolve_system_interval(wrap.parse(["--run-dir", "rd", "--", "true"])) == 10.0
