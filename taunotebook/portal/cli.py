"""``taunotebook portal``: serve a store's (and/or a Kusto database's) Stellar API and pages, printing the tokened URL.

stdout carries the start-up lines (the page URL with the token, the API base): the local Portal
launcher parses them. stderr carries log lines: warnings and errors by default, ``-v`` adds the
server's start-up and one line per request (tokens in URLs redacted), ``-vv`` debug.
Usage errors (a bad flag value, a store that is not an expstore, bad Kusto settings) exit 2; a port
that cannot be bound exits 1. ``--kusto-cluster``/``--kusto-database``/``--kusto-auth`` (default
``$TAU_PORTAL_KUSTO_CLUSTER``/``_DATABASE``/``_AUTH``) serve ``source=kusto`` and join ``source=auto``;
with a cluster and no ``--store``, ``kusto`` is the default source.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import re
import secrets
import socket
import sys
from collections.abc import Sequence
from pathlib import Path

from tau_collector.cli import logging_setup as logs
from tau_collector.cli.common import command_parser

from ..kusto_env import AUTH_MODES, DEFAULT_DATABASE, ENV_AUTH, ENV_CLUSTER, ENV_DATABASE
from ..loopback import is_loopback_host
from .auth import generate_token
from .hosts import ENV_ALLOW_HOSTS, allowed_hosts_from_env
from .workers import MAX_WORKERS, serve_workers

log = logging.getLogger("taunotebook.portal")

__all__ = ["build_parser", "main", "portal_urls"]

EPILOG = """\
examples:
  taunotebook portal --store runs/store
      serve on 127.0.0.1 with a free port and a generated token; open the printed URL
  taunotebook portal --store runs/store --port 8765 --token "$TAU_PORTAL_TOKEN"
      a fixed port and token (e.g. for TAU_PORTAL_URL / TAU_PORTAL_TOKEN in notebooks)
  taunotebook portal --store runs/store --host 0.0.0.0 --token "$(openssl rand -hex 24)"
      listen beyond this machine: refused unless you pass --token yourself
  taunotebook portal --store runs/store --host 0.0.0.0 --token "$T" --allow-host portal.lab.example
      reached by name: other names than localhost and IP addresses are refused unless allowed
  taunotebook portal --store runs/store -v --log-format json 2>portal-log.jsonl
      one JSON log line per request on stderr (tokens redacted)
  taunotebook portal --store runs/store --kusto-cluster https://mycluster.westus.kusto.windows.net
      also serve source=kusto (and source=auto) from its Metrics database, signed in with
      DefaultAzureCredential (--kusto-database names another)
  taunotebook portal --kusto-cluster https://mycluster.westus.kusto.windows.net --kusto-auth cli
      ADX only (source=kusto is the default), signed in with the Azure CLI's login

