"""The client's reads of a run's histograms, images and text (the local Portal's additions; TauGrid's Portal
answers 404): a mixin of :class:`~taunotebook.client.PortalClient`."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import httpx

from .errors import InternalError, PortalUnreachable, error_from_response, redact
from .links import API_PATH, path_segment
from .media_models import Histograms, ImagesAt, MediaTags, TextAt

__all__ = ["MAX_HISTOGRAM_STEPS", "MediaReads"]

_T = TypeVar("_T")
MAX_HISTOGRAM_STEPS = 10000  # the Portal's bound on ``max_steps``
_I64 = (-(2**63), 2**63 - 1)
_HEX = re.compile(r"[0-9a-f]{16,128}")


def _step(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be a whole number (a step), not {value!r}")
    if not _I64[0] <= value <= _I64[1]:
        raise ValueError(f"{what}={value} is outside int64, where steps live")
    return value


def _tag(tag: Any) -> str:
    if not isinstance(tag, str) or not tag:
        raise ValueError(f"tag must be a non-empty string, got {tag!r}")
    return tag


def _hex(digest: Any) -> str:
    """``sha256:<hex>`` or ``<hex>`` as the hex the image route takes."""
    text = digest.removeprefix("sha256:").lower() if isinstance(digest, str) else ""
    if not _HEX.fullmatch(text):
        raise ValueError(f"digest must be an image's sha256 (hex, or sha256:<hex>), got {digest!r}")
    return text


class MediaReads:
    """Mixed into :class:`~taunotebook.client.PortalClient`: every read takes ``project`` and ``source`` as the
    run reads do. TauGrid's Portal answers each with 404 (:class:`NotFoundError`, ``route was not found``)."""

    _http: httpx.Client
    base_url: str

    # (PortalClient's own helpers)
    _common: Callable[..., list[tuple[str, str]]]
    _optional: Callable[..., list[tuple[str, str]]]
    _get: Callable[..., Any]

    def _media(self, run_id: str, route: str, params: list[tuple[str, str]], project: str | None,
               source: str | None, build: Callable[[Any], _T]) -> _T:
        query = [*self._common(source), *params, *self._optional(project)]
        return self._get(f"{API_PATH}/runs/{path_segment(run_id, 'run_id')}/{route}", query, build)

    def media_tags(self, run_id: str, *, project: str | None = None, source: str | None = None) -> MediaTags:
        """``GET /api/v2/stellar/runs/{run_id}/media``: the run's histogram, image and text tags, each with its
        count and step range (``unavailable`` says in words why a Kusto-served run has none here)."""
        return self._media(run_id, "media", [], project, source, MediaTags.from_json)

    def histograms(self, run_id: str, tag: str, *, step_min: int | None = None, step_max: int | None = None,
                   max_steps: int | None = None, keep: Iterable[int] = (), buckets: bool = True,
                   project: str | None = None, source: str | None = None) -> Histograms:
        """``GET …/histograms``: the tag over ``step_min..step_max`` reduced by the Portal to at most ``max_steps``
        steps (its default 500, at most 10,000), never dropping a step in ``keep``; ``buckets=False`` leaves the
        buckets out (the distribution bands need only the summaries)."""
        params = [("tag", _tag(tag))]
        for name, value in (("step_min", step_min), ("step_max", step_max)):
            if value is not None:
                params.append((name, str(_step(value, name))))
        if max_steps is not None:
            if isinstance(max_steps, bool) or not isinstance(max_steps, int) \
                    or not 1 <= max_steps <= MAX_HISTOGRAM_STEPS:
                raise ValueError(f"max_steps must be a whole number in 1..{MAX_HISTOGRAM_STEPS}, got {max_steps!r}")
            params.append(("max_steps", str(max_steps)))
        kept = [str(_step(s, "keep[]")) for s in keep]
        if kept:
            params.append(("keep", ",".join(kept)))
        if not buckets:
            params.append(("buckets", "false"))
        return self._media(run_id, "histograms", params, project, source, Histograms.from_json)

    def histogram_at(self, run_id: str, tag: str, step: int, *, project: str | None = None,
                     source: str | None = None) -> Histograms:
        """``GET …/histograms/at``: the tag at exactly ``step`` (404 when it has no value there)."""
        params = [("tag", _tag(tag)), ("step", str(_step(step, "step")))]
        return self._media(run_id, "histograms/at", params, project, source, Histograms.from_json)

    def images_near(self, run_id: str, tag: str, step: int, *, project: str | None = None,
                    source: str | None = None) -> ImagesAt:
        """``GET …/images``: every image of ``tag`` at the stored step nearest ``step`` (the earlier on a tie)."""
        params = [("tag", _tag(tag)), ("step", str(_step(step, "step")))]
        return self._media(run_id, "images", params, project, source, ImagesAt.from_json)

    def text_at(self, run_id: str, tag: str, step: int, *, project: str | None = None,
                source: str | None = None) -> TextAt:
        """``GET …/text``: the strings of ``tag`` at the stored step nearest ``step``."""
        params = [("tag", _tag(tag)), ("step", str(_step(step, "step")))]
        return self._media(run_id, "text", params, project, source, TextAt.from_json)

    def image_bytes(self, run_id: str, digest: str, *, thumbnail: bool = True, project: str | None = None,
                    source: str | None = None) -> bytes:
        """``GET …/images/{hex}``: an image's bytes (``thumbnail=True``: a PNG whose longest side is ≤ 160 px;
        ``False``: the image as stored). Read once, not retried: an image is extra to the view that asks for it."""
        hex_digest = _hex(digest)
        path = f"{API_PATH}/runs/{path_segment(run_id, 'run_id')}/images/{hex_digest}"
        params = [*self._common(source), *self._optional(project)]
        if thumbnail:
            params.append(("thumbnail", "1"))
        try:
            response = self._http.get(path, params=params)
        except (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError) as exc:
            raise PortalUnreachable(None, "UNREACHABLE", f"{type(exc).__name__}: {exc}", "unreachable", True,
                                    url=self.base_url + path.lstrip("/")) from exc
        if not response.is_success:
            raise error_from_response(response)
        content_type = response.headers.get("content-type", "application/octet-stream").split(";")[0].strip()
        if thumbnail and content_type != "image/png":
            raise InternalError(response.status_code, "INVALID_RESPONSE",
                                f"the thumbnail of image {hex_digest} is {content_type}, not a PNG; is this URL "
                                "a taunotebook Portal?", "internal", False, url=redact(response.request.url))
        return response.content
