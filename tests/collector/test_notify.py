"""Run alerts as webhooks (:mod:`tau_collector.job.notify`) against a real receiver on loopback: the payload of
each trigger, bounded retries, and a receiver that is down or slow never slowing or failing the run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from fixtures import webhook_receiver
from fixtures.webhook_receiver import refused_url
from tau_collector.expstore import open_store, read_run_events
from tau_collector.job.notify import (
    TRIGGERS,
    Notification,
    Notifier,
    NotifyUrlError,
    check_notify_url,
    resolve_notify_urls,
)

from ..polling import wait_until

receiver = webhook_receiver.receiver  # the fixture: a receiver on 127.0.0.1

# -- the notifier alone -------------------------------------------------------------------------------------


def _note(trigger: str = "finished", **kw) -> Notification:
    fields = {"run_id": "r1", "project": "demo", "state": "succeeded", "reason": "workload-entrypoint-exit",
              "message": "entrypoint exited with code 0"} | kw
    return Notification(trigger, **fields)


@pytest.mark.parametrize("trigger", TRIGGERS)
def test_each_trigger_posts_slack_and_teams_text_and_the_run_in_structure(receiver, trigger):
    note = _note(trigger, step=7 if trigger == "stop-rule" else None, link="http://portal/stellar/runs/r1")
    [delivery] = Notifier([receiver.url]).send(note)
    assert delivery.finished.wait(300)
    [post] = receiver.posts
    assert post["path"] == "/hooks/secret-path" and post["content_type"] == "application/json"
    body = post["body"]
    assert body["text"].startswith("tau run r1 (project demo) ") and "entrypoint exited with code 0" in body["text"]
    assert body["text"].endswith("http://portal/stellar/runs/r1")
    assert body["tau"] == {"trigger": trigger, "run_id": "r1", "project": "demo", "state": "succeeded",
                           "reason": "workload-entrypoint-exit", "message": "entrypoint exited with code 0",
                           "step": 7 if trigger == "stop-rule" else None, "link": "http://portal/stellar/runs/r1"}
    assert (delivery.outcome, delivery.attempts, delivery.status) == ("sent", 1, 200)


def test_a_receiver_that_answers_503_is_retried_until_it_takes_the_notification(receiver):
    receiver.statuses = [503, 502]
    [delivery] = Notifier([receiver.url], backoff=0.01).send(_note())
    assert delivery.finished.wait(300)
    assert (delivery.outcome, delivery.attempts) == ("sent", 3)
    assert len(receiver.posts) == 3 and receiver.posts[0]["body"] == receiver.posts[2]["body"]


def test_retries_are_bounded_and_a_client_error_is_not_retried(receiver):
    receiver.statuses = [500] * 10
    [delivery] = Notifier([receiver.url], attempts=3, backoff=0.01).send(_note())
    assert delivery.finished.wait(300)
    assert (delivery.outcome, delivery.attempts, delivery.detail) == ("failed", 3, "HTTP 500 Internal Server Error")
    receiver.statuses = [404]
    [delivery] = Notifier([receiver.url], attempts=3, backoff=0.01).send(_note())
    assert delivery.finished.wait(300)
    assert (delivery.outcome, delivery.attempts, delivery.status) == ("failed", 1, 404)


def test_a_refused_connection_fails_after_its_attempts_and_send_never_raises():
    notifier = Notifier([refused_url()], attempts=2, backoff=0.01)
    [delivery] = notifier.send(_note())
    assert delivery.finished.wait(300)
    assert delivery.outcome == "failed" and delivery.attempts == 2 and "refused" in delivery.detail.lower()
    assert delivery.redacted_url.endswith("/...") and "hook" not in delivery.redacted_url


def test_close_returns_a_delivery_the_receiver_holds_as_pending(receiver):
    receiver.hold = True
    notifier = Notifier([receiver.url])
    notifier.send(_note())
    receiver.wait_for(1)
    [delivery] = notifier.close(0)
    assert delivery.outcome == "pending"


@pytest.mark.parametrize("url", ["hooks.slack.com/services/x", "ftp://example.com/x", "https://", "http://h:99999/"])
def test_a_bad_url_is_refused_naming_where_it_came_from(url):
    with pytest.raises(NotifyUrlError, match="--notify"):
        check_notify_url(url)


def test_urls_come_from_the_flags_else_the_variable_else_the_per_user_file(tmp_path):
    env = {"TAU_NOTIFY_URL": "http://a.example/1, http://b.example/2"}
    (tmp_path / "notify-urls").write_text("# my team\nhttp://c.example/3  # alerts channel\n\n")
    assert resolve_notify_urls(["http://f.example/0"], env, tmp_path) == ["http://f.example/0"]
    assert resolve_notify_urls([], env, tmp_path) == ["http://a.example/1", "http://b.example/2"]
    assert resolve_notify_urls([], {}, tmp_path) == ["http://c.example/3"]
    assert resolve_notify_urls([""], env, tmp_path) == []  # --notify '' turns the defaults off
    assert resolve_notify_urls([], {}, tmp_path / "nowhere") == []
    with pytest.raises(NotifyUrlError, match=r"\$TAU_NOTIFY_URL 'slack'"):
        resolve_notify_urls([], {"TAU_NOTIFY_URL": "slack"}, tmp_path)
    (tmp_path / "notify-urls").write_text("http://ok.example/\nnot a url\n")
    with pytest.raises(NotifyUrlError, match=r"notify-urls:2 'not a url'"):
        resolve_notify_urls([], {}, tmp_path)


# -- under tau-collector wrap -------------------------------------------------------------------------------

_FINE = """
    import json
    for step in range(3):
        print(json.dumps({"step": step, "loss": 1.0}), flush=True)
