"""Benchmark: series requests over HTTP against ``taunotebook portal``, one client and many live panes.

**Latency** (default): builds the store with the expstore benchmark's builder (the real writer,
``--files`` chunks) unless ``--store`` already holds one, starts the Portal as its own process on
127.0.0.1 (as a user runs it), and times, end to end with a keep-alive httpx client (request, JSON
body, parse): the full range with ``max_points=8000`` (target p50 < 60 ms), a tail request
(``start_step`` 1% before the end, target p50 < 10 ms), a live-pane poll (500 steps before the end);
each as p50/p95 over ``--repeats`` requests after one warm-up, end to end and transfer only
(httpx ``elapsed``). The first request of a fresh server, which decodes and indexes the files, is
printed separately.

**Load** (``--load``): many live panes. For each client count in ``--clients`` (default 200, 500,
1000), that many clients each poll the 500-step tail of a run once a second for ``--duration``
seconds, from a separate process (``portal_load.py``: asyncio, one keep-alive connection per
client), against a Portal of ``--workers`` processes (a list such as ``1,2`` measures each in one run),
against (a) a 1M-point run and (b) a 10M-point run that a writer process appends
``--append-rate`` points to every second (the clients follow its moving tail). Reports p50/p95/p99
and max latency from when each poll was due, errors, the Portal's CPU time per request, the load
generator's own CPU, and the load average. Target: p95 < 50 ms at 500 clients on a 2-core machine.
Writes ``bench/out/portal_load.json``.

**Pane poll** (``--pane-poll [--width 1000]``): a ``LossPane`` without a browser polling a live run of
``--width`` metrics (every metric gets a step between rounds): requests, bytes and kernel CPU per poll
round, the first and the steady ones.

**App CPU** (``--app-cpu``): the CPU time of one tail answer through the Portal's ASGI app called
directly (no sockets, no server): the server-side cost, least disturbed by a busy machine. Usage::

    .venv/bin/python bench/bench_portal.py [--points 10000000] [--files 100] [--store DIR] [--repeats 30]
    .venv/bin/python bench/bench_portal.py --load [--clients 200,500,1000] [--duration 20] [--workers 1,2]
        [--cases 1m,10m] [--store-1m DIR] [--store-10m DIR]
    .venv/bin/python bench/bench_portal.py --app-cpu [--store-1m DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_expstore_read import BASE_NS, METRIC, RUN, prepare_store, timed  # a sibling script, not a package

TOKEN = "bench-token"
HERE = Path(__file__).resolve().parent
TAIL = 500


def start_portal(store: Path, *extra: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "taunotebook", "portal", "--store", str(store), "--token", TOKEN, *extra],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    text = "".join(proc.stdout.readline() for _ in range(3))
    match = re.search(r"API base: (\S+)", text)
    if match is None:
        proc.kill()
        raise SystemExit(f"the Portal did not start: {text!r}")
    return proc, match.group(1)


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


# -- latency --------------------------------------------------------------------------------------

def latency(args) -> None:
    root, tmp = prepare_store(args.store, args.points, args.files, "bench-portal-")
    proc, api = start_portal(root)
    try:
        with httpx.Client(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120) as client:
            url = f"{api}/runs/{RUN}/series"

            transfer: list[float] = []

            def series(**extra):
                r = client.get(url, params={"target": RUN, "metric": METRIC, "max_points": args.max_points,
                                            **extra})
                r.raise_for_status()
                transfer.append(r.elapsed.total_seconds() * 1000)  # request sent -> body received
                return r.json()

            def report(label: str, fn) -> dict:
                transfer.clear()
                p50, p95, body = timed(fn, args.repeats)
                print(f"HTTP {label}: p50 {p50:.1f} ms  p95 {p95:.1f} ms end to end "
                      f"(transfer only p50 {statistics.median(transfer[1:]):.1f} ms; "
                      f"{body['source_points']:,} -> {body['returned_points']} points)")
                return body

            t = time.perf_counter()
            body = series()
            print(f"first request of a fresh Portal (decode + merge + index): "
                  f"{(time.perf_counter() - t) * 1000:.0f} ms, {body['source_points']:,} -> "
                  f"{body['returned_points']} points")
            last = body["points"][-1]["step"]
            report(f"full range max_points={args.max_points}", series)
            report(f"tail start_step={last - args.points // 100} (last 1%)",
                   lambda: series(start_step=last - args.points // 100))
            report(f"live tail start_step={last - TAIL} (last {TAIL} steps)", lambda: series(start_step=last - TAIL))
        print(f"load average: {load_average()}")
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        if tmp is not None:
            tmp.cleanup()


# -- load -----------------------------------------------------------------------------------------

def append_forever(store: Path, rate: int) -> None:
    """The appending writer of a live run: ``rate`` points in one chunk every second, after the last step."""
    from tau_collector.expstore import StoreReader, open_store
    from tau_collector.expstore.write.writer import MetricWriter
    from tau_collector.projection.metric_event import MetricEvent

    writer = MetricWriter(open_store(store, writable=True))
    step = int(StoreReader(store).series(RUN, METRIC, max_points=1).step[-1]) + 1
    while True:
        started = time.monotonic()
        events = [MetricEvent(project="bench", experiment_id="bench", run_group_id="g", run_id=RUN,
                              metric_name=METRIC, step=s, wall_time=BASE_NS + s * 1_000_000, value=0.5,
                              exported_at=BASE_NS, schema_version="tau.experiment.metric.v1", event_id="x",
                              source="history")
                  for s in range(step, step + rate)]
        writer.write_chunk(f"live-{step}", events, [], request_hash="h")
        step += rate
        time.sleep(max(0.0, 1.0 - (time.monotonic() - started)))


def load_case(label: str, store: Path, clients: list[int], args, *, live: bool, workers: int = 1) -> list[dict]:
    proc, api = start_portal(store, "--workers", str(workers))
    label = f"{label}, {workers} worker{'s' if workers > 1 else ''}"
    appender = None
    rows: list[dict] = []
    try:
        with httpx.Client(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=300) as client:
            # What a pane does first: one reduced full-range read (it also warms the Portal's cache).
            body = client.get(f"{api}/runs/{RUN}/series", params={"target": RUN, "metric": METRIC}).json()
            last = body["points"][-1]["step"]
        if live:
            appender = subprocess.Popen([sys.executable, __file__, "--append-to", str(store),
                                         "--append-rate", str(args.append_rate)])
        url = f"{api}/runs/{RUN}/series?target={RUN}&metric={METRIC}&start_step={last - TAIL}"
        for n in clients:
            cmd = [sys.executable, str(HERE / "portal_load.py"), "--url", url, "--token", TOKEN, "--clients",
                   str(n), "--duration", str(args.duration), "--tail", str(TAIL), "--server-pid", str(proc.pid)]
            out = subprocess.run(cmd + (["--follow"] if live else []), capture_output=True, text=True, check=True)
            if appender is not None and appender.poll() is not None:  # the figures would not be of a live run
                raise SystemExit(f"the appending writer exited ({appender.returncode}) during the {n}-client case")
            result = json.loads(out.stdout)
            server_cpu = result["server_cpu_s"]
            result.update(case=label, load_average=load_average(),
                          server_cpu_us_per_request=round(server_cpu / max(1, result["requests"]) * 1e6),
                          server_cpu_percent=round(100 * server_cpu / result["duration_s"], 1),
                          client_cpu_percent=round(100 * result["client_cpu_s"] / result["duration_s"], 1))
            rows.append(result)
            errors = ", ".join(f"{k}: {v}" for k, v in result["errors"].items()) or "none"
            print(f"{label:>16} {n:>5} clients: {result['rate_per_s']:>7.1f} req/s  p50 {result['p50_ms']:>8.1f}  "
                  f"p95 {result['p95_ms']:>8.1f}  p99 {result['p99_ms']:>8.1f}  max {result['max_ms']:>8.1f} ms  "
                  f"errors {errors}; Portal CPU {result['server_cpu_percent']}% "
                  f"({result['server_cpu_us_per_request']} µs/request), load generator CPU "
                  f"{result['client_cpu_percent']}%, load average {result['load_average']}", flush=True)
    finally:
        if appender is not None:
            appender.terminate()
            appender.wait(timeout=10)
        proc.terminate()
        proc.wait(timeout=10)
    return rows


LOAD_CASES = {  # name: (label, points, the run is being appended to)
    "1m": ("1M points", 1_000_000, False),
    "10m": ("10M, appending", 10_000_000, True),
}


def load(args) -> None:
    clients = [int(c) for c in args.clients.split(",")]
    rows: list[dict] = []
    for name in args.cases.split(","):
        label, points, live = LOAD_CASES[name]
        root, tmp = prepare_store(getattr(args, f"store_{name}"), points, 100, f"bench-portal-{name}-")
        try:
            for workers in [int(w) for w in args.workers.split(",")]:
                rows += load_case(label, root, clients, args, live=live, workers=workers)
        finally:
            if tmp is not None:
                tmp.cleanup()
    out = HERE / "out"
    out.mkdir(exist_ok=True)
    (out / "portal_load.json").write_text(json.dumps(rows, indent=2) + "\n")


def app_cpu(args) -> None:
    """CPU per tail answer of the Portal's ASGI app called directly: no sockets, no server, no load generator."""
    import asyncio

    from taunotebook.portal.app import create_app

    root, tmp = prepare_store(args.store_1m, 1_000_000, 100, "bench-portal-1m-")
    app = create_app(root, token=TOKEN)
    path = f"/api/v2/stellar/runs/{RUN}/series"
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
             "path": path, "raw_path": path.encode(), "root_path": "", "client": ("127.0.0.1", 1),
             "server": ("127.0.0.1", 2), "query_string": f"target={RUN}&metric=train%2Floss&start_step="
             f"{1_000_000 - 1 - TAIL}".encode(),
             "headers": [(b"host", b"127.0.0.1:2"), (b"authorization", f"Bearer {TOKEN}".encode())]}

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def answer(n: int, distinct: bool = False) -> None:
        statuses = []

        async def send(message):
            if message["type"] == "http.response.start":
                statuses.append(message["status"])

        for i in range(n):
            request = dict(scope)
            if distinct:  # no two requests alike (the same 500 points): no kept answer to reuse
                request["query_string"] = (f"target={RUN}&metric=train%2Floss&start_step={1_000_000 - 1 - TAIL}"
                                           f"&max_points={8000 - i % 4000}").encode()
            await app(request, receive, send)
        assert set(statuses) == {200}, statuses

    try:
        asyncio.run(answer(20))  # reads the files and fills the caches
        for _ in range(3):
            for distinct, what in ((False, "the same tail (many panes on one run)"),
                                   (True, "distinct queries (nothing kept to reuse)")):
                cpu = time.process_time()
                asyncio.run(answer(args.repeats * 100, distinct))
                per = (time.process_time() - cpu) / (args.repeats * 100) * 1e6
                print(f"tail answer through the ASGI app, {what}: {per:.0f} µs of CPU "
                      f"(load average {load_average()})")
    finally:
        if tmp is not None:
            tmp.cleanup()


