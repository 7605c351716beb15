"""Every URL the notebook side builds to the Portal: API paths with escaped ids, and "Open in Stellar" links.

Ids go into a path segment percent-encoded once (the Portal decodes a segment exactly once, so any id
reads back as itself) and into a query with Go's ``url.QueryEscape``, as TauGrid's
``links.ExperimentProjectPath`` writes them. Inside Jupyter the Stellar link goes through the Jupyter
server (jupyter-server-proxy at ``{base_url}tau-portal/``), so it works on remote hosts and JupyterHub.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import parse_qsl, quote, quote_plus, urlsplit, urlunsplit

from .errors import ENV_URL

__all__ = [
    "API_PATH",
    "PAGE_DATA_PATH",
    "PROXY_NAME",
    "jupyter_base_url",
    "path_segment",
    "portal_root",
    "query_escape",
    "stellar_link",
    "stellar_url",
]

API_PATH = "/api/v2/stellar"
PAGE_DATA_PATH = "/stellar/data"
PROXY_NAME = "tau-portal"  # the jupyter-server-proxy server name (taunotebook.portal.jupyter_proxy)


def path_segment(value: str, what: str) -> str:
    """``value`` as one URL path segment: every byte outside ``A-Z a-z 0-9 - _ . ~`` percent-encoded."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{what} must be a non-empty string, got {value!r}")
    segment = quote(value, safe="")
    # httpx (like browsers) normalises dot segments away; escaped, the server sees the id itself (and refuses it).
    if segment in (".", ".."):
        segment = segment.replace(".", "%2E")
    return segment


def query_escape(s: str) -> str:
    """Go's ``url.QueryEscape``: keeps only ``A-Z a-z 0-9 - _ . ~``, writes a space as ``+``."""
    return quote_plus(s, safe="")


def portal_root(url: str) -> tuple[str, str | None]:
    """(the Portal's root URL without a trailing slash, the ``?token=`` it carried) for any URL a user may paste.

    `taunotebook portal` prints a page URL (``<root>/stellar?token=…``) and an API base (``<root>/api/v2/stellar``);
    both are TauGrid's own paths under the Portal root, so either one names the same Portal.
    """
    parts = urlsplit(url)
    path = parts.path.rstrip("/")
    for suffix in (API_PATH, "/stellar"):
        if path.endswith(suffix):
            path = path[: -len(suffix)]
            break
    token = dict(parse_qsl(parts.query)).get("token") or None
    return urlunsplit((parts.scheme, parts.netloc, path, "", "")), token


def stellar_url(
    run_id: str,
    project: str | None = None,
    *,
    base: str | None = None,
    workspace: str | None = None,
    compare: Iterable[str] = (),
    source: str | None = None,
) -> str:
    """TauGrid's "Open in Experiments" link: ``/stellar?target=<run_id>[&project=<p>]`` under ``base``.

    Mirrors TauGrid's ``links.ExperimentProjectPath``: ids are trimmed and query-escaped (``+`` for a
    space); with a workspace the query is re-encoded with keys sorted, as Go's ``url.Values.Encode``
    does. ``compare`` (ours) appends ``&compare=b,c``: the page comparing those runs with this one.
    ``source`` (``local | kusto | auto``) joins the sorted query: the page passes it on to every read.
    ``base`` defaults to ``TAU_PORTAL_URL``; with neither, the link is the bare path. An empty run id
    gives ``""`` so callers omit the link rather than show a dead one.
    """
    run_id = (run_id or "").strip()
    if not run_id:
        return ""
    query = [("target", run_id)]
    if project and project.strip():
        query.append(("project", project.strip()))
    extra = [("source", source), ("workspace", workspace)]
    extra = [(k, v.strip()) for k, v in extra if v and v.strip()]
    if extra:
        query += extra
        query.sort()
    path = "/stellar?" + "&".join(f"{query_escape(k)}={query_escape(v)}" for k, v in query)
    others = [c.strip() for c in dict.fromkeys(compare) if c and c.strip() and c.strip() != run_id]
    if others:
        path += "&compare=" + ",".join(query_escape(c) for c in others)
    if base is None:
        base = os.environ.get(ENV_URL) or ""
    if not base:
        return path
    # A base URL copied from `taunotebook portal` may carry ?token=; portal_root drops it so the link never leaks it.
    return portal_root(base)[0] + path


def jupyter_base_url() -> str | None:
    """The base URL of the Jupyter server this kernel belongs to (ending in ``/``), or None outside Jupyter."""
    prefix = os.environ.get("JUPYTERHUB_SERVICE_PREFIX")
    if prefix:
        return prefix if prefix.endswith("/") else prefix + "/"
    parent = os.environ.get("JPY_PARENT_PID")  # set by jupyter_client for the kernels a server starts
    if not parent or not parent.isdigit():
        return None
    # The server's own info file, jpserver-<pid>.json in Jupyter's runtime directory, read directly:
    # jupyter_server.serverapp.list_running_servers would import the whole server (jsonschema builds its
    # URI grammars on import), 2-10 s of a pane's first draw.
    try:
        from jupyter_core.paths import jupyter_runtime_dir
    except ImportError:
        return None
    try:
        info = json.loads((Path(jupyter_runtime_dir()) / f"jpserver-{parent}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(info, dict) or str(info.get("pid")) != parent:
        return None
    base = info.get("base_url") or "/"
    return base if base.endswith("/") else base + "/"


def stellar_link(
    run_id: str,
    project: str | None = None,
    *,
    portal_url: str | None = None,
    workspace: str | None = None,
    compare: Iterable[str] = (),
    source: str | None = None,
) -> str:
    """"Open in Stellar" for a run: ``{base_url}tau-portal/stellar?...`` inside Jupyter, else the Portal's URL.

    Inside Jupyter the link is a path on the notebook's own origin, so it works on a remote host and on
    JupyterHub with Jupyter's auth (the proxied Portal serves its own workspace, so none is named). Elsewhere
    (a script, VS Code's own kernels) it is ``portal_url`` or ``$TAU_PORTAL_URL`` plus TauGrid's
    ``/stellar?target=<run_id>&project=<p>``. A ``source`` is carried in both.
    """
    base = jupyter_base_url()
    if base is not None:
        return stellar_url(run_id, project, base=f"{base}{PROXY_NAME}", compare=compare, source=source)
    return stellar_url(run_id, project, base=portal_url, workspace=workspace, compare=compare, source=source)
