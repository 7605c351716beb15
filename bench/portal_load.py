"""Load generator for ``bench_portal.py --load``: N clients, each polling one URL once a second, as live panes do.

Runs as its own process so that generating load does not take the server's CPU inside one
interpreter: asyncio (uvloop when installed) with a bare HTTP/1.1 keep-alive client, about 30 µs of
CPU per request. Each client keeps one connection and sends its next poll one second after the
previous one was due, or as soon as the previous answer arrives when that is later; latency is
measured from when the poll was *due*, so a server that queues shows it (no coordinated omission).
Clients start spread over the first second. With ``--follow`` the ``start_step`` of each request
is the newest step any answer has shown minus ``--tail`` (a live run's tail moves).

Prints one JSON object: latencies (p50/p95/p99/max in ms), counts, errors by kind, this process's
own CPU time and, with ``--server-pid``, the server's over the measured seconds. Usage (normally
started by ``bench_portal.py``)::

    python bench/portal_load.py --url http://127.0.0.1:PORT/api/v2/stellar/runs/R/series?... \\
        --token T --clients 500 --duration 20 [--follow --tail 500]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import resource
import time
from urllib.parse import parse_qsl, urlencode, urlsplit

try:
    import uvloop
except ImportError:  # pragma: no cover - plain asyncio is only slower
    uvloop = None

TIMEOUT = 30.0


class Shared:
    def __init__(self, start_step: int | None) -> None:
        self.newest_step = start_step
        self.latencies: list[float] = []
        self.errors: dict[str, int] = {}
        self.measuring = False

    def error(self, kind: str) -> None:
        if self.measuring:
            self.errors[kind] = self.errors.get(kind, 0) + 1


def _newest_step(body: bytes) -> int | None:
    # The last point's step, without parsing the whole answer: '..."step":123,"value":...}]}'.
    at = body.rfind(b'"step":')
    if at < 0:
        return None
    end = body.find(b",", at)
    try:
        return int(body[at + 7:end])
    except ValueError:
        return None


async def _read_response(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status = int(lines[0].split(b" ", 2)[1])
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    body = await reader.readexactly(length) if length else b""
    return status, body


async def _client(index: int, args, shared: Shared, host: str, port: int, path: str, query: dict,
                  start: float, end: float) -> None:
    due = start + (index / args.clients)  # spread over the first second
    await asyncio.sleep(max(0.0, due - time.perf_counter()))
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), TIMEOUT)
    except (OSError, TimeoutError) as err:
        shared.measuring = True
        shared.error(f"connect: {type(err).__name__}")
        return
    head = (f"Host: {host}:{port}\r\nAuthorization: Bearer {args.token}\r\n"
            "Accept: application/json\r\n\r\n").encode()
    try:
        while due < end:
            now = time.perf_counter()
            if due > now:
                await asyncio.sleep(due - now)
            q = dict(query)
            if args.follow and shared.newest_step is not None:
                q["start_step"] = max(0, shared.newest_step - args.tail)
            writer.write(f"GET {path}?{urlencode(q)} HTTP/1.1\r\n".encode() + head)
            try:
                status, body = await asyncio.wait_for(_read_response(reader), TIMEOUT)
            except TimeoutError:
                shared.error("timeout")
                return
            done = time.perf_counter()
            if status != 200:
                shared.error(f"HTTP {status}")
            else:
                if shared.measuring:
                    shared.latencies.append((done - due) * 1000.0)
                if args.follow:
                    step = _newest_step(body)
                    if step is not None and (shared.newest_step is None or step > shared.newest_step):
                        shared.newest_step = step
            due = max(due + 1.0, done)
    except (OSError, asyncio.IncompleteReadError) as err:
        shared.error(f"connection: {type(err).__name__}")
    finally:
        writer.close()


def _cpu_seconds(pid: int) -> float:
    """utime + stime of a process and its live children (a Portal's worker processes), from /proc."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    total = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            children = [int(c) for c in f.read().split()]
    except OSError:
        children = []
    for child in children:
        try:
            total += _cpu_seconds(child)
        except OSError:
            pass  # a worker that just exited
    return total


def _percentile(sorted_ms: list[float], q: float) -> float:
    if not sorted_ms:
        return math.nan
    return sorted_ms[min(len(sorted_ms) - 1, max(0, math.ceil(q * len(sorted_ms)) - 1))]


async def _main(args) -> dict:
    parts = urlsplit(args.url)
    query = dict(parse_qsl(parts.query))
    start_step = int(query["start_step"]) + args.tail if args.follow and "start_step" in query else None
    shared = Shared(start_step)
    start = time.perf_counter() + 0.2
    end = start + args.warmup + args.duration
    tasks = [asyncio.create_task(_client(i, args, shared, parts.hostname, parts.port, parts.path, query, start, end))
             for i in range(args.clients)]
    await asyncio.sleep(max(0.0, start + args.warmup - time.perf_counter()))
    shared.measuring = True
    cpu0 = resource.getrusage(resource.RUSAGE_SELF)
    server0 = _cpu_seconds(args.server_pid) if args.server_pid else 0.0
    wall0 = time.perf_counter()
    await asyncio.sleep(max(0.0, end - time.perf_counter()))
    server1 = _cpu_seconds(args.server_pid) if args.server_pid else 0.0
    await asyncio.gather(*tasks)
    cpu1 = resource.getrusage(resource.RUSAGE_SELF)
    wall = time.perf_counter() - wall0
    lat = sorted(shared.latencies)
    return {
        "clients": args.clients,
        "duration_s": round(wall, 2),
        "requests": len(lat),
        "rate_per_s": round(len(lat) / wall, 1) if wall else 0.0,
        "p50_ms": round(_percentile(lat, 0.50), 2),
        "p95_ms": round(_percentile(lat, 0.95), 2),
        "p99_ms": round(_percentile(lat, 0.99), 2),
        "max_ms": round(lat[-1], 2) if lat else math.nan,
        "errors": shared.errors,
        "client_cpu_s": round((cpu1.ru_utime + cpu1.ru_stime) - (cpu0.ru_utime + cpu0.ru_stime), 2),
        "server_cpu_s": round(server1 - server0, 2),
        "newest_step": shared.newest_step,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", required=True, help="the polled URL, query included")
    parser.add_argument("--token", required=True)
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--duration", type=float, default=20.0, help="measured seconds (after --warmup)")
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--follow", action="store_true", help="move start_step with the newest step seen")
    parser.add_argument("--tail", type=int, default=500)
    parser.add_argument("--server-pid", type=int, help="also report this process's CPU time while measuring")
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, args.clients + 256)), hard))
    if uvloop is not None:
        uvloop.install()
    print(json.dumps(asyncio.run(_main(args))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
