"""Run alerts as webhooks: a Slack- and Teams-compatible JSON POST when a run ends or a stop rule fires, sent
on background threads with bounded retries so that a receiver that is down never slows or fails the run.

Where the URLs come from (:func:`resolve_notify_urls`): ``--notify URL`` (repeatable), else
``$TAU_NOTIFY_URL`` (comma- or space-separated), else the per-user default file
``<TAU_HOME>/notify-urls`` (one URL a line, ``#`` comments). Only ``http``/``https`` URLs with a host are
taken; anything else is a :class:`NotifyUrlError` naming where the URL came from.

The payload (:meth:`Notification.payload`) is ``{"text": ...}`` — what Slack incoming webhooks and
Teams' incoming webhooks/workflows read — plus a ``tau`` object with the run id, project, state,
reason, message, step and the Stellar link when known, for receivers that read structure.
Standard library only: the sidecar stays slim.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "NOTIFY_ENV",
    "NOTIFY_FILE",
    "TRIGGERS",
    "Delivery",
    "Notification",
    "Notifier",
    "NotifyUrlError",
    "check_notify_url",
    "resolve_notify_urls",
]

log = logging.getLogger("tau_collector.notify")

NOTIFY_ENV = "TAU_NOTIFY_URL"
NOTIFY_FILE = "notify-urls"  # under the tau home ($TAU_HOME, else $XDG_DATA_HOME/tau or ~/.local/share/tau)
TRIGGERS = ("stop-rule", "failed", "cancelled", "finished")
_RETRY_STATUS = {408, 425, 429, 500, 502, 503, 504}
_HEADLINE = {"stop-rule": "stop rule fired", "failed": "failed", "cancelled": "cancelled", "finished": "finished"}


class NotifyUrlError(ValueError):
    """A webhook URL that cannot be used; the message names the flag, variable or file it came from."""


def check_notify_url(url: str, *, where: str = "--notify") -> str:
    """``url`` stripped, when it is an ``http(s)://host...`` URL; else :class:`NotifyUrlError` naming ``where``."""
    text = url.strip()
    try:
        parts = urllib.parse.urlsplit(text)
        parts.port  # noqa: B018 - a bad port raises here
    except ValueError as exc:
        raise NotifyUrlError(f"{where} {url!r}: not a URL ({exc}); give a webhook URL such as "
                             "https://hooks.slack.com/services/...") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise NotifyUrlError(f"{where} {url!r}: a webhook must be an http:// or https:// URL with a host, "
                             "e.g. --notify https://hooks.slack.com/services/...")
    return text


def _tau_home() -> Path:
    if os.environ.get("TAU_HOME"):
        return Path(os.environ["TAU_HOME"])
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "tau"


def resolve_notify_urls(flags: Iterable[str] | None, environ: dict[str, str] | None = None,
                        home: Path | None = None) -> list[str]:
    """The webhook URLs: the ``--notify`` flags, else ``$TAU_NOTIFY_URL``, else the per-user file; each
    checked (:func:`check_notify_url`). ``--notify ''`` alone turns the variable and the file off."""
    flags = list(flags or ())
    environ = os.environ if environ is None else environ
    if flags:
        return [check_notify_url(u) for u in flags if u.strip()]
    if environ.get(NOTIFY_ENV, "").strip():
        return [check_notify_url(u, where=f"${NOTIFY_ENV}") for u in environ[NOTIFY_ENV].replace(",", " ").split()]
    path = (home or _tau_home()) / NOTIFY_FILE
    try:
        text = path.read_text()
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise NotifyUrlError(f"{path}: cannot read the default webhook URLs: {exc.strerror or exc}") from None
    urls = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if line:
            urls.append(check_notify_url(line, where=f"{path}:{number}"))
    return urls


@dataclass(frozen=True, slots=True)
class Notification:
    """One alert about one run; ``trigger`` is one of :data:`TRIGGERS`."""

    trigger: str
    run_id: str
    project: str | None
    state: str
    reason: str
    message: str
    step: int | None = None
    link: str | None = None

    @property
    def text(self) -> str:
        where = f" (project {self.project})" if self.project else ""
        line = f"tau run {self.run_id}{where} {_HEADLINE.get(self.trigger, self.trigger)}: {self.message}"
        return f"{line}\n{self.link}" if self.link else line

    def payload(self) -> dict:
        return {"text": self.text, "tau": {
            "trigger": self.trigger, "run_id": self.run_id, "project": self.project, "state": self.state,
            "reason": self.reason, "message": self.message, "step": self.step, "link": self.link}}


