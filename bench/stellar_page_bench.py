"""The Stellar run page of a wide run, timed in headless Chromium against a Portal process of its own: part of
``bench_pane.py --metrics`` (which writes the run), kept apart so each file holds one benchmark's pages."""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from playwright.sync_api import TimeoutError as PlaywrightTimeout

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests")]
from fixtures.portal import TOKEN  # noqa: E402
from fixtures.servers import free_port  # noqa: E402

__all__ = ["baseline_package", "print_stellar", "stellar_wide"]


def _rss_mib(pid: int) -> tuple[float, float]:
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return (int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024)


def baseline_package(work: Path, static: Path) -> Path:
    """A copy of this checkout's ``taunotebook`` package serving another build's browser files (``static``)."""
    root = work / "baseline-package"
    if not root.exists():
        shutil.copytree(ROOT / "taunotebook", root / "taunotebook", ignore=shutil.ignore_patterns("static"))
        shutil.copytree(static, root / "taunotebook" / "static")
    return root


def stellar_wide(browser, work: Path, width: int, package: Path | None = None, timeout_s: float = 300) -> dict:
    """The Stellar run page of the ``width`` run the pane benchmark wrote, from a Portal process of its own
    (``package``: a directory holding the ``taunotebook`` package to serve it with, for a baseline)."""
    import httpx

    store, run = work / f"store-wide-{width}", f"wide-{width}"
    port = free_port()
    env = {**os.environ, "TAU_PORTAL_TOKEN": TOKEN}
    if package is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(package), env.get("PYTHONPATH", "")])
    proc = subprocess.Popen([sys.executable, "-m", "taunotebook", "portal", "--store", str(store), "--port",
                             str(port)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            cwd=package or ROOT)  # `-m` puts the working directory first on sys.path
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/openapi.json", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline or proc.poll() is not None:
                raise SystemExit("the Portal for the Stellar page did not start")
            time.sleep(0.2)
        rss_idle = _rss_mib(proc.pid)[0]
        page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
        t0 = time.monotonic()
        page.goto(f"http://127.0.0.1:{port}/stellar?target={run}&project=proj&token={TOKEN}")
        try:
            page.wait_for_selector("#stellar[data-state=ready]", timeout=timeout_s * 1000)
            ready = time.monotonic() - t0
        except PlaywrightTimeout:
            ready = math.inf  # not ready within timeout_s: the figures below are at that moment
        reads = page.evaluate("() => window.__stellar.requests.filter((r) => r.path.endsWith('/series')).length")
        charts = page.evaluate("() => document.querySelectorAll('section.stellar-chart').length")
        # The run's catalog (every metric's summary), read first by the page: the Portal's share of the wait.
        catalog = page.evaluate("""() => Math.max(0, ...performance.getEntriesByType('resource')
            .filter((e) => /\\/runs\\/[^/]+\\/metrics/.test(e.name)).map((e) => e.duration)) / 1000""")
        rss, peak = _rss_mib(proc.pid)
        page.context.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return {"metrics": width, "code": "baseline" if package else "this branch", "ready_s": round(ready, 2),
            "series_reads": reads, "charts_in_page": charts, "catalog_read_cold_s": round(catalog, 2),
            "portal_rss_idle_mib": round(rss_idle), "portal_rss_mib": round(rss), "portal_rss_peak_mib": round(peak)}


def print_stellar(s: dict) -> None:
    print(f"Stellar run page, W={s['metrics']} ({s['code']}): ready in {s['ready_s']} s, {s['series_reads']} series "
          f"reads, {s['charts_in_page']} charts in the page (the catalog alone, cold: {s['catalog_read_cold_s']} s); "
          f"Portal RSS {s['portal_rss_mib']} MiB "
          f"(peak {s['portal_rss_peak_mib']}, idle {s['portal_rss_idle_mib']}); load "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
