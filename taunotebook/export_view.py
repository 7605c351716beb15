"""``taunotebook export-view URL -o view.html``: a Stellar run or compare view as one self-contained HTML file.

The file is the one the page's "Export HTML" button saves (``js/shared/export_html.js``): the Stellar page's
script (``static/stellar/stellar-offline.js``) and style inlined, and the Portal's answers to the reads the page
makes, keyed as the page keys them (:func:`read_key`), so it draws the view with no network. The view is the
link's (runs, pins, search, smoothing, axes, zoom, aggregation, as ``docs/comparing-runs.md`` lists them); the
charts are the link's pinned metrics and those its search matches (every metric without one), at most
``max_charts``, each series reduced to ``max_points`` as the page reduces it for its width.
"""

from __future__ import annotations

import html
import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlsplit, urlunsplit

import httpx

from tau_collector.cli.durations import duration_type

from .client.errors import ENV_TOKEN, PortalError, error_from_response

__all__ = ["ExportError", "ViewLink", "export_view", "main", "parse_view_link", "read_key", "run_ref"]

STATIC_DIR = Path(__file__).resolve().parent / "static" / "stellar"
OFFLINE_BUNDLE = "stellar-offline.js"
BUILD_HINT = "npm ci --prefix js && npm run build --prefix js   (or: pip install -e .)"
UNKEYED = frozenset({"max_points", "project", "source", "token"})  # as export_html.js's
MAX_POINTS_CAP = 12000  # TauGrid's series limit
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


def export_view(url: str, *, token: str | None = None, max_charts: int = 24, max_points: int = 4000,
                timeout: float = 60.0, transport: httpx.BaseTransport | None = None,
                static_dir: Path = STATIC_DIR) -> tuple[str, list[str]]:
    """(the HTML of the view at ``url``, notes on what it leaves out). The token: ``token``, else the URL's
    ``?token=``, else ``$TAU_PORTAL_TOKEN``."""
    import os

    if max_charts < 1:
        raise ExportError(f"max_charts must be at least 1, got {max_charts}")
    if not 1 <= max_points <= MAX_POINTS_CAP:
        raise ExportError(f"max_points must be within [1, {MAX_POINTS_CAP}], got {max_points}")
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
                    "link": urlunsplit(urlsplit(url)._replace(query="&".join(f"{quote(k, safe='')}={quote(v, safe='')}"
                                                                             for k, v in link.query)))},
    }
    script = (static_dir / OFFLINE_BUNDLE).read_text(encoding="utf-8")
    css = (static_dir / "stellar.css").read_text(encoding="utf-8")
    template = (static_dir / TEMPLATE).read_text(encoding="utf-8")
    return export_html(config, script, css, " vs ".join(link.targets), template), notes


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
    parser.add_argument("--timeout", type=duration_type(), default=60.0, metavar="DURATION",
                        help="time per read: seconds or a Go duration (10, 10s, 1m30s; default 60s)")
    args = parser.parse_args(argv)
    try:
        text, notes = export_view(args.url, token=args.token, max_charts=args.max_charts, max_points=args.max_points,
                                  timeout=args.timeout)
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
