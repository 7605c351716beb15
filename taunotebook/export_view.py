"""``taunotebook export-view URL -o view.html``: a Stellar run or compare view as one self-contained HTML file.

The file is the one the page's "Export HTML" button saves (``js/shared/export_html.js``): the Stellar page's
script (``static/stellar/stellar-offline.js``) and style inlined, and the Portal's answers to the reads the page
makes, keyed as the page keys them (:func:`read_key`), so it draws the view with no network. The view is the
link's (runs, pins, search, smoothing, axes, zoom, aggregation, as ``docs/comparing-runs.md`` lists them); the
charts are the link's pinned metrics and those its search matches (every metric without one), at most
``max_charts``, each series reduced to ``max_points`` as the page reduces it for its width.

The runs' media go with them (:func:`_export_media`): the media tags the search matches, at most ``max_media``, each
at the link's step (``step=``; else the tag's last step, as the page opens): a histogram tag's bands over its steps
and its histogram at the step, drawn by the page's own cards (``js/shared/media/histogram_traces.js``); the images at
the step as ``data:`` URIs, at most :data:`MAX_EXPORT_IMAGES_PER_TAG` a tag and ``max_image_bytes`` in all; the text
at the step. What the budget leaves out is said in words in the file, with the live page's link.
"""

from __future__ import annotations

import base64
import html
import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urljoin, urlsplit, urlunsplit

import httpx

from tau_collector.cli.durations import duration_type

from .client.errors import ENV_TOKEN, PortalError, error_from_response

__all__ = ["ExportError", "ViewLink", "export_view", "main", "parse_view_link", "read_key", "run_ref"]

STATIC_DIR = Path(__file__).resolve().parent / "static" / "stellar"
OFFLINE_BUNDLE = "stellar-offline.js"
BUILD_HINT = "npm ci --prefix js && npm run build --prefix js   (or: pip install -e .)"
UNKEYED = frozenset({"inline_thumbnails", "max_points", "project", "source", "token"})  # as export_html.js's
MAX_POINTS_CAP = 12000  # TauGrid's series limit
MEDIA_KINDS = ("histograms", "images", "text")  # the page's order of sections (shared/media/sections.js)
BUDGET_FILE = Path(__file__).resolve().parent / "export_budget.json"  # the page's Export HTML imports it too


def _image_budget(path: Path) -> tuple[int, int]:
    """(images of one tag of one run at its step, the images' bytes in one export, all runs and tags together)."""
    try:
        budget = json.loads(path.read_text(encoding="utf-8"))
        per_tag, total = budget["max_images_per_tag"], budget["max_image_bytes"]
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise RuntimeError(f"{path}: the export's image budget cannot be read: {err}") from err
    if not (type(per_tag) is int and type(total) is int and per_tag > 0 and total > 0):
        raise RuntimeError(f"{path}: max_images_per_tag and max_image_bytes must be positive integers")
    return per_tag, total


MAX_EXPORT_IMAGES_PER_TAG, DEFAULT_MAX_IMAGE_BYTES = _image_budget(BUDGET_FILE)
DEFAULT_MAX_MEDIA = 24  # media cards (tags) in one export
_IMAGE_MAGIC = {b"\x89PNG": "image/png", b"\xff\xd8\xff": "image/jpeg", b"GIF8": "image/gif"}
TEMPLATE = "export_template.html"
_SLOT = re.compile(r"@@([A-Z_]+)@@")


class ExportError(ValueError):
    """The view cannot be exported; the message says why and what to do."""


@dataclass(frozen=True)
class ViewLink:
    """A Stellar page link taken apart: the Portal root (ends with "/"), its runs, and its view query."""

    root: str
    targets: list[str]
    query: list[tuple[str, str]]  # the page's query, token left out
    token: str | None

    def get(self, key: str) -> str | None:
        return next((v for k, v in self.query if k == key), None)

    def all(self, key: str) -> list[str]:
        return [v for k, v in self.query if k == key]


