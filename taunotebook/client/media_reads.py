"""The client's reads of a run's histograms, images and text (the local Portal's additions; TauGrid's Portal
answers 404)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import httpx

from .errors import error_from_response
from .links import API_PATH, path_segment
from .media_models import Histograms, ImagesAt, MediaTags, TextAt

__all__ = ["MediaReads"]

_T = TypeVar("_T")


class MediaReads:
    """A run's media: its tags, histograms (reduced, or at one step), images (listed, their bytes) and text.

    A mixin of :class:`~.client.PortalClient`: it reads through the client's transport (``_get``, ``_common``,
    ``_optional``, ``_http``)."""

    _http: httpx.Client

    def _media(self, run_id: str, route: str, params: list[tuple[str, str]], build: Callable[[Any], _T]) -> _T:
        return self._get(f"{API_PATH}/runs/{path_segment(run_id, 'run_id')}/{route}", params, build)

    def media(self, run_id: str, *, project: str | None = None, source: str | None = None) -> MediaTags:
        """``GET …/runs/{run_id}/media``: the run's histogram, image and text tags with counts and step ranges."""
        return self._media(run_id, "media", [*self._common(source), *self._optional(project)], MediaTags.from_json)

    def histograms(self, run_id: str, tag: str, *, step_min: int | None = None, step_max: int | None = None,
                   max_steps: int | None = None, keep: Iterable[int] = (), buckets: bool = True,
                   project: str | None = None, source: str | None = None) -> Histograms:
        """``GET …/runs/{run_id}/histograms``: a histogram tag over a step range, reduced to at most ``max_steps``
        steps (the Portal's default 500), never dropping a step of ``keep``; ``buckets=False`` reads summaries."""
        params = [*self._common(source), ("tag", tag),
                  *self._optional(project, step_min=step_min, step_max=step_max, max_steps=max_steps)]
        kept = ",".join(str(int(s)) for s in keep)
        if kept:
            params.append(("keep", kept))
        if not buckets:
            params.append(("buckets", "false"))
        return self._media(run_id, "histograms", params, Histograms.from_json)

    def histogram_at(self, run_id: str, tag: str, step: int, *, project: str | None = None,
                     source: str | None = None) -> Histograms:
        """``GET …/runs/{run_id}/histograms/at``: the histogram of ``tag`` at exactly ``step`` (NotFoundError
        when it has none there)."""
        params = [*self._common(source), ("tag", tag), ("step", str(int(step))), *self._optional(project)]
        return self._media(run_id, "histograms/at", params, Histograms.from_json)

    def images(self, run_id: str, tag: str, step: int, *, project: str | None = None,
               source: str | None = None) -> ImagesAt:
        """``GET …/runs/{run_id}/images``: every image of ``tag`` at the stored step nearest ``step``."""
        params = [*self._common(source), ("tag", tag), ("step", str(int(step))), *self._optional(project)]
        return self._media(run_id, "images", params, ImagesAt.from_json)

    def image_bytes(self, run_id: str, digest: str, *, thumbnail: bool = False, source: str | None = None) -> bytes:
        """The bytes of one image of the run by its digest (``sha256:<hex>`` or the hex), or its PNG thumbnail."""
        path = (f"{API_PATH}/runs/{path_segment(run_id, 'run_id')}/images/"
                f"{path_segment(digest.removeprefix('sha256:'), 'digest')}")
        params = [*self._common(source), *([("thumbnail", "1")] if thumbnail else [])]
        response = self._http.get(path, params=params)
        if not response.is_success:
            raise error_from_response(response)
        return response.content

    def text(self, run_id: str, tag: str, step: int, *, project: str | None = None,
             source: str | None = None) -> TextAt:
        """``GET …/runs/{run_id}/text``: the strings of ``tag`` at the stored step nearest ``step``."""
        params = [*self._common(source), ("tag", tag), ("step", str(int(step))), *self._optional(project)]
        return self._media(run_id, "text", params, TextAt.from_json)