@dataclass(slots=True)
class Delivery:
    """What became of one notification to one URL: ``sent``, ``failed`` or ``pending`` (still retrying)."""

    notification: Notification
    url: str
    outcome: str = "pending"
    attempts: int = 0
    detail: str = ""
    status: int | None = None
    finished: threading.Event = field(default_factory=threading.Event, repr=False)

    @property
    def redacted_url(self) -> str:
        """Scheme, host and port only: a webhook's path is its secret."""
        parts = urllib.parse.urlsplit(self.url)
        return f"{parts.scheme}://{parts.netloc.rsplit('@', 1)[-1]}/..."


class Notifier:
    """Sends each :class:`Notification` to every URL on its own daemon thread: at most ``attempts`` POSTs
    each waiting at most ``timeout`` s, ``backoff`` doubling up to ``max_backoff`` between them, and
    nothing started after ``deadline`` s. :meth:`send` never blocks and never raises."""

    def __init__(self, urls: Iterable[str], *, attempts: int = 4, timeout: float = 5.0, backoff: float = 0.5,
                 max_backoff: float = 4.0, deadline: float = 30.0,
                 on_result: Callable[[Delivery], None] | None = None) -> None:
        self.urls = list(urls)
        self.attempts, self.timeout, self.deadline = max(1, attempts), timeout, deadline
        self.backoff, self.max_backoff = backoff, max_backoff
        self.deliveries: list[Delivery] = []
        self._on_result = on_result
        self._lock = threading.Lock()

    def send(self, notification: Notification) -> list[Delivery]:
        started = []
        for url in self.urls:
            delivery = Delivery(notification, url)
            with self._lock:
                self.deliveries.append(delivery)
            threading.Thread(target=self._deliver, args=(delivery,), name="tau-notify", daemon=True).start()
            started.append(delivery)
        return started

    def close(self, grace: float) -> list[Delivery]:
        """Wait at most ``grace`` s in all for deliveries still retrying, then return every delivery (those
        still pending are left to their daemon threads, which end with the process)."""
        end = time.monotonic() + max(0.0, grace)
        with self._lock:
            deliveries = list(self.deliveries)
        for delivery in deliveries:
            delivery.finished.wait(max(0.0, end - time.monotonic()))
        return deliveries

    def _deliver(self, delivery: Delivery) -> None:
        body = json.dumps(delivery.notification.payload()).encode()
        end = time.monotonic() + self.deadline
        pause = self.backoff
        while True:
            delivery.attempts += 1
            retry = False
            try:
                request = urllib.request.Request(delivery.url, data=body, method="POST", headers={
                    "Content-Type": "application/json", "User-Agent": "tau-collector-notify"})
                with urllib.request.urlopen(request, timeout=min(self.timeout, max(0.1, end - time.monotonic()))) \
                        as response:
                    delivery.status = response.status
                delivery.outcome, delivery.detail = "sent", f"HTTP {delivery.status}"
            except urllib.error.HTTPError as exc:
                delivery.status = exc.code
                delivery.detail = f"HTTP {exc.code} {exc.reason}"
                retry = exc.code in _RETRY_STATUS
            except (urllib.error.URLError, OSError, ValueError) as exc:
                reason = getattr(exc, "reason", exc)
                delivery.detail = str(reason) or type(exc).__name__
                retry = not isinstance(exc, ValueError)
            if delivery.outcome == "sent":
                break
            if not retry or delivery.attempts >= self.attempts or time.monotonic() + pause >= end:
                delivery.outcome = "failed"
                break
            time.sleep(pause)
            pause = min(pause * 2, self.max_backoff)
        level = logging.INFO if delivery.outcome == "sent" else logging.WARNING
        log.log(level, f"notification {delivery.notification.trigger} to {delivery.redacted_url} "
                       f"{delivery.outcome} after {delivery.attempts} attempt(s): {delivery.detail}")
        if self._on_result is not None:
            try:
                self._on_result(delivery)
            except Exception:  # a recording problem must not surface in the run
                log.exception("recording a notification failed")
        delivery.finished.set()
