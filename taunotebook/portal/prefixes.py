"""Where the Portal's data routes live: TauGrid's v2 reads, our page data, and the series export under it."""

from __future__ import annotations

__all__ = ["API_BASE", "EXPORT_BASE", "PAGE_DATA_BASE"]

API_BASE = "/api/v2/stellar"
PAGE_DATA_BASE = "/stellar/data"
EXPORT_BASE = PAGE_DATA_BASE + "/export"