API: GET /api/v2/stellar/runs/{run_id}[/metrics|/series], /api/v2/stellar/experiments/{id}/runs,
page data GET /stellar/data/runs/{run_id}/points, /stellar/data/experiments, each with
?source=local|kusto|auto, with 'Authorization: Bearer <token>'; schema at /openapi.json.
"""


def build_parser() -> argparse.ArgumentParser:
    parser = command_parser(
        "taunotebook portal",
        description="Serve a local expstore and/or an ADX database with TauGrid's v2 Stellar API and the Stellar "
                    "pages.",
        epilog=EPILOG,
    )
    parser.add_argument("--store", type=Path, default=None,
                        help="the expstore directory to read (source=local); required unless --kusto-cluster")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="port to bind; 0 picks a free one (default: 0)")
    parser.add_argument("--token", default=os.environ.get("TAU_PORTAL_TOKEN") or None,
                        help="the access token (default: $TAU_PORTAL_TOKEN, else a generated one, printed in the "
                             "URL); prefer the variable on shared machines: a flag shows in `ps`")
    parser.add_argument("--workspace", default="default",
                        help="the workspace this Portal serves (runs tagged tau_workspace=<W> or untagged)")
    parser.add_argument("--allow-host", action="append", default=None, metavar="NAME",
                        help="also answer requests for this host name (repeatable; '.example.com' allows the "
                             "domain and its subdomains, '*' any name); localhost and IP addresses are always "
                             f"answered (default: ${ENV_ALLOW_HOSTS}, comma-separated)")
    parser.add_argument("--workers", type=int, default=1,
                        help=f"processes answering requests, all on one port (1-{MAX_WORKERS}; default: 1). One "
                             "answers about a thousand live-pane polls a second; each keeps its own read cache")
    kusto = parser.add_argument_group("ADX (source=kusto)")
    kusto.add_argument("--kusto-cluster", default=None, metavar="URI",
                       help=f"the ADX cluster's query URI, https://<name>.<region>.kusto.windows.net "
                            f"(default: ${ENV_CLUSTER})")
    kusto.add_argument("--kusto-database", default=None, metavar="DB",
                       help=f"the database holding TauExpMetricEventsV1 (default: ${ENV_DATABASE}, else "
                            f"{DEFAULT_DATABASE})")
    kusto.add_argument("--kusto-auth", default=None, choices=AUTH_MODES,
                       help=f"how to sign in: default (DefaultAzureCredential), cli (az login), none (a loopback "
                            f"http:// test cluster only) (default: ${ENV_AUTH}, else default)")
    logs.add_arguments(parser)
    return parser


def portal_urls(host: str, port: int, token: str) -> tuple[str, str]:
    """(page URL with the token, API base URL), as printed at start-up."""
    shown = f"[{host}]" if ":" in host else host
    if host in ("0.0.0.0", "::"):
        shown = "127.0.0.1"  # a wildcard bind is reachable locally through loopback
    base = f"http://{shown}:{port}"
    return f"{base}/stellar?token={token}", f"{base}/api/v2/stellar"


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Accepted connections inherit this; without it a small response waits ~40 ms on delayed ACKs.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((host.strip("[]"), port))
    sock.listen(2048)  # as uvicorn: a thousand panes connecting at once must not overflow the queue
    sock.set_inheritable(True)
    return sock


_TOKEN = re.compile(r"(token=)[^&\s\"']+", re.IGNORECASE)


class _RedactTokens(logging.Filter):
    """Access log lines carry the request path; ``?token=…`` in it must not reach a log file."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(_TOKEN.sub(r"\1REDACTED", a) if isinstance(a, str) else a for a in record.args)
        if isinstance(record.msg, str):
            record.msg = _TOKEN.sub(r"\1REDACTED", record.msg)
        return True


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logs.configure_from(args)
    if not 0 <= args.port <= 65535:
        parser.error(f"--port {args.port}: must be between 0 and 65535")
    if not 1 <= args.workers <= MAX_WORKERS:
        parser.error(f"--workers {args.workers}: must be between 1 and {MAX_WORKERS}")
    if not is_loopback_host(args.host) and not args.token:
        parser.error(f"--host {args.host} is not a loopback address: pass --token explicitly to listen there "
                     "(anyone who can reach the port needs only the token)")
    if args.token is not None and not args.token.strip():
        parser.error("--token must not be empty")
    from .kusto.connection import KustoSettings

    try:
        kusto = KustoSettings.from_env(cluster=args.kusto_cluster, database=args.kusto_database,
                                       auth=args.kusto_auth)
    except ValueError as err:
        parser.error(str(err))
    store = args.store
    if store is None and kusto is None:
        parser.error(f"--store is required unless an ADX cluster is given (--kusto-cluster or ${ENV_CLUSTER})")
    if store is not None:
        from tau_collector.expstore import StoreError, open_store

        try:
            open_store(store).close()
        except (StoreError, OSError) as err:
            parser.error(f"--store {store}: {err}")
    token = args.token or generate_token()

    import uvicorn  # imported late: --help and usage errors stay fast

    from .app import create_app

    # pyarrow imports pandas at its first conversion of a Python value (a series read's metric filter): ~0.3 s
    # that a fresh Portal's first page waited for. Done here, before the workers fork, so they share it.
    importlib.import_module("pyarrow").array(["warm-up"])
    try:
        sock = _bind(args.host, args.port)
    except OSError as err:
        log.error(f"cannot listen on {args.host}:{args.port}: {err.strerror or err}; pick another --port "
                  "(0 picks a free one) or stop the process that holds it")
        return 1
    port = sock.getsockname()[1]
    allow_hosts = args.allow_host if args.allow_host is not None else allowed_hosts_from_env()
    cursor_key = secrets.token_bytes(32)  # one for all workers: a cursor from one is valid at another
    page, api = portal_urls(args.host, port, token)
    served = " and ".join(([str(store)] if store is not None else [])
                          + ([f"Kusto database {kusto.database} at {kusto.cluster}"] if kusto else []))
    # uvicorn's records go through our handler (log_config=None): same format, quiet by default
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, _RedactTokens) for f in logger.filters):
            logger.addFilter(_RedactTokens())

    def make_server():
        # Built in each worker (after the fork): its own store reader, SQLite connections and caches; and
        # scikit-learn loaded in the background (the parameter-importance route's first call need not wait for it).
        from .importance import warm_up

        warm_up()
        app = create_app(store, token=token, workspace=args.workspace, kusto=kusto, allow_hosts=allow_hosts,
                         cursor_key=cursor_key)
        # One access-log line per request only when asked for (-v): formatting it costs as much as a tail read.
        config = uvicorn.Config(app, log_config=None, log_level=logs.level_for(args.verbose), lifespan="off",
                                access_log=args.verbose > 0)
        server = uvicorn.Server(config)
        return lambda: server.run(sockets=[sock])

    def started() -> None:
        print(f"Serving {served} (workspace {args.workspace!r}). To open Stellar, visit:\n"
              f"    {page}\n"
              f"API base: {api}  (send 'Authorization: Bearer {token}')", flush=True)
        log.info("portal listening", extra={"store": str(store or ""), "kusto": kusto.cluster if kusto else "",
                                            "host": args.host, "port": port,
                                            "workspace": args.workspace, "workers": args.workers})

    try:
        return serve_workers(make_server, args.workers, started)
    except KeyboardInterrupt:
        return 0
    finally:
        sock.close()


if __name__ == "__main__":
    sys.exit(main())