"""


def _wrap(tmp_path: Path, script: str, *extra: str, env: dict | None = None) -> subprocess.Popen:
    (tmp_path / "train.py").write_text(textwrap.dedent(script))
    return subprocess.Popen(
        [sys.executable, "-m", "tau_collector", "wrap", "--run-dir", str(tmp_path / "run"), "--interval", "1s",
         "--run", "r1", "--project", "demo", "--experiment", "e", "--group", "g",
         "--store", str(tmp_path / "store"), *extra, "--", sys.executable, str(tmp_path / "train.py")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)


def _events(tmp_path: Path) -> list:
    return read_run_events(open_store(tmp_path / "store"), "r1", type="notification")


def test_a_finished_run_posts_once_and_records_it_as_a_run_event(tmp_path, receiver):
    proc = _wrap(tmp_path, _FINE, "--notify", receiver.url, "--notify-link", "http://portal/stellar/r1")
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-2000:]
    [post] = receiver.posts
    assert post["body"]["tau"] | {"message": None} == {
        "trigger": "finished", "run_id": "r1", "project": "demo", "state": "succeeded",
        "reason": "workload-entrypoint-exit", "message": None, "step": None, "link": "http://portal/stellar/r1"}
    [event] = _events(tmp_path)
    assert event.severity == "info" and event.payload["outcome"] == "sent" and event.payload["trigger"] == "finished"
    assert "secret-path" not in event.message and "secret-path" not in json.dumps(event.payload)


def test_a_failed_run_with_its_receiver_down_keeps_its_exit_code_and_records_the_failure(tmp_path):
    proc = _wrap(tmp_path, "import sys; sys.exit(3)", "--notify", refused_url())
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 3, err[-2000:]
    [event] = _events(tmp_path)
    assert event.severity == "warning" and event.payload["trigger"] == "failed"
    assert event.payload["outcome"] == "failed" and event.payload["state"] == "failed"


def test_a_stop_rule_posts_when_it_fires_with_its_step(tmp_path, receiver):
    script = """
        import json, time
        for step in range(10_000):
            print(json.dumps({"step": step, "loss": 100.0 if step == 5 else 1.0}), flush=True)
            time.sleep(0.05)
    """
    proc = _wrap(tmp_path, script, "--stop-if", "loss>10", env=dict(os.environ,
                                                                    TAU_NOTIFY_URL=receiver.url))
    _, err = proc.communicate(timeout=300)
    assert proc.returncode != 0, err[-2000:]
    [post] = receiver.posts  # the stop rule's notification says how the run ends: no second one
    tau = post["body"]["tau"]
    assert (tau["trigger"], tau["reason"], tau["step"]) == ("stop-rule", "metric-stop-rule", 5)
    assert "loss was 100 at step 5" in post["body"]["text"]
    assert [e.payload["trigger"] for e in _events(tmp_path)] == ["stop-rule"]


def test_a_cancelled_run_posts_cancelled(tmp_path, receiver):
    script = """
        import json, time
        print(json.dumps({"step": 0, "loss": 1.0}), flush=True)
        time.sleep(600)
    """
    proc = _wrap(tmp_path, script, "--notify", receiver.url)
    wait_until(lambda: (tmp_path / "run" / "metrics-history-attempt-0").exists()
               and any((tmp_path / "run" / "metrics-history-attempt-0").iterdir()), "the trainer's first row")
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=300)
    [post] = receiver.posts
    assert post["body"]["tau"]["trigger"] == "cancelled" and post["body"]["tau"]["state"] == "cancelled", err[-2000:]


def test_a_receiver_that_never_answers_holds_wrap_only_for_the_grace(tmp_path, receiver):
    receiver.hold = True  # released only when the test ends: wrap has to leave without its answer
    proc = _wrap(tmp_path, _FINE, "--notify", receiver.url, "--notify-grace", "1s")
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-2000:]
    [event] = _events(tmp_path)
    assert event.payload["outcome"] == "failed" and "still undelivered when wrap exited (1s grace" in event.message


@pytest.mark.parametrize(("extra", "env", "named"), [
    (("--notify", "slack-channel"), {}, "--notify 'slack-channel'"),
    ((), {"TAU_NOTIFY_URL": "ftp://x/y"}, "$TAU_NOTIFY_URL 'ftp://x/y'"),
    (("--notify-link", "nowhere"), {}, "--notify-link 'nowhere'"),
])
def test_a_bad_webhook_url_is_a_usage_error_before_anything_starts(tmp_path, extra, env, named):
    proc = _wrap(tmp_path, _FINE, *extra, env=dict(os.environ, **env))
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 2 and named in err.decode()
    assert not (tmp_path / "run").exists()
