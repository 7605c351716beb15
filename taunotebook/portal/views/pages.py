"""The Stellar browser pages (``/stellar``, the runs listing) and their static assets (their data: page-data views)."""

from __future__ import annotations

import html
import json
import mimetypes
from pathlib import Path

from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Route

__all__ = ["BUILD_HINT", "PAGE_BUNDLE", "routes"]

# The pages' script and style are bundled from js/stellar/ into static/stellar/ at build time (plotly.js inside).
_BUILT_DIR = Path(__file__).resolve().parents[2] / "static" / "stellar"
PAGE_BUNDLE = "stellar.js"
BUILD_HINT = "npm ci --prefix js && npm run build --prefix js   (or: pip install -e .)"

# The pages hold no data (the script fetches it from the token-protected API), so they can be framed by
# the Jupyter page that links to them, but by nothing else.
_PAGE_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "SAMEORIGIN",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
        "img-src 'self' data: blob:; connect-src 'self'; frame-ancestors 'self'"
    ),
}

_TEMPLATE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="{root}static/stellar/stellar.css">
<script type="application/json" id="stellar-config">{config}</script>
</head>
<body>
<header class="stellar-header">
  <a class="stellar-home" href="{root}stellar/runs">Stellar</a>
  <span class="stellar-title" id="stellar-title">{heading}</span>
</header>
<main id="stellar" data-mode="{mode}" data-state="{initial_state}">
{notice}
  <noscript><p class="stellar-error">The Stellar pages need JavaScript to draw charts.</p></noscript>
</main>
{script_tag}
</body>
</html>
"""


def _asset_notice() -> str:
    return (
        '  <div class="stellar-error" id="stellar-asset-missing" role="alert">'
        f"The Stellar pages' script is not built: <code>static/stellar/{PAGE_BUNDLE}</code> is missing from the "
        f"taunotebook package. Build it from the repository root with <code>{html.escape(BUILD_HINT)}</code> "
        "and reload this page.</div>"
    )


def _page(request: Request, *, mode: str, root: str, targets: list[str], heading: str,
          write_key: str | None) -> HTMLResponse:
    built = (_BUILT_DIR / PAGE_BUNDLE).is_file()
    config = {
        "mode": mode,
        "root": root,
        "targets": targets,
        "project": request.query_params.get("project") or None,
        # The page passes its source (local | kusto | auto) on to every read it makes; the reads check it.
        "source": request.query_params.get("source") or None,
        # What the page sends in X-Tau-Token to write notes and tags (portal/writes.py): the page is served only
        # after the token gate, and no other origin can read it.
        "writeKey": write_key,
    }
    # "</" would end the JSON script element early; escaping "<" keeps any run id inert.
    config_json = json.dumps(config, separators=(",", ":")).replace("<", "\\u003c")
    body = _TEMPLATE.format(
        title=html.escape(f"Stellar · {heading}"),
        heading=html.escape(heading),
        root=root,
        mode=mode,
        config=config_json,
        # Without its script the page can only say why: it is drawn as failed, with the notice.
        initial_state="loading" if built else "error",
        notice='  <p class="stellar-loading" id="stellar-loading">Loading…</p>' if built else _asset_notice(),
        script_tag=f'<script type="module" src="{root}static/stellar/{PAGE_BUNDLE}"></script>' if built else "",
    )
    return HTMLResponse(body, headers=_PAGE_HEADERS)


def _targets(request: Request) -> list[str]:
    """``target`` then ``compare`` values, repeated or comma-separated, trimmed, first occurrence kept."""
    seen: list[str] = []
    for key in ("target", "compare"):
        for raw in request.query_params.getlist(key):
            for part in raw.split(","):
                part = part.strip()
                if part and part not in seen:
                    seen.append(part)
    return seen


async def _asset(request: Request) -> Response:
    name = request.path_params["path"]
    # Assets are a flat directory: anything with a separator or a leading dot is not ours.
    if not name or "/" in name or "\\" in name or name.startswith(".") or "\x00" in name:
        return PlainTextResponse("asset not found\n", status_code=404, headers={"X-Content-Type-Options": "nosniff"})
    path = _BUILT_DIR / name
    if path.is_file():
        media_type = mimetypes.guess_type(name)[0] or "application/octet-stream"
        if name.endswith((".js", ".mjs")):
            media_type = "text/javascript"
        return FileResponse(path, media_type=media_type, headers={"X-Content-Type-Options": "nosniff"})
    hint = f" Build it with: {BUILD_HINT}" if name in (PAGE_BUNDLE, "stellar.css") else ""
    return PlainTextResponse(
        f"asset {name} not found in the taunotebook package.{hint}\n",
        status_code=404,
        headers={"X-Content-Type-Options": "nosniff"},
    )


def routes(write_key: str | None = None) -> list[BaseRoute]:
    """The Stellar pages and their assets, for the app factory to mount beside the API; ``write_key`` is what
    the pages send to write notes and tags (None: they do not write)."""

    def listing(root: str):
        async def endpoint(request: Request) -> Response:
            return _page(request, mode="listing", root=root, targets=[], heading="Runs", write_key=write_key)

        return endpoint

    async def stellar(request: Request) -> Response:
        targets = _targets(request)
        if not targets:
            return _page(request, mode="listing", root="./", targets=[], heading="Runs", write_key=write_key)
        return _page(request, mode="runs", root="./", targets=targets, heading=" vs ".join(targets),
                     write_key=write_key)

    async def stellar_run(request: Request) -> Response:
        # TauGrid's SPA alias /stellar/runs/<id>; extra ?compare= runs are overlaid on it.
        run_id = request.path_params["run_id"].strip()
        targets = [run_id, *(t for t in _targets(request) if t != run_id)]
        return _page(request, mode="runs", root="../../", targets=targets, heading=" vs ".join(targets),
                     write_key=write_key)

    return [
        Route("/", listing("./"), methods=["GET", "HEAD"], name="stellar_home"),
        Route("/stellar", stellar, methods=["GET", "HEAD"], name="stellar"),
        Route("/stellar/runs", listing("../"), methods=["GET", "HEAD"], name="stellar_runs"),
        Route("/stellar/runs/{run_id}", stellar_run, methods=["GET", "HEAD"], name="stellar_run"),
        Route("/static/stellar/{path:path}", _asset, methods=["GET", "HEAD"], name="stellar_asset"),
    ]
