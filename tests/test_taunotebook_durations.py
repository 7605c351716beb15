"""taunotebook's durations take the collector's one syntax: quickstart's --delay and SubmittedRun.wait's timeout."""

from __future__ import annotations

import pytest

from taunotebook import quickstart
from taunotebook import submission as submit_module
from taunotebook.submission import SubmittedRun


@pytest.mark.parametrize(("value", "seconds"), [("1s", 1.0), ("10", 10.0), ("1m30s", 90.0), ("10ms", 0.01),
                                                ("0", 0.0)])
def test_quickstart_delay_takes_the_one_syntax(value, seconds):
    assert quickstart.build_parser().parse_args(["--delay", value]).delay == seconds


@pytest.mark.parametrize("value", ["soon", "-1s", "1m30"])
def test_a_bad_quickstart_delay_is_a_usage_error_naming_it(value, capsys):
    with pytest.raises(SystemExit) as caught:
        quickstart.build_parser().parse_args([f"--delay={value}"])
    assert caught.value.code == 2
    last = capsys.readouterr().err.rstrip("\n").splitlines()[-1]
    assert "argument --delay: " in last and repr(value) in last and "1m30s" in last


@pytest.fixture
def waited(monkeypatch):
    """The timeouts SubmittedRun.wait polls with (the run is done at once)."""
    timeouts: list[float | None] = []

    def poll(predicate, timeout):
        timeouts.append(timeout)
        return True

    monkeypatch.setattr(submit_module, "poll", poll)
    return timeouts


def _run() -> SubmittedRun:
    run = SubmittedRun({"run_id": "r1", "backend": "local"})
    run._backend = type("Finished", (), {"state": lambda self, record: "succeeded"})()
    return run


def test_wait_takes_seconds_or_a_duration_text(waited):
    for timeout in (None, 5, 2.5, "1s", "10", "1m30s", "0"):
        assert _run().wait(timeout) == "succeeded"
    assert waited == [None, 5, 2.5, 1.0, 10.0, 90.0, 0.0]


@pytest.mark.parametrize("value", ["soon", "-1s", ""])
def test_a_bad_wait_timeout_is_refused_naming_it_before_waiting(waited, value):
    with pytest.raises(ValueError, match=rf"^timeout: .*{value!r}.*1m30s"):
        _run().wait(value)
    assert waited == []
