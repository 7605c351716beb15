"""Runs the local Portal behind jupyter-server-proxy at ``{base_url}tau-portal/`` (links to it: ``client.links``).

How access is protected: jupyter-server-proxy only forwards requests that passed Jupyter's own auth
(token, password or JupyterHub OAuth), so ``{base_url}tau-portal/...`` is exactly as private as the
notebook. The Portal behind it still binds 127.0.0.1 and still requires its token — a per-Jupyter-server
secret that the proxy adds to every forwarded request as ``Authorization: Bearer`` (its
``request_headers_override``). The token reaches the Portal through its environment, never its command
line (other users of a shared host can read ``ps``), and never reaches the browser. So other local users
cannot read the store through the Portal's port, and no "trust the proxy" mode (a Portal without a token)
has to exist.

It serves ``source=kusto`` too when the Jupyter server's environment names an ADX database
(:func:`taunotebook.kusto_env.portal_kusto_env`: ``TAU_PORTAL_KUSTO_*``, else ``TAU_METRICS_OFFLOAD_ADX_*``).

Register it in ``pyproject.toml``::

    [project.entry-points.jupyter_serverproxy_servers]
    tau-portal = "taunotebook.portal.jupyter_proxy:setup_tau_portal"
"""

from __future__ import annotations

import os
import secrets
import sys
from collections.abc import Sequence
from pathlib import Path

# The links through this proxy are built with every other link, in taunotebook.client.links; importable here too.
from taunotebook.client.links import PROXY_NAME, jupyter_base_url, stellar_link
from taunotebook.home import tau_home
from taunotebook.kusto_env import portal_kusto_env

__all__ = ["ENV_PROXY_TOKEN", "ENV_STORE", "PROXY_NAME", "default_store", "jupyter_base_url", "setup_tau_portal",
           "stellar_link"]

ENV_STORE = "TAU_STORE"
ENV_PROXY_TOKEN = "TAU_PORTAL_PROXY_TOKEN"
# Importing pyarrow and opening the store takes a few seconds on a cold disk; the proxy's 5 s default is tight.
START_TIMEOUT = 60.0


def default_store() -> Path:
    """``$TAU_STORE``, else ``<TAU_HOME>/store`` (the local runs' store, as the quickstart)."""
    if os.environ.get(ENV_STORE):
        return Path(os.environ[ENV_STORE])
    return tau_home() / "store"


def setup_tau_portal() -> dict:
    """The jupyter-server-proxy server config; called once when the Jupyter server starts."""
    token = secrets.token_hex(24)
    return {
        "command": [sys.executable, "-m", "taunotebook.portal.jupyter_proxy", "--port", "{port}"],
        "environment": {**portal_kusto_env(), ENV_PROXY_TOKEN: token, ENV_STORE: str(default_store())},
        "timeout": START_TIMEOUT,
        # The Portal sees /stellar?..., not {base_url}tau-portal/stellar?...; its pages use relative URLs.
        "absolute_url": False,
        "launcher_entry": {"enabled": False},
        "new_browser_tab": True,
        # The proxy forwards the browser's Host (the Jupyter server's public name); the Portal behind it is
        # reached on loopback, so say so and its Host allow-list needs no public name.
        "request_headers_override": {"Authorization": f"Bearer {token}", "Host": "127.0.0.1:{port}"},
    }


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m taunotebook.portal.jupyter_proxy --port N``: the Portal as jupyter-server-proxy starts it."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m taunotebook.portal.jupyter_proxy",
                                     description="Start the local Portal for jupyter-server-proxy.")
    parser.add_argument("--port", type=int, required=True, help="the port jupyter-server-proxy picked")
    args = parser.parse_args(argv)
    token = os.environ.get(ENV_PROXY_TOKEN, "")
    if not token:
        parser.error(f"{ENV_PROXY_TOKEN} is not set: this entry is started by jupyter-server-proxy, which sets it")
    store = default_store()
    from tau_collector.expstore import open_store

    # Before the first run there is no store yet; an empty one gives an empty runs listing, not a failed proxy.
    open_store(store, create=True, writable=False).close()  # it only reads: a read-only store is served
    from .cli import main as portal_main

    return portal_main(["--store", str(store), "--host", "127.0.0.1", "--port", str(args.port), "--token", token])


if __name__ == "__main__":
    sys.exit(main())
