"""Webhooks through ``submit(notify=...)`` and ``%%tau_submit --notify`` on the local backend, against a receiver on
loopback; and the URL checks that name the parameter or the flag before anything is submitted."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError

from fixtures import webhook_receiver
from fixtures.local_backend import shell
from taunotebook.backends import BackendError, iter_records
from taunotebook.submission import notify_flags, submit

receiver = webhook_receiver.receiver  # the fixture: a receiver on 127.0.0.1

FINE = "import json\nfor step in range(3):\n    print(json.dumps({'step': step, 'loss': 1.0}), flush=True)\n"


def test_a_submitted_run_posts_when_it_finishes_and_the_link_opens_its_stellar_page(tau_home, receiver,
                                                                                      monkeypatch):
    monkeypatch.setenv("TAU_PORTAL_URL", "http://portal.example:8080/")
    run = submit(code=FINE, name="alert", project="demo", notify=receiver.url)
    assert run.wait(timeout=300) == "succeeded"
    [post] = receiver.wait_for(1)
    tau = post["body"]["tau"]
    assert (tau["trigger"], tau["run_id"], tau["project"]) == ("finished", run.run_id, "demo")
    assert tau["link"] == f"http://portal.example:8080/stellar?target={run.run_id}&project=demo"


def test_the_default_urls_come_from_the_variable_else_the_per_user_file(tau_home, monkeypatch):
    monkeypatch.delenv("TAU_NOTIFY_URL", raising=False)
    assert notify_flags(None, "local") == ()
    tau_home.mkdir(parents=True)
    (tau_home / "notify-urls").write_text("https://hooks.example/team\n")
    assert notify_flags(None, "local") == ("--notify", "https://hooks.example/team")
    monkeypatch.setenv("TAU_NOTIFY_URL", "https://a.example/1 https://b.example/2")
    assert notify_flags(None, "ray") == ("--notify", "https://a.example/1", "--notify", "https://b.example/2")
    assert notify_flags([], "local") == ("--notify", "")  # none at all, not the defaults
    assert notify_flags(None, "tau") == ()


def test_a_bad_url_names_the_parameter_or_the_flag_and_submits_nothing(tau_home):
    with pytest.raises(ValueError, match="^notify 'slack': a webhook must be an http"):
        submit(code=FINE, notify=["https://hooks.example/ok", "slack"])
    with pytest.raises(UsageError, match="%tau_submit: --notify 'ftp://x/y': a webhook must be an http"):
        shell().run_cell_magic("tau_submit", "--notify ftp://x/y", FINE)
    assert list(iter_records(tau_home)) == []


def test_the_tau_backend_refuses_a_webhook_before_anything_is_written(tau_home):
    with pytest.raises(BackendError, match="--notify is not supported by the tau backend"):
        submit(code=FINE, backend="tau", dry_run=True, notify="https://hooks.example/x")
    assert list(iter_records(tau_home)) == []