def pane_poll(args) -> None:
    """A loss pane's poll of a wide live run: requests, bytes and kernel CPU per round (no browser)."""
    import tempfile
    import threading

    import uvicorn

    from tau_collector.expstore import open_store
    from tau_collector.expstore.write.writer import MetricWriter
    from tau_collector.projection.metric_event import new_metric_event
    from taunotebook.pane import LossPane
    from taunotebook.portal.app import create_app

    tmp = tempfile.TemporaryDirectory(prefix="bench-pane-poll-")
    root = Path(tmp.name) / "store"
    store = open_store(root, create=True)
    writer = MetricWriter(store)
    names = ["train/loss", "train/lr", *(f"grad_norm/layer_{i:05d}" for i in range(args.width - 2))]

    def rows(steps):
        return [new_metric_event(project="p", experiment_id="e", run_group_id="g", run_id="wide", metric_name=n,
                                 step=s, wall_time=BASE_NS + s * 10**6, value=1.0 / (1 + s), exported_at=BASE_NS,
                                 source="history") for s in steps for n in names]

    writer.write_chunk("c0", rows(range(20)), [], request_hash="c0")
    seen = {"requests": 0, "bytes": 0}
    app = create_app(root, token=TOKEN)

    async def counting(scope, receive, send):
        if scope["type"] == "http":
            seen["requests"] += 1

            async def count_send(message):
                if message["type"] == "http.response.body":
                    seen["bytes"] += len(message.get("body", b""))
                await send(message)

            await app(scope, receive, count_send)
            return
        await app(scope, receive, send)

    server = uvicorn.Server(uvicorn.Config(counting, host="127.0.0.1", port=0, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    pane = LossPane("wide", portal=f"http://127.0.0.1:{port}/?token={TOKEN}", start=False)
    pane.send = lambda *a, **k: None
    poller = pane._poller

    def one_round() -> tuple[int, int, float]:
        before = dict(seen)
        cpu = time.thread_time()
        try:
            poller._poll()
        except TypeError:  # a poller of before issue 20 takes the pane
            poller._poll(pane)
        return seen["requests"] - before["requests"], seen["bytes"] - before["bytes"], time.thread_time() - cpu

    try:
        n, b, cpu = one_round()
        print(f"W = {args.width}: first round {n} requests, {b / 1024:.0f} KiB, {cpu * 1000:.0f} ms kernel CPU")
        for step in range(20, 20 + args.rounds):
            writer.write_chunk(f"c{step}", rows([step]), [], request_hash=f"c{step}")
            n, b, cpu = one_round()
            print(f"W = {args.width}: a round after one new step of every metric: {n} requests, "
                  f"{b / 1024:.0f} KiB, {cpu * 1000:.1f} ms kernel CPU (load average {load_average()})")
    finally:
        pane.close()
        server.should_exit = True
        thread.join(timeout=10)
        store.close()
        tmp.cleanup()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--points", type=int, default=10_000_000)
    parser.add_argument("--files", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--max-points", type=int, default=8000)
    parser.add_argument("--store", type=Path, help="reuse or create the store here (default: a temp dir)")
    parser.add_argument("--load", action="store_true", help="run the many-panes load case")
    parser.add_argument("--clients", default="200,500,1000", help="client counts of the load case")
    parser.add_argument("--cases", default="1m,10m", help="load cases: 1m (a 1M-point run), 10m (10M, appending)")
    parser.add_argument("--duration", type=float, default=20.0, help="measured seconds per client count")
    parser.add_argument("--workers", default="1",
                        help="Portal worker processes of the load case; a list (1,2) runs each, one after another")
    parser.add_argument("--append-rate", type=int, default=1000, help="points per second appended to the live run")
    parser.add_argument("--store-1m", type=Path, help="reuse or create the load case's 1M-point store here")
    parser.add_argument("--store-10m", type=Path, help="reuse or create the load case's 10M-point store here")
    parser.add_argument("--app-cpu", action="store_true",
                        help="CPU per tail answer of the ASGI app called directly (no sockets)")
    parser.add_argument("--pane-poll", action="store_true",
                        help="a loss pane's poll rounds of a wide live run: requests, bytes, kernel CPU")
    parser.add_argument("--width", type=int, default=1000, help="metrics of the --pane-poll run")
    parser.add_argument("--rounds", type=int, default=3, help="steady rounds of --pane-poll")
    parser.add_argument("--append-to", type=Path, help=argparse.SUPPRESS)  # the live run's writer process
    args = parser.parse_args()
    if args.append_to is not None:
        append_forever(args.append_to, args.append_rate)
    elif args.load:
        load(args)
    elif args.app_cpu:
        app_cpu(args)
    elif args.pane_poll:
        pane_poll(args)
    else:
        latency(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
