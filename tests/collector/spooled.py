"""What a collector's ``--out`` still holds to deliver: TauGrid's pending manifests and our column, non-finite
and media records."""

from __future__ import annotations

import os
from pathlib import Path


def spooled(out: Path) -> list[str]:
    """The records left in ``out``'s spool (none once every chunk is acknowledged)."""
    return [name for kind in ("pending", "columns", "nonfinite", "media") if (out / kind).is_dir()
            for name in os.listdir(out / kind)]
