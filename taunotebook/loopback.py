"""Whether a host or a URL names this machine's loopback (``localhost``, ``127.0.0.0/8``, ``::1``).

One rule for every place that trusts loopback more than a network: a Portal may listen there
without an explicit token, a Kusto test cluster may be plain ``http://`` with no credential there,
and a Ray cluster reached there shares this machine's filesystem.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

__all__ = ["is_loopback_host", "is_loopback_url"]


def is_loopback_host(host: str) -> bool:
    """``localhost`` or a loopback IP address (IPv6 brackets allowed); never a name that merely resolves there."""
    host = host.strip().strip("[]").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def is_loopback_url(url: str) -> bool:
    """The host of ``url`` (``scheme://host[:port]/...``, or ``host:port`` without a scheme) is loopback."""
    return is_loopback_host(urlsplit(url if "://" in url else f"http://{url}").hostname or "")