def parse_view_link(url: str) -> ViewLink:
    """A run or compare page's link (``<root>/stellar?target=…`` or ``<root>/stellar/runs/<id>?compare=…``)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ExportError(f"the view's URL must be an http(s) link to a Stellar page, got {url!r}")
    path = parts.path
    first: list[str] = []
    match = re.search(r"/stellar/runs/([^/]+)/?$", path)
    if match:
        first = [unquote(match.group(1))]
        path = path[: match.start()]
    elif re.search(r"/stellar/?$", path):
        path = re.sub(r"/stellar/?$", "", path)
    else:
        raise ExportError(f"{url!r} is not a Stellar run or compare page "
                          "(…/stellar?target=<run> or …/stellar/runs/<run>)")
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    token = next((v for k, v in pairs if k == "token"), None)
    query = [(k, v) for k, v in pairs if k != "token"]
    targets = list(first)
    for key in ("target", "compare"):
        for raw in (v for k, v in query if k == key):
            for part in raw.split(","):
                part = part.strip()
                if part and part not in targets:
                    targets.append(part)
    if not targets:
        raise ExportError(f"{url!r} names no run: add ?target=<run_id>")
    root = urlunsplit((parts.scheme, parts.netloc, path.rstrip("/") + "/", "", ""))
    return ViewLink(root=root, targets=targets[:50], query=query, token=token)


def run_ref(key: str, default_project: str | None = None) -> tuple[str, str | None]:
    """(run id, project) of a run as a compare page's address names it: ``run`` (in ``default_project``) or
    ``project/run`` (the last ``/`` separates them: a run id never holds one), as ``js/shared/run_ref.js``'s
    ``parseRunRef``."""
    cut = key.rfind("/")
    if 0 < cut < len(key) - 1:
        return key[cut + 1:], key[:cut]
    return (key[:cut] if cut == len(key) - 1 else key), default_project


def read_key(path: str, params: Iterable[tuple[str, str]]) -> str:
    """The key of a read in an export: export_html.js's readKey (decoded path, sorted query without UNKEYED)."""
    entries = sorted([k, str(v)] for k, v in params if k not in UNKEYED)
    return json.dumps([unquote(path), entries], ensure_ascii=False, separators=(",", ":"))


def _segment(value: str) -> str:
    return quote(value, safe="!'()*")  # encodeURIComponent's set


def _filter(text: str):
    """The metric search's rule (shared/sections.js compileFilter): a case-insensitive regex, else a substring."""
    raw = text.strip()
    if not raw:
        return lambda name: True
    source = raw[1:-1] if len(raw) >= 2 and raw.startswith("/") and raw.endswith("/") else raw
    try:
        pattern = re.compile(source, re.IGNORECASE)
        return lambda name: pattern.search(name) is not None
    except re.error:
        needle = source.lower()
        return lambda name: needle in name.lower()


def _order(name: str) -> tuple[int, str]:
    rank = 0 if name == "loss" else 3 if name.startswith("tau/") else 1 if "loss" in name.lower() else 2
    return rank, name


def _script_text(text: str) -> str:
    return re.sub(r"<(/script|!--)", r"\\x3C\1", text, flags=re.IGNORECASE)


