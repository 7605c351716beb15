"""The Stellar browser pages (``/stellar``, the runs listing) and their static assets."""

from __future__ import annotations

from starlette.routing import BaseRoute


def page_routes() -> list[BaseRoute]:
    """Routes the app factory mounts beside the API; filled in by the pages work."""
    return []
