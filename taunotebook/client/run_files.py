"""The client's reads of a run's files: its checkpoints and artifacts (the local Portal's additions)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import httpx

from .artifact_models import Artifact, ArtifactPage
from .checkpoint_models import Checkpoint, RunCheckpoints
from .errors import error_from_response
from .links import API_PATH, path_segment

__all__ = ["RunFileReads"]


class RunFileReads:
    """A run's checkpoints and artifacts: listed, paged, downloaded.

    A mixin of :class:`~.client.PortalClient`: it reads through the client's transport (``_get``, ``_send``,
    ``_common``, ``_optional``, ``_http``) and defaults (``project``, ``base_url``)."""

    project: str | None
    base_url: str
    _http: httpx.Client

    def checkpoints(self, run_id: str, *, project: str | None = None,
                    source: str | None = None) -> RunCheckpoints:
        """``GET /api/v2/stellar/runs/{run_id}/checkpoints`` (the local Portal's addition): the run's checkpoints
        (``.checkpoints``: step, uri, size_bytes, digest) and retries. TauGrid's Portal answers 404."""
        params = self._common(source)
        project = project if project is not None else self.project
        if project is not None:
            params.append(("project", project))
        return self._get(f"{API_PATH}/runs/{path_segment(run_id, 'run_id')}/checkpoints", params,
                         RunCheckpoints.from_json)

    def checkpoint(self, run_id: str, step: int, *, project: str | None = None,
                   source: str | None = None) -> Checkpoint:
        """The run's checkpoint nearest at or before ``step`` (not a deleted one); ``LookupError`` when none is."""
        return self.checkpoints(run_id, project=project, source=source).at(step)
    def artifacts(self, run_id: str, *, type: str | None = None, after: str | None = None, limit: int | None = None,
                  project: str | None = None, source: str | None = None) -> ArtifactPage:
        """``GET /api/v2/stellar/runs/{run_id}/artifacts`` (the local Portal's addition): one page of the run's
        artifacts (its history and event files, images, checkpoints); ``after`` is the previous page's
        ``next_after``. Each says whether its file is ``present``, ``gone`` or ``remote``."""
        params = [*self._common(source), *self._optional(project, limit=limit)]
        if type:
            params.append(("type", type))
        if after:
            params.append(("after", after))
        return self._get(f"{API_PATH}/runs/{path_segment(run_id, 'run_id')}/artifacts", params,
                         ArtifactPage.from_json)

    def iter_artifacts(self, run_id: str, *, type: str | None = None, source: str | None = None) -> Iterator[Artifact]:
        """Every artifact of the run, page by page."""
        after: str | None = None
        while True:
            page = self.artifacts(run_id, type=type, after=after, source=source)
            yield from page.artifacts
            if not page.next_after or page.next_after == after:
                return
            after = page.next_after

    def download_artifact(self, run_id: str, artifact_id: str, destination: str | os.PathLike[str], *,
                          source: str | None = None) -> int:
        """Stream one artifact's file to ``destination`` (never held whole in memory); returns the bytes written.
        A file that is gone, or not on the Portal's machine, is :class:`NotFoundError` saying so."""
        path = (f"{API_PATH}/runs/{path_segment(run_id, 'run_id')}/artifacts/"
                f"{path_segment(artifact_id, 'artifact_id')}")
        with self._http.stream("GET", path, params=self._common(source)) as response:
            if not response.is_success:
                response.read()
                raise error_from_response(response)
            written = 0
            with open(destination, "wb") as out:
                for block in response.iter_bytes():
                    out.write(block)
                    written += len(block)
        return written
