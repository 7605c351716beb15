"""A real Portal on 127.0.0.1 over a store written by the real writer, shared by the Portal, client and pages tests.

Fixtures: ``portal_store`` (session; the store's path) and ``portal_server`` (session; a
:class:`PortalServer` with ``base_url``, ``token``, ``store_path``, unpackable as
``base_url, token, store_path = portal_server``). The store holds, in workspace ``default``:

- ``run-a`` (project ``proj``, experiment ``exp-1``, group ``g1``, tagged ``tau_workspace=default``):
  ``train/loss`` with :data:`LOSS_POINTS` points (values :func:`loss_value`, steps 0..N-1) and
  ``eval/acc`` with 50 points (step ``10*i``, value ``i/50``), state ``succeeded``;
- ``run-b`` (``proj``/``exp-1``/``g1``, no workspace tag; tag ``note`` = :data:`NOTE`): ``train/loss`` steps 0..9, value ``step/10``, except
  step 3 = NaN and step 7 = +Inf (non-finite), and step 5 written twice (last write, 0.55, wins);
- ``run-other`` (``proj``/``exp-1``/``g1``, tagged ``tau_workspace=other``): invisible here;
- ``page-00`` .. ``page-06`` (``proj``/``exp-page``/``gp``): one point each, for cursor paging.
"""

from __future__ import annotations

import math
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import uvicorn

from tau_collector.expstore import open_store
from tau_collector.expstore.write.writer import MetricWriter
from tau_collector.projection.metric_event import MetricEvent, new_metric_event
from taunotebook.portal.app import create_app

BASE_NS = 1_760_000_000_000_000_000  # 2025-10-09T08:53:20Z
LOSS_POINTS = 20_000
TOKEN = "test-token-0123456789abcdef"
NOTE = "<b>&'quoted'</b>"  # a run tag that Go's SetEscapeHTML(false) leaves as is
PAGE_RUNS = [f"page-{i:02d}" for i in range(7)]


def loss_value(step: int) -> float:
    """A decaying curve with one-step spikes every 997 steps (a reducer that loses one fails the M4 test)."""
    value = 2.0 * math.exp(-step / 5000) + 0.05 * math.sin(step / 37)
    return value + (3.0 if step % 997 == 500 else 0.0)


def _event(run: str, metric: str, step: int, value: float, *, experiment: str = "exp-1", group: str = "g1",
           tags: dict[str, str] | None = None, wall_ns: int | None = None) -> MetricEvent:
    return new_metric_event(
        project="proj", experiment_id=experiment, run_group_id=group, run_id=run, metric_name=metric, step=step,
        wall_time=BASE_NS + step * 1_000_000 if wall_ns is None else wall_ns, value=value, exported_at=BASE_NS,
        source="history", tags=dict(tags or {}),
    )


def _non_finite(run: str, metric: str, step: int, value: float, **kw) -> MetricEvent:
    e = _event(run, metric, step, 0.0, **kw)
    e.value = value  # a non-finite observation is never a valid MetricEvent; the collector passes it aside
    return e


def build_store(root: Path) -> Path:
    store = open_store(root, create=True)
    writer = MetricWriter(store)
    ws_default = {"tau_workspace": "default"}
    loss = [_event("run-a", "train/loss", s, loss_value(s), tags=ws_default) for s in range(LOSS_POINTS)]
    for i in range(0, LOSS_POINTS, 5000):  # several files, as a collector delivers them
        writer.write_chunk(f"a-{i}", loss[i:i + 5000], [], request_hash="h")
    writer.write_chunk("a-acc", [_event("run-a", "eval/acc", 10 * i, i / 50, tags=ws_default) for i in range(50)]
                       + [_event("run-a", "tau/run_status", LOSS_POINTS, 1.0, tags=ws_default)], [],
                       request_hash="h")
    note = {"note": NOTE}
    b = [_event("run-b", "train/loss", s, s / 10, tags=note) for s in range(10) if s not in (3, 7)]
    writer.write_chunk("b-1", b, [_non_finite("run-b", "train/loss", 3, float("nan"), tags=note),
                                  _non_finite("run-b", "train/loss", 7, float("inf"), tags=note)],
                       request_hash="h")
    # The same step again, written later: last wins.
    writer.write_chunk("b-2", [_event("run-b", "train/loss", 5, 0.55, wall_ns=BASE_NS + 10**12, tags=note)], [],
                       request_hash="h")
    writer.write_chunk("other", [_event("run-other", "train/loss", s, 1.0, tags={"tau_workspace": "other"})
                                 for s in range(5)], [], request_hash="h")
    for i, run in enumerate(PAGE_RUNS):
        writer.write_chunk(f"p-{i}", [_event(run, "train/loss", 0, float(i), experiment="exp-page", group="gp")],
                           [], request_hash="h")
        time.sleep(0.002)  # distinct created_at, so "newest first" is visible
    store.close()
    return root


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServerThread:
    """uvicorn serving an ASGI app on 127.0.0.1 in a daemon thread."""

    def __init__(self, app, port: int | None = None) -> None:
        self.port = port or free_port()
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="off")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> ServerThread:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@dataclass(frozen=True)
class PortalServer:
    base_url: str
    token: str
    store_path: Path

    def __iter__(self):
        return iter((self.base_url, self.token, self.store_path))


@pytest.fixture(scope="session")
def portal_store(tmp_path_factory) -> Path:
    return build_store(tmp_path_factory.mktemp("portal") / "store")


@pytest.fixture(scope="session")
def portal_server(portal_store) -> Iterator[PortalServer]:
    with ServerThread(create_app(portal_store, token=TOKEN)) as server:
        yield PortalServer(f"http://127.0.0.1:{server.port}", TOKEN, portal_store)


@pytest.fixture(scope="session")
def api(portal_server) -> Iterator[httpx.Client]:
    """An httpx client for the shared Portal, authenticated with the bearer token."""
    with httpx.Client(base_url=portal_server.base_url,
                      headers={"Authorization": f"Bearer {portal_server.token}"}) as client:
        yield client


def serve(store: Path, **create_kw) -> ServerThread:
    """Another Portal over ``store`` (e.g. another workspace or Kusto configured); use as a context manager."""
    create_kw.setdefault("token", TOKEN)
    return ServerThread(create_app(store, **create_kw))


@pytest.fixture(scope="session")
def config_store(tmp_path_factory) -> Path:
    """A store of runs with configurations (:mod:`.config_store`)."""
    from .config_store import build_config_store

    return build_config_store(tmp_path_factory.mktemp("configs") / "store")


@pytest.fixture(scope="session")
def capi(config_store) -> Iterator[httpx.Client]:
    """An authenticated httpx client of a Portal over :func:`config_store`."""
    with serve(config_store) as server, httpx.Client(base_url=f"http://127.0.0.1:{server.port}",
                                                     headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        yield client
