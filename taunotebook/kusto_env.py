"""Which ADX database the notebook's Portals read for ``source=kusto``: ``TAU_PORTAL_KUSTO_*``, else the jobs' own.

A Portal reads its cluster from ``TAU_PORTAL_KUSTO_CLUSTER``, ``_DATABASE`` and ``_AUTH`` (``taunotebook
portal`` also takes them as flags). The Portals the notebook starts itself -- the on-demand local Portal
(:mod:`taunotebook.local_portal`) and the one behind jupyter-server-proxy -- get those variables from this
module: the environment's own when ``TAU_PORTAL_KUSTO_CLUSTER`` is set, else the database the jobs offload
to (``TAU_METRICS_OFFLOAD_ADX_CLUSTER_URI``, TauGrid's collector setting, read at its engine URI without
``ingest-``, and ``TAU_METRICS_OFFLOAD_ADX_DATABASE``), so a run sent to ADX is read back from where it went
with nothing more to set. Authentication is ``default`` (azure-identity's ``DefaultAzureCredential``) unless
``TAU_PORTAL_KUSTO_AUTH`` says otherwise; a loopback ``http://`` test cluster gets ``none``, the only
mode it allows. Imports nothing heavy: the kernel side uses it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from urllib.parse import urlsplit, urlunsplit

from .loopback import is_loopback_host

__all__ = ["AUTH_MODES", "DEFAULT_DATABASE", "ENV_AUTH", "ENV_CLUSTER", "ENV_DATABASE", "ENV_PREFIX", "OFFLOAD_CLUSTER",
           "OFFLOAD_DATABASE", "engine_uri", "portal_kusto_env"]

ENV_PREFIX = "TAU_PORTAL_KUSTO_"
ENV_CLUSTER, ENV_DATABASE, ENV_AUTH = "TAU_PORTAL_KUSTO_CLUSTER", "TAU_PORTAL_KUSTO_DATABASE", "TAU_PORTAL_KUSTO_AUTH"
OFFLOAD_CLUSTER = "TAU_METRICS_OFFLOAD_ADX_CLUSTER_URI"
OFFLOAD_DATABASE = "TAU_METRICS_OFFLOAD_ADX_DATABASE"
DEFAULT_DATABASE = "Metrics"  # TauGrid's default database name
AUTH_MODES = ("default", "cli", "none")  # azure-identity's DefaultAzureCredential, the Azure CLI's login, none


def engine_uri(cluster_uri: str) -> str:
    """An ADX cluster's query (engine) URI: its data-management ``ingest-`` host without the prefix."""
    parts = urlsplit(cluster_uri.strip().rstrip("/"))
    host = parts.netloc
    if host.startswith("ingest-"):
        host = host[len("ingest-"):]
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def portal_kusto_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """``TAU_PORTAL_KUSTO_{CLUSTER,DATABASE,AUTH}`` for a Portal the notebook starts; ``{}`` if no cluster is named."""
    environ = os.environ if environ is None else environ
    cluster = environ.get(ENV_CLUSTER, "").strip()
    database = environ.get(ENV_DATABASE, "").strip()
    if not cluster:
        offload = environ.get(OFFLOAD_CLUSTER, "").strip()
        if not offload:
            return {}
        cluster = engine_uri(offload)
        database = database or environ.get(OFFLOAD_DATABASE, "").strip()
    auth = environ.get(ENV_AUTH, "").strip()
    if not auth:
        parts = urlsplit(cluster)
        auth = "none" if parts.scheme == "http" and is_loopback_host(parts.hostname or "") else "default"
    return {ENV_CLUSTER: cluster.rstrip("/"), ENV_DATABASE: database or DEFAULT_DATABASE, ENV_AUTH: auth}
