"""Notes, tags and artifacts of one run from Python: ``run.note(text)``, ``run.notes()``, ``run.tags[key] = value``,
``run.artifacts()``.

A :class:`RunHandle` names a run and reaches it through a :class:`~.client.PortalClient` (``client.run_handle``);
``SubmittedRun`` (``taunotebook.submit``) offers the same three through its own Portal. :class:`RunTags` is a
mutable mapping over the run's tags: each read asks the Portal, each assignment or ``del`` writes. The
collector's own tags (``tau_workspace``, ``tau.status.*``, ...) are read like any other and refused on write.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, MutableMapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

from .artifact_models import Artifact
from .note_models import Note

if TYPE_CHECKING:
    from .client import PortalClient

__all__ = ["RunHandle", "RunTags"]

Connect = Callable[[], AbstractContextManager["PortalClient"]]


class RunTags(MutableMapping[str, str]):
    """The run's tags, read from and written to the Portal on every access (``dict(run.tags)`` for a copy)."""

    def __init__(self, connect: Connect, run_id: str, project: str | None = None) -> None:
        self._connect = connect
        self._run_id = run_id
        self._project = project

    def _read(self) -> dict[str, str]:
        with self._connect() as client:
            return dict(client.run_tags(self._run_id, project=self._project))

    def __getitem__(self, key: str) -> str:
        return self._read()[key]

    def __setitem__(self, key: str, value: str) -> None:
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError(f"tags are text: run.tags[{key!r}] = {value!r} needs a str key and a str value")
        with self._connect() as client:
            client.set_tag(self._run_id, key, value, project=self._project)

    def __delitem__(self, key: str) -> None:
        tags = self._read()
        if key not in tags:
            raise KeyError(key)
        with self._connect() as client:
            client.delete_tag(self._run_id, key, project=self._project)

    def __iter__(self) -> Iterator[str]:
        return iter(self._read())

    def __len__(self) -> int:
        return len(self._read())

    def __repr__(self) -> str:
        return f"RunTags({self._run_id!r}, {self._read()!r})"


class RunHandle:
    """One run's notes and tags through a Portal (``PortalClient.run_handle(run_id)``)."""

    def __init__(self, connect: Connect, run_id: str, project: str | None = None) -> None:
        self._connect = connect
        self.run_id = run_id
        self.project = project

    def note(self, text: str, *, author: str | None = None, idempotency_key: str | None = None) -> Note:
        """Add a note to the run (``author``: default the Portal's user); returns it as stored."""
        with self._connect() as client:
            return client.add_note(self.run_id, text, author=author, idempotency_key=idempotency_key,
                                   project=self.project)

    def notes(self) -> list[Note]:
        """The run's notes, oldest first."""
        with self._connect() as client:
            return client.notes(self.run_id, project=self.project)

    @property
    def tags(self) -> RunTags:
        """The run's tags: ``run.tags["verdict"] = "keep"``, ``del run.tags["verdict"]``, ``dict(run.tags)``."""
        return RunTags(self._connect, self.run_id, self.project)

    def artifacts(self, *, type: str | None = None) -> list[Artifact]:
        """The run's artifacts (its history and event files, images, checkpoints), every page; each says whether
        its file is ``present``, ``gone`` or ``remote``."""
        with self._connect() as client:
            return list(client.iter_artifacts(self.run_id, type=type))

    def download_artifact(self, artifact_id: str, destination: str | os.PathLike[str]) -> int:
        """Stream one artifact's file to ``destination``; returns the bytes written."""
        with self._connect() as client:
            return client.download_artifact(self.run_id, artifact_id, destination)

    def __repr__(self) -> str:
        return f"RunHandle({self.run_id!r})"
