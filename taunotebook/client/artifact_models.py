"""The client's models for a run's artifacts (the local Portal's ``/runs/{run_id}/artifacts``, an addition).

:class:`Artifact` is one row of TauGrid's ``artifacts`` table as listed (``file`` says where its bytes are:
``present``, ``gone`` when deleted after it was registered, ``remote``); :class:`ArtifactPage` one page of them.
Unknown fields are kept in ``extra``, as in :mod:`.models`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .decode import WireModel
from .models import Metadata

__all__ = ["Artifact", "ArtifactPage"]


@dataclass(frozen=True, slots=True)
class Artifact(WireModel):
    artifact_id: str
    type: str
    name: str
    uri: str
    file: str
    step: int | None = None
    content_type: str | None = None
    digest: str | None = None
    size_bytes: int | None = None
    caption: str | None = None
    created_at: str | None = None
    rank: int | None = None
    tags: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def downloadable(self) -> bool:
        return self.file == "present"


@dataclass(frozen=True, slots=True)
class ArtifactPage(WireModel):
    metadata: Metadata
    run_id: str
    artifacts: tuple[Artifact, ...]
    next_after: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