def export_html(config: dict[str, Any], script: str, css: str, heading: str, template: str) -> str:
    """The file: ``template`` (export_html.js's ``EXPORT_TEMPLATE``, which the JS build writes to
    ``static/stellar/export_template.html``) with its slots filled as its ``exportHtml`` fills them, in one pass."""
    values = {
        "TITLE": html.escape(f"Stellar · {heading}"),
        "CSS": css.replace("</", "<\\/"),  # nothing in it can end the style element
        "CONFIG": json.dumps(config, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c"),
        "HEADING": html.escape(heading),
        "EXPORTED_AT": html.escape(config["offline"]["exportedAt"]),
        "SCRIPT": _script_text(script),
    }
    return _SLOT.sub(lambda m: values.get(m.group(1), m.group(0)), template)


class _Reader:
    """The page's reads, made over HTTP and kept by their key."""

    def __init__(self, link: ViewLink, token: str | None, timeout: float, transport: httpx.BaseTransport | None):
        headers = {"Accept": "application/json", "User-Agent": "taunotebook-export-view"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self.http = httpx.Client(base_url=link.root, headers=headers, timeout=timeout, transport=transport)
        self.project = link.get("project") or None
        self.source = link.get("source") or None
        self.answers: dict[str, Any] = {}

    def get(self, path: str, params: Sequence[tuple[str, str]], *, optional: bool = False) -> Any:
        sent = list(params)
        # The runs' configs are read by id in every project (the runs compared may be in several), as the page does.
        if self.project and path != "stellar/data/runs" and not any(k == "project" for k, _ in sent):
            sent.append(("project", self.project))
        if self.source:
            sent.append(("source", self.source))
        response = self.http.get(path, params=sent)
        if not response.is_success:
            if optional:
                return None
            raise error_from_response(response)
        body = response.json()
        self.answers[read_key(path, sent)] = body
        return body


def _zoom_windows(link: ViewLink) -> dict[str, tuple[int, int]]:
    """The step windows the link's zooms read (on a step axis; a time axis' window is cut from the whole series)."""
    if (link.get("x") or "step") != "step":
        return {}
    out: dict[str, tuple[int, int]] = {}
    for key, value in link.query:
        if not key.startswith("zoom.") or len(key) == 5:
            continue
        parts = value.split("..")
        try:
            lo, hi = (float(p) for p in parts) if len(parts) == 2 else (math.nan, math.nan)
        except ValueError:
            continue
        if math.isfinite(lo) and math.isfinite(hi) and lo < hi:
            start = max(0, math.floor(lo))
            out[key[5:]] = (start, max(start, math.ceil(hi)))
    return out


def _size(n: int) -> str:
    return f"{n / 1024 / 1024:.1f} MB" if n >= 1024 * 1024 else f"{n // 1024:,} kB" if n >= 1024 else f"{n:,} bytes"


def _export_media(reader: _Reader, refs: list[tuple[str, str, str | None]], link: ViewLink, max_media: int,
                  max_image_bytes: int) -> tuple[list[str], list[str]]:
    """Reads the runs' media as the page's Media section reads them (keyed as it keys them), the images' bytes put
    in their answers as ``data:`` URIs within the budget; returns (the cards carried as ``kind/tag``, words on what
    was left out)."""
    def scoped(project: str | None) -> list[tuple[str, str]]:
        return [("project", project)] if project else []

    tags_by_run: dict[str, list[dict]] = {}
    for key, run_id, project in refs:
        body = reader.get(f"api/v2/stellar/runs/{_segment(run_id)}/media", scoped(project), optional=True)
        tags_by_run[key] = [t for t in (body or {}).get("tags") or [] if t.get("kind") in MEDIA_KINDS]
    match = _filter(link.get("q") or "")
    cards = sorted({(t["kind"], t["tag"]) for tags in tags_by_run.values() for t in tags if match(t["tag"])},
                   key=lambda c: (MEDIA_KINDS.index(c[0]), c[1]))
    left: list[str] = []
    if len(cards) > max_media:
        left.append(f"{len(cards) - max_media} more media tags (the first {max_media} are exported, --max-media)")
        cards = cards[:max_media]
    cursor = _int_step(link.get("step"))
    budget = [max_image_bytes]
    for kind, tag in cards:
        holders = [(key, run_id, project, t) for key, run_id, project in refs for t in tags_by_run[key]
                   if (t["kind"], t["tag"]) == (kind, tag)]
        step = cursor if cursor is not None else max(int(t["step_max"]) for *_, t in holders)
        for key, run_id, project, _ in holders:
            base = f"api/v2/stellar/runs/{_segment(run_id)}"
            try:
                if kind == "histograms":
                    # The bands, then the histogram nearest the step as the card finds it (histogramNear).
                    bands = reader.get(f"{base}/histograms", [("tag", tag), ("buckets", "false"), *scoped(project)])
                    for query in _near_reads(reader, f"{base}/histograms", tag, step, bands.get("steps") or [],
                                             scoped(project)):
                        reader.get(f"{base}/histograms", query)
                elif kind == "text":
                    reader.get(f"{base}/text", [("tag", tag), ("step", str(step)), *scoped(project)])
                else:
                    answer = reader.get(f"{base}/images", [("tag", tag), ("step", str(step)), *scoped(project)])
                    _embed_images(reader, answer, key, tag, project, budget, max_image_bytes, link, left)
            except PortalError as exc:  # the card shows the read it lacks in words; the export goes on
                left.append(f"{kind} {tag} of {key}: {exc}")
    return [f"{kind}/{tag}" for kind, tag in cards], left


def _near_reads(reader, path: str, tag: str, step: int, steps: list[int], scope: list) -> list[list]:
    """Reads the view's gap around ``step`` keeping it (``steps``: the bands' steps), as histogram_card.js's
    histogramNear does (``GAP_STEPS`` 8), and returns the further reads the card makes when that answer holds
    neither ``step`` nor the whole gap: the first step at or after it and the last at or before it, in the gap."""
    previous = max((s for s in steps if s <= step), default=None)
    following = min((s for s in steps if s >= step), default=None)
    low = [] if previous is None else [("step_min", str(previous))]
    high = [] if following is None else [("step_max", str(following))]
    gap = reader.get(path, [("tag", tag), *low, *high, ("max_steps", "8"), ("keep", str(step)), *scope])
    if step in (gap.get("steps") or []) or not gap.get("reduced"):
        return []
    return [[("tag", tag), ("step_min", str(step)), *high, ("max_steps", "1"), *scope],
            [("tag", tag), *low, ("step_max", str(step)), ("max_steps", "2"), *scope]]


def _int_step(text: str | None) -> int | None:
    if text is None or not re.fullmatch(r"-?\d{1,19}", text.strip()):
        return None
    value = int(text)
    return value if -(2 ** 63) <= value < 2 ** 63 else None


def _embed_images(reader: _Reader, answer: dict, key: str, tag: str, project: str | None, budget: list[int],
                  max_image_bytes: int, link: ViewLink, left: list[str]) -> None:
    """The answer's images as ``data:`` URIs (their thumbnails, ≤ 160 px a side), within the budget; an image left
    out is dropped from the answer, which says so in ``omitted`` (the image card shows it)."""
    kept, over = [], 0
    images = answer.get("images") or []
    past = max(0, len(images) - MAX_EXPORT_IMAGES_PER_TAG)
    for image in images[:MAX_EXPORT_IMAGES_PER_TAG]:
        if budget[0] <= 0:  # nothing more fits: not read
            over += 1
            continue
        path = str(image.get("url") or "").lstrip("/")
        params = [("thumbnail", "1"), *([("project", project)] if project else []),
                  *([("source", reader.source)] if reader.source else [])]
        response = reader.http.get(path, params=params) if path else None
        data = response.content if response is not None and response.is_success else b""
        content_type = next((t for magic, t in _IMAGE_MAGIC.items() if data.startswith(magic)), None)
        if content_type is None or len(data) > budget[0]:
            over += 1
            continue
        budget[0] -= len(data)
        kept.append({**image, "thumbnail_url": f"data:{content_type};base64,{base64.b64encode(data).decode('ascii')}",
                     "url": urljoin(link.root, path)})
    answer["images"] = kept
    if past or over:
        why = [f"{past} past {MAX_EXPORT_IMAGES_PER_TAG} a tag" if past else "",
               f"{over} over the export's {_size(max_image_bytes)} of images (--max-image-bytes) or unreadable"
               if over else ""]
        words = (f"{past + over} more image{'s' if past + over != 1 else ''} of {tag} at step {answer.get('step')} "
                 f"are not in this export ({'; '.join(w for w in why if w)})")
        answer["omitted"] = f"{words}: the live page has every one."
        left.append(f"{words} ({key})")


def export_view(url: str, *, token: str | None = None, max_charts: int = 24, max_points: int = 4000,
                max_media: int = DEFAULT_MAX_MEDIA, max_image_bytes: int = DEFAULT_MAX_IMAGE_BYTES,
                timeout: float = 60.0, transport: httpx.BaseTransport | None = None,
                static_dir: Path = STATIC_DIR) -> tuple[str, list[str]]:
    """(the HTML of the view at ``url``, notes on what it leaves out). The token: ``token``, else the URL's
    ``?token=``, else ``$TAU_PORTAL_TOKEN``."""
    import os

    if max_charts < 1:
        raise ExportError(f"max_charts must be at least 1, got {max_charts}")
    if not 1 <= max_points <= MAX_POINTS_CAP:
        raise ExportError(f"max_points must be within [1, {MAX_POINTS_CAP}], got {max_points}")
    if max_media < 0:
        raise ExportError(f"max_media must be 0 or more, got {max_media}")
    if max_image_bytes < 0:
        raise ExportError(f"max_image_bytes must be 0 or more, got {max_image_bytes}")
    link = parse_view_link(url)
    missing = [name for name in (OFFLINE_BUNDLE, "stellar.css", TEMPLATE) if not (static_dir / name).is_file()]
    if missing:
        raise ExportError(f"static/stellar/{missing[0]} is missing from the taunotebook package: "
                          f"build it with {BUILD_HINT}")
    reader = _Reader(link, token or link.token or os.environ.get(ENV_TOKEN) or None, timeout, transport)
    notes: list[str] = []
    try:
        names: set[str] = set()
        # Each run as the page reads it: by its id, with its project (``project/run`` in the link, else the page's).
        refs = [(key, *run_ref(key, reader.project)) for key in link.targets]

        def scoped(project: str | None) -> list[tuple[str, str]]:
            return [("project", project)] if project else []

        for _, run_id, project in refs:
            base = f"api/v2/stellar/runs/{_segment(run_id)}"
            data = f"stellar/data/runs/{_segment(run_id)}"
            run = reader.get(base, scoped(project))["run"]
            reader.get(f"{base}/metrics", scoped(project), optional=True)
            reader.get(f"{base}/notes", scoped(run.get("project") or project), optional=True)  # shown on its card
            reader.get(f"{data}/notifications", scoped(run.get("project") or project), optional=True)
            reader.get(f"{data}/job", scoped(project), optional=True)  # lifecycle, resources, faults
            names.update(n for n in run.get("metric_names") or [] if not n.startswith("tau/"))
        reader.get("stellar/data/runs", [("run_id", r) for r in dict.fromkeys(r for _, r, _ in refs)], optional=True)
        pins = [p for p in link.all("pin") if p in names]
        match = _filter(link.get("q") or "")
        chosen = pins + [n for n in sorted(names, key=_order) if n not in pins and match(n)]
        if len(chosen) > max_charts:
            notes.append(f"{len(chosen)} charts in the view: the first {max_charts} are exported (--max-charts)")
            chosen = chosen[:max_charts]
        windows = _zoom_windows(link)
        x_axis = link.get("x") or ""
        x_metric = x_axis[7:] if x_axis.startswith("metric:") and len(x_axis) > 7 else None
        if x_metric and x_metric in names and x_metric not in chosen:
            # The x axis' metric is read beside the charts (the page joins it by step); its whole series is
            # carried, and a zoomed window's x values are cut from it.
            for key, run_id, project in refs:
                try:
                    reader.get(f"api/v2/stellar/runs/{_segment(run_id)}/series",
                               [("target", run_id), ("metric", x_metric), ("max_points", str(max_points)),
                                *scoped(project)])
                except PortalError as exc:
                    notes.append(f"{x_metric} (the x axis) of {key}: {exc}")
        for metric in chosen:
            for key, run_id, project in refs:
                reads = [None, windows.get(metric)] if metric in windows else [None]
                for window in reads:
                    span = [("start_step", str(window[0])), ("end_step", str(window[1]))] if window else []
                    try:
                        reader.get(f"api/v2/stellar/runs/{_segment(run_id)}/series",
                                   [("target", run_id), ("metric", metric), ("max_points", str(max_points)), *span,
                                    *scoped(project)])
                    except PortalError as exc:  # a run without the metric: the export says so, as the page does
                        notes.append(f"{metric} of {key}: {exc}")
                        break
                    reader.get(f"stellar/data/runs/{_segment(run_id)}/points",
                               [("metric", metric), *span, *scoped(project)], optional=True)
        media, media_left = _export_media(reader, refs, link, max_media, max_image_bytes) if max_media else ([], [])
        notes.extend(media_left)
    finally:
        reader.http.close()
    query = [(k, v) for k, v in link.query]
    if not link.get("x"):
        query.append(("x", "step"))  # the file's browser may remember another axis
    exported_at = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    config = {
        "mode": "runs", "root": "./", "targets": link.targets, "project": reader.project, "source": reader.source,
        "offline": {"query": "&".join(f"{quote(k, safe='')}={quote(v, safe='')}" for k, v in query),
                    "metrics": chosen, "responses": reader.answers, "exportedAt": exported_at,
                    "media": media, "mediaNote": _media_note(media, media_left, max_image_bytes),
                    "link": urlunsplit(urlsplit(url)._replace(query="&".join(f"{quote(k, safe='')}={quote(v, safe='')}"
                                                                             for k, v in link.query)))},
    }
    script = (static_dir / OFFLINE_BUNDLE).read_text(encoding="utf-8")
    css = (static_dir / "stellar.css").read_text(encoding="utf-8")
    template = (static_dir / TEMPLATE).read_text(encoding="utf-8")
    return export_html(config, script, css, " vs ".join(link.targets), template), notes


def _media_note(media: list[str], left: list[str], max_image_bytes: int) -> str:
    """The Media section's words in the file: what it carries, the budget, and what it left out."""
    if not media and not left:
        return ""
    head = ("This export carries each media tag at one step (the link's step, else the tag's last): histogram bands "
            f"over the steps, the images as thumbnails (at most {MAX_EXPORT_IMAGES_PER_TAG} a tag, "
            f"{_size(max_image_bytes)} in all) and the text; another step shows the nearest one it carries.")
    tail = f" Left out: {'; '.join(left)}." if left else ""
    return head + tail + " Every step and every image: the live page (below)."


USAGE_EXAMPLES = """examples:
  taunotebook export-view "http://127.0.0.1:8765/stellar?target=run-a&target=run-b&smooth=0.6&token=…" -o compare.html
  taunotebook export-view "$URL" -o view.html --token "$TAU_PORTAL_TOKEN" --max-charts 48
"""


def main(argv: Sequence[str] | None = None) -> int:
    """``taunotebook export-view URL -o FILE``: exit 0 with the file written, 2 on a usage error, 1 on a failed read."""
    import argparse
    import sys

    parser = argparse.ArgumentParser(
        prog="taunotebook export-view",
        description="Save a Stellar run or compare view (a link the page's 'Copy link' gives) as one HTML file "
                    "that opens offline: the charts as the page draws them, the runs, their config, "
                    "the time of export.",
        epilog=USAGE_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("url", help="the view's link (…/stellar?target=…&…)")
    parser.add_argument("-o", "--output", required=True, help="the HTML file to write")
    parser.add_argument("--token", default=None,
                        help=f"the Portal's token (default: the link's ?token=, else ${ENV_TOKEN})")
    parser.add_argument("--max-charts", type=int, default=24, help="charts exported at most (default 24)")
    parser.add_argument("--max-points", type=int, default=4000,
                        help="points per series, reduced as the page reduces them "
                             f"(default 4000, at most {MAX_POINTS_CAP})")
    parser.add_argument("--max-media", type=int, default=DEFAULT_MAX_MEDIA,
                        help=f"media tags (histograms, images, text) exported at most (default {DEFAULT_MAX_MEDIA}; "
                             "0: none)")
    parser.add_argument("--max-image-bytes", type=int, default=DEFAULT_MAX_IMAGE_BYTES,
                        help="the images' bytes in the file at most, all runs together (default "
                             f"{DEFAULT_MAX_IMAGE_BYTES}); each is a thumbnail of at most 160 px a side, "
                             f"at most {MAX_EXPORT_IMAGES_PER_TAG} a tag")
    parser.add_argument("--timeout", type=duration_type(), default=60.0, metavar="DURATION",
                        help="time per read: seconds or a Go duration (10, 10s, 1m30s; default 60s)")
    args = parser.parse_args(argv)
    try:
        text, notes = export_view(args.url, token=args.token, max_charts=args.max_charts, max_points=args.max_points,
                                  max_media=args.max_media, max_image_bytes=args.max_image_bytes, timeout=args.timeout)
    except ExportError as exc:
        print(f"taunotebook export-view: error: {exc}", file=sys.stderr)
        return 2
    except (httpx.HTTPError, OSError) as exc:
        print(f"taunotebook export-view: error: the Portal could not be read: {exc}", file=sys.stderr)
        return 1
    except PortalError as exc:  # its words name the read and the status
        print(f"taunotebook export-view: error: {exc}", file=sys.stderr)
        return 1
    Path(args.output).write_text(text, encoding="utf-8")
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    print(f"wrote {args.output} ({len(text.encode()) / 1e6:.1f} MB)")
    return 0
