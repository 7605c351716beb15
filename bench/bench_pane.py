"""Benchmark: the loss pane in a real JupyterLab (headless Chromium), timed inside the page.

1. Write → drawn latency: a trainer wrapped by ``tau-collector wrap`` prints ``--points`` rows at
   ``--rate`` rows/s and logs the time of each print; the pane records when each appended chunk was
   drawn (``window.__tauPaneMarks``: after ``Plotly.extendTraces`` resolved and the next animation
   frame). Latency per step = drawn − printed, the whole path: normalizer → history chunk →
   collector → expstore → Portal → kernel thread → comm → browser. p50/p95 (target p95 < 1 s).
2. A 1M-point metric (the expstore benchmark's builder): time from running the pane's cell to its
   first draw, then responsiveness while 100 points/s are appended for ``--append-seconds``: the
   lateness of a 50 ms ``setInterval`` probe in the page (p50/p95/max) and long tasks (> 50 ms).

3. ``--metrics W [W ...]`` (instead of 1 and 2): a live run of W metrics (``tests/fixtures/wide_run.py``: loss,
   eval/, train/, act/, grad_norm/ per layer, system/), 2 rows of all W appended per second, shown by
   ``LossPane(run)`` with no ``metrics=``: the first ``loss`` point drawn after the cell started, browser long
   tasks over 100 ms after that first draw, the page's DOM nodes and JS heap (Chrome DevTools' Performance
   metrics), plots in the pane, the Portal's requests per second in steady state, the kernel's CPU (% of a
   core: the whole kernel process and the poller thread, from /proc), and whether loss kept growing while
   another cell of the notebook slept through the window; then the Stellar run page of the widest run, served
   by a Portal of its own (a subprocess): ready time, per-metric reads made, the Portal's RSS (now and peak).

Usage::

    .venv/bin/python bench/bench_pane.py [--points 250] [--rate 20] [--append-seconds 20]
    .venv/bin/python bench/bench_pane.py --metrics 20 1000 10000 [--steady-seconds 20] [--cpu-profile]

Needs the built bundles (``npm --prefix js run build``, or ``pip install -e .``) and Debian ``chromium``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from playwright.sync_api import Page, sync_playwright

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(Path(__file__).resolve().parent)]
from bench_expstore_read import BASE_NS, METRIC, RUN, build  # noqa: E402 - sibling script
from stellar_page_bench import baseline_package, print_stellar, stellar_wide  # noqa: E402 - sibling module

from fixtures.jupyter import open_notebook, run_cell, start_jupyter  # noqa: E402 - the suite's Jupyter launcher
from fixtures.portal import TOKEN  # noqa: E402
from fixtures.servers import ServerThread  # noqa: E402
from fixtures.wide_run import RequestLog, wide_metric_names, write_rows  # noqa: E402 - the UI tests' wide run
from tau_collector.expstore import open_store  # noqa: E402
from tau_collector.expstore.write.writer import MetricWriter  # noqa: E402
from tau_collector.projection.metric_event import MetricEvent  # noqa: E402
from taunotebook.portal.app import create_app  # noqa: E402

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
TRAINER = textwrap.dedent(
    """
    import json, math, os, sys, time
    n, rate, log, go = int(sys.argv[1]), float(sys.argv[2]), open(sys.argv[3], "w"), sys.argv[4]
    print(json.dumps({"step": 0, "loss": 2.0}), flush=True)
    while not os.path.exists(go):  # the timed rows start once the pane has drawn its first read
        time.sleep(0.05)
    for step in range(1, n + 1):
        log.write(json.dumps({"step": step, "t": time.time()}) + "\\n"); log.flush()
        print(json.dumps({"step": step, "loss": 2.0 * math.exp(-step / 100)}), flush=True)
        time.sleep(1.0 / rate)
    """
)


def notebook(run: str, portal: str, project: str, times: Path | None = None, source: str | None = None,
             bundle: Path | None = None) -> dict:
    create = f"pane = LossPane({run!r}, portal={portal!r}, project={project!r}, source={source!r})"
    src = f"from taunotebook.pane import LossPane\n\n{create}\npane"
    if bundle is not None:  # a baseline's browser code (another checkout's built pane.js) in this kernel
        src = f"import taunotebook.pane as _p\n_p._bundle_text = open({str(bundle)!r}).read()\n{src}"
    if times is not None:
        # The kernel's side of the first-draw timeline, in wall-clock ms like the page's marks.
        src = (f"import json as _json, time as _time\n_t0 = _time.time()\nfrom taunotebook.pane import LossPane\n"
               f"_t1 = _time.time()\n{create}\n_t2 = _time.time()\n"
               f"_json.dump({{'cell_started': _t0 * 1e3, 'imported': _t1 * 1e3, 'constructed': _t2 * 1e3}}, "
               f"open({str(times)!r}, 'w'))\npane")
    return {"cells": [{"cell_type": "code", "execution_count": None, "id": "c0", "metadata": {}, "outputs": [],
                       "source": src}],
            "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
            "nbformat": 4, "nbformat_minor": 5}


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, max(0, math.ceil(q * len(s)) - 1))]


def loss_points(page: Page, metric: str) -> int:
    return int(page.evaluate(
        "(m) => { const p = document.querySelector(`.tau-pane-metric[data-metric='${m}']`);"
        " return p ? Number(p.dataset.points) : 0; }", metric))


def latency(page: Page, lab, store: Path, portal: str, work: Path, points: int, rate: float, *,
            sink: list[str] | None = None, env: dict[str, str] | None = None, source: str | None = None,
            run: str = "lat") -> dict:
    """Write → drawn for a wrapped trainer; ``sink`` (default: the expstore at ``store``), ``env`` and the
    pane's ``source`` let ``bench_kusto.py`` measure the same path through ADX."""
    work.mkdir(parents=True, exist_ok=True)
    (work / "train.py").write_text(TRAINER, encoding="utf-8")
    writes = work / "writes.jsonl"
    (lab.root_dir / f"{run}.ipynb").write_text(json.dumps(notebook(run, portal, "proj", source=source)),
                                               encoding="utf-8")
    trainer = subprocess.Popen(
        [str(Path(sys.executable).with_name("tau-collector")), "wrap", "--run-dir", str(work / "run"), "--run", run,
         "--project", "proj", "--experiment", "bench", "--group", "bench",
         *(sink if sink is not None else ["--store", str(store)]), "--",
         sys.executable, str(work / "train.py"), str(points), str(rate), str(writes), str(work / "go")],
        stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, cwd=work, env={**os.environ, **(env or {})})
    open_notebook(page, lab, f"{run}.ipynb")
    page.evaluate("() => { window.__tauPaneMarks = []; }")
    run_cell(page, 0)
    page.wait_for_function("() => { const p = document.querySelector(\".tau-pane-metric[data-metric='loss']\");"
                           " return p && Number(p.dataset.points) >= 1; }", timeout=120_000)
    (work / "go").touch()
    if trainer.wait(timeout=points / rate + 120) != 0:
        raise SystemExit("the wrapped trainer failed")
    page.wait_for_function("(n) => { const p = document.querySelector(\".tau-pane-metric[data-metric='loss']\");"
                           " return p && Number(p.dataset.points) >= n; }", arg=points + 1, timeout=60_000)
    page.wait_for_timeout(500)
    marks = page.evaluate("() => window.__tauPaneMarks.filter(m => m.metric === 'loss')")
    written = {r["step"]: r["t"] * 1000 for r in map(json.loads, writes.read_text().splitlines())}
    lat = []
    for step, t in written.items():
        drawn = [m["drawn_at"] for m in marks if m["first_step"] <= step <= m["last_step"]]
        if drawn:
            lat.append(min(drawn) - t)
    return {"rows": points, "rate_per_s": rate, "measured": len(lat), "p50_ms": statistics.median(lat),
            "p95_ms": pct(lat, 0.95), "max_ms": max(lat), "chunks_drawn": len(marks)}


class Timed:
    """The Portal app, noting when each request came and was answered (wall-clock ms, like the page's marks)."""

    def __init__(self, app, log: list[dict]) -> None:
        self.app, self.log = app, log

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        entry = {"path": scope["path"], "query": scope.get("query_string", b"").decode(), "start": time.time() * 1e3}
        try:
            await self.app(scope, receive, send)
        finally:
            entry["end"] = time.time() * 1e3
            self.log.append(entry)


def first_draw_timeline(page: Page, times: Path, requests: list[dict]) -> dict:
    """Where the time to the first draw goes, in ms after the cell was started in the page."""
    marks = page.evaluate("""() => ({ t0: window.__t0, view: window.__view, drawn: window.__firstDraw,
        loaded: window.__tauPaneLoaded || null,
        reset: (window.__tauPaneMarks || []).find((m) => m.op === 'reset' && m.metric === 'train/loss') || null })""")
    deadline = time.monotonic() + 10
    while not times.is_file() and time.monotonic() < deadline:
        time.sleep(0.05)
    kernel = json.loads(times.read_text()) if times.is_file() else {}
    t0 = marks["t0"]
    series = [r for r in requests if r["path"].endswith("/series") and "max_points" in r["query"]]
    out = {
        "kernel_cell_started": kernel.get("cell_started", math.nan) - t0,
        "kernel_imported": kernel.get("imported", math.nan) - t0,
        "kernel_widget_constructed": kernel.get("constructed", math.nan) - t0,
        "first_reduced_read_start": series[0]["start"] - t0 if series else math.nan,
        "first_reduced_read_end": series[0]["end"] - t0 if series else math.nan,
        "esm_evaluated": (marks["loaded"] or math.nan) - t0,
        "view_up": marks["view"] - t0,
        "first_points_sent": (marks["reset"] or {}).get("sent_at", math.nan) - t0,
        "first_points_received": (marks["reset"] or {}).get("received_at", math.nan) - t0,
        "first_draw": marks["drawn"] - t0,
    }
    return {k: round(v, 1) for k, v in out.items()}


PROBE = """() => {
  window.__probe = { late: [], long: [] };
  let last = performance.now();
  window.__probeTimer = setInterval(() => { const t = performance.now(); window.__probe.late.push(t - last - 50);
                                            last = t; }, 50);
  try {
    new PerformanceObserver((l) => { for (const e of l.getEntries()) window.__probe.long.push(e.duration); })
      .observe({ type: "longtask", buffered: false });
  } catch (e) {}
}"""


def million(page: Page, lab, work: Path, append_seconds: float) -> dict:
    store = work / "store-1m"
    built = build(store, 1_000_000, 10)
    requests: list[dict] = []
    times = work / "cell-times.json"
    with ServerThread(Timed(create_app(store, token=TOKEN), requests)) as server:
        portal = f"http://127.0.0.1:{server.port}"
        (lab.root_dir / "million.ipynb").write_text(json.dumps(notebook(RUN, portal, "bench", times)),
                                                   encoding="utf-8")
        open_notebook(page, lab, "million.ipynb")
        page.evaluate("""() => { const abs = () => performance.timeOrigin + performance.now();
          window.__firstDraw = null; window.__view = null; window.__t0 = abs(); window.__tauPaneMarks = [];
          new MutationObserver((_, obs) => {
            if (window.__view === null && document.querySelector(".tau-pane")) window.__view = abs();
            const p = document.querySelector(".tau-pane-metric[data-metric='train/loss']");
            if (p && Number(p.dataset.points) > 0 && window.__firstDraw === null) {
              window.__firstDraw = abs(); obs.disconnect(); }
          }).observe(document.body, { subtree: true, childList: true, attributes: true,
                                      attributeFilter: ["data-points"] }); }""")
        requests.clear()
        run_cell(page, 0)
        page.wait_for_function("() => window.__firstDraw !== null", timeout=120_000)
        timeline = first_draw_timeline(page, times, requests)
        first_draw, view = timeline["first_draw"], timeline["view_up"]
        reduced = loss_points(page, METRIC)
        page.wait_for_timeout(1000)
        page.evaluate(PROBE)
        writer = MetricWriter(open_store(store, writable=True))
        step = 1_000_000
        appended = 0
        started = time.monotonic()
        while time.monotonic() - started < append_seconds:
            events = [MetricEvent(project="bench", experiment_id="bench", run_group_id="g", run_id=RUN,
                                  metric_name=METRIC, step=s, wall_time=BASE_NS + s * 1_000_000, value=0.5,
                                  exported_at=BASE_NS, schema_version="tau.experiment.metric.v1", event_id="x",
                                  source="history") for s in range(step, step + 10)]
            writer.write_chunk(f"append-{step}", events, [], request_hash="h")
            step += 10
            appended += 10
            time.sleep(max(0.0, started + appended / 100 - time.monotonic()))
        page.wait_for_function("(n) => Number(document.querySelector(\".tau-pane-metric[data-metric='train/loss']\")"
                               ".dataset.points) >= n", arg=reduced + appended, timeout=60_000)
        probe = page.evaluate("() => { clearInterval(window.__probeTimer); return window.__probe; }")
    late = probe["late"]
    return {"store_build_s": built, "timeline_ms": timeline, "first_draw_ms": first_draw, "view_rendered_ms": view,
            "first_read_points": reduced,
            "appended": appended, "append_seconds": append_seconds,
            "probe_late_p50_ms": statistics.median(late), "probe_late_p95_ms": pct(late, 0.95),
            "probe_late_max_ms": max(late), "long_tasks": len(probe["long"]),
            "long_task_max_ms": max(probe["long"], default=0.0)}


WIDE_MARKS = """() => { const abs = () => performance.timeOrigin + performance.now();
  window.__t0 = abs(); window.__firstDraw = null; window.__long = [];
  new PerformanceObserver((l) => { for (const e of l.getEntries())
      window.__long.push({ at: performance.timeOrigin + e.startTime, ms: e.duration }); })
    .observe({ type: "longtask", buffered: false });
  new MutationObserver((_, obs) => {
    const p = document.querySelector(".tau-pane-metric[data-metric='loss']");
    if (p && Number(p.dataset.points) > 0 && window.__firstDraw === null) {
      window.__firstDraw = abs(); obs.disconnect(); }
  }).observe(document.body, { subtree: true, childList: true, attributes: true, attributeFilter: ["data-points"] });
}"""

KERNEL = """async (code) => {
  const k = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
  const f = k.requestExecute({ code, store_history: false });
  let out = "";
  f.onIOPub = (msg) => { if (msg.header.msg_type === "stream") out += msg.content.text; };
  await f.done;
  return out;
}"""


SLEEPING_CELL = """(seconds) => {
  const k = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
  window.__sleeping = k.requestExecute({ code: `import time; time.sleep(${seconds})`, store_history: false }).done
    .then(() => true);
}"""


def _cpu_s(pid: int, tid: int | None = None) -> float:
    """CPU seconds (user + system) of a process, or of one of its threads, from /proc."""
    stat = Path(f"/proc/{pid}" + (f"/task/{tid}" if tid is not None else "") + "/stat").read_text()
    fields = stat[stat.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class LiveRows:
    """Appends ``rate`` rows of every metric per second to a run, from a thread, until stopped."""

    def __init__(self, store: Path, run: str, names: list[str], first: int, rate: float = 2.0) -> None:
        import threading

        self.store, self.run, self.names, self.step, self.rate = store, run, names, first, rate
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        started, written = time.monotonic(), 0
        while not self.stop_event.is_set():
            write_rows(self.store, self.run, self.names, range(self.step, self.step + 1), chunk=f"live-{self.step}")
            self.step += 1
            written += 1
            self.stop_event.wait(max(0.0, started + written / self.rate - time.monotonic()))

    def __enter__(self) -> LiveRows:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop_event.set()
        self.thread.join(timeout=60)


def wide_pane(browser, lab, work: Path, width: int, steady: float, bundle: Path | None = None,
              cpu_profile: bool = False) -> dict:
    """One live run of ``width`` metrics in a pane (``bundle``: another build's pane.js): module docstring, item 3."""
    import httpx

    run = f"wide-{width}" + ("-base" if bundle else "")
    store = work / f"store-{run}"
    names = wide_metric_names(width)
    built = time.monotonic()
    write_rows(store, run, names, range(20))
    built = time.monotonic() - built
    log = RequestLog(create_app(store, token=TOKEN))
    page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    cdp = page.context.new_cdp_session(page)
    cdp.send("Performance.enable")
    with ServerThread(log) as server, LiveRows(store, run, names, 20) as live:
        portal = f"http://127.0.0.1:{server.port}"
        (lab.root_dir / f"{run}.ipynb").write_text(json.dumps(notebook(run, portal, "proj", bundle=bundle)),
                                                   encoding="utf-8")
        open_notebook(page, lab, f"{run}.ipynb")
        page.evaluate(WIDE_MARKS)
        run_cell(page, 0)
        page.wait_for_function("() => window.__firstDraw !== null", timeout=300_000)
        first = page.evaluate("() => window.__firstDraw - window.__t0")
        first_abs = page.evaluate("() => window.__firstDraw")
        # The kernel's process and its poller thread, read from /proc outside the kernel (a sleeping cell below
        # would hold any in-kernel query back).
        kpid, tid = map(int, page.evaluate(
            KERNEL, "import os as _os; print(_os.getpid(), pane._poller.thread.native_id)").split())
        cpu0 = _cpu_s(kpid), _cpu_s(kpid, tid)
        loss0, rows0 = loss_points(page, "loss"), live.step
        t0 = time.monotonic()
        if cpu_profile:  # where the page's main thread spends the window (Chrome's sampling profiler)
            cdp.send("Profiler.enable")
            cdp.send("Profiler.start")
        # Another cell runs (sleeps) for the whole window: the pane must keep drawing meanwhile.
        page.evaluate(SLEEPING_CELL, steady)
        page.wait_for_timeout(steady * 1000 / 2)
        t_half = time.monotonic()
        page.wait_for_timeout(steady * 1000 / 2)
        t1 = time.monotonic()
        cpu1 = _cpu_s(kpid), _cpu_s(kpid, tid)
        profile = _top_self_time(cdp.send("Profiler.stop")["profile"]) if cpu_profile else None
        loss1, rows1 = loss_points(page, "loss"), live.step
        page.evaluate("() => window.__sleeping")  # the sleeping cell is done before the kernel is asked again
        metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
        pane = page.evaluate("""() => ({ nodes: document.querySelectorAll('.tau-pane *').length,
            plots: document.querySelectorAll('.tau-pane-metric .tau-pane-plot').length,
            visible: document.querySelectorAll('.tau-pane .js-plotly-plot').length })""")
        long = page.evaluate("() => window.__long.filter((e) => e.at >= window.__firstDraw)")
        requests_steady = log.count(since=t_half) / (t1 - t_half)
        requests_total = log.count(since=t0) / (t1 - t0)
        with log.lock:
            by_path: dict[str, int] = {}
            for t, path, _ in log.entries:
                if t >= t_half:
                    key = path.rsplit("/", 1)[-1]
                    by_path[key] = by_path.get(key, 0) + 1
        page.evaluate(KERNEL, "pane.close()")
    for k in httpx.get(f"{lab.base_url}/api/kernels", timeout=10).json():
        httpx.delete(f"{lab.base_url}/api/kernels/{k['id']}", timeout=30)
    page.context.close()
    over = [e["ms"] for e in long if e["ms"] > 100]
    return {"metrics": width, "code": "baseline" if bundle else "this branch",
            "store_rows_written_s": round(built, 1), "first_loss_draw_ms": round(first),
            "long_tasks_over_100ms_after_first_draw": len(over), "long_task_max_ms": round(max(over, default=0)),
            "long_task_total_ms": round(sum(over)),
            "long_tasks_over_100ms_at": [[round(e["at"] - first_abs), round(e["ms"])] for e in long if e["ms"] > 100],
            "dom_nodes_page": int(metrics.get("Nodes", 0)),
            "dom_nodes_pane": pane["nodes"], "js_heap_mib": round(metrics.get("JSHeapUsedSize", 0) / 2**20, 1),
            "plots": pane["plots"], "plots_drawn": pane["visible"],
            "portal_requests_per_s_steady": round(requests_steady, 1),
            "portal_requests_per_s_window": round(requests_total, 1),
            "portal_requests_steady_by_route": by_path,
            "kernel_cpu_percent": round(100 * (cpu1[0] - cpu0[0]) / (t1 - t0), 1),
            "poller_thread_cpu_percent": round(100 * (cpu1[1] - cpu0[1]) / (t1 - t0), 1),
            "loss_points_growth_in_window": loss1 - loss0, "rows_appended_in_window": rows1 - rows0,
            "steady_seconds": steady, "page_cpu_top_self_ms": profile}


def _top_self_time(profile: dict, top: int = 12) -> list[tuple[str, float]]:
    """The functions with the most self time in a CDP CPU profile, ``name (script:line)`` → ms."""
    times = profile.get("timeDeltas") or []
    by_node = {n["id"]: n for n in profile["nodes"]}
    self_ms: dict[str, float] = {}
    for node_id, delta in zip(profile.get("samples") or [], [*times[1:], 0], strict=False):
        frame = by_node[node_id]["callFrame"]
        name = f"{frame['functionName'] or '(anonymous)'} ({frame['url'].rsplit('/', 1)[-1]}:{frame['lineNumber']})"
        self_ms[name] = self_ms.get(name, 0.0) + delta / 1000
    # Forced layouts: who asked for them (the caller of getBoundingClientRect, two frames up).
    parent = {c: n["id"] for n in profile["nodes"] for c in n.get("children", ())}

    def label(node_id: int) -> str:
        frame = by_node[node_id]["callFrame"]
        return f"{frame['functionName'] or '(anonymous)'} ({frame['url'].rsplit('/', 1)[-1]}:{frame['lineNumber']})"

    for node_id, delta in zip(profile.get("samples") or [], [*times[1:], 0], strict=False):
        if by_node[node_id]["callFrame"]["functionName"] == "getBoundingClientRect":
            up = [label(a) for a in (parent.get(node_id), parent.get(parent.get(node_id, -1), None)) if a in by_node]
            key = "layout asked by " + " <- ".join(up)
            self_ms[key] = self_ms.get(key, 0.0) + delta / 1000
    return [(k, round(v, 1)) for k, v in sorted(self_ms.items(), key=lambda kv: -kv[1])[:top]]


def _print_pane(r: dict, steady: float) -> None:
    print(f"W={r['metrics']:>6} ({r['code']}): first loss point {r['first_loss_draw_ms']} ms; long tasks > 100 ms "
          f"after it {r['long_tasks_over_100ms_after_first_draw']} (max {r['long_task_max_ms']} ms, "
          f"{r['long_task_total_ms']} ms in all; [ms after it, ms long]: {r['long_tasks_over_100ms_at']}); "
          f"DOM nodes {r['dom_nodes_page']} (pane {r['dom_nodes_pane']}); "
          f"JS heap {r['js_heap_mib']} MiB; plots {r['plots']} ({r['plots_drawn']} drawn); Portal "
          f"{r['portal_requests_per_s_steady']} requests/s steady from this one pane "
          f"({r['portal_requests_steady_by_route']}); kernel CPU {r['kernel_cpu_percent']} % of a core (poller "
          f"thread {r['poller_thread_cpu_percent']} %); loss +{r['loss_points_growth_in_window']} points in "
          f"{steady:g} s while another cell slept (+{r['rows_appended_in_window']} rows written); load "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)


def wide_targets(results: dict) -> list[str]:
    """Issue 20's targets, met or not, from this run's figures (this branch's browser code only)."""
    panes = [r for r in results["panes"] if r["code"] == "this branch"]
    base = next((r["first_loss_draw_ms"] for r in panes if r["metrics"] == 20), None)
    lines = []

    def say(ok: bool, text: str) -> None:
        lines.append(f"{'met    ' if ok else 'NOT met'} {text}")

    for r in panes:
        w = f"W={r['metrics']}:"
        if base is not None and r["metrics"] != 20:
            ratio = r["first_loss_draw_ms"] / base
            say(ratio <= 1.2, f"{w} first loss point {r['first_loss_draw_ms']} ms = {ratio:.2f}x W=20's (<= 1.2x)")
        say(r["long_tasks_over_100ms_after_first_draw"] == 0,
            f"{w} {r['long_tasks_over_100ms_after_first_draw']} long tasks > 100 ms after the first draw "
            f"(longest {r['long_task_max_ms']} ms; target none)")
        say(r["portal_requests_per_s_steady"] <= 5,
            f"{w} {r['portal_requests_per_s_steady']} Portal requests/s from the pane in steady state (<= 5)")
        say(r["kernel_cpu_percent"] <= 3, f"{w} kernel CPU {r['kernel_cpu_percent']} % of a core (poller thread "
            f"{r['poller_thread_cpu_percent']} %; <= 3 %)")
        say(r["loss_points_growth_in_window"] > 0,
            f"{w} loss +{r['loss_points_growth_in_window']} points while another cell slept "
            f"(+{r['rows_appended_in_window']} rows written)")
    for s in results["stellar"]:
        if s["code"] == "this branch" and s["metrics"] >= 10_000:
            say(s["ready_s"] < 2, f"Stellar run page W={s['metrics']}: ready in {s['ready_s']} s (< 2 s)")
            say(s["portal_rss_peak_mib"] * 2**20 < 300e6,
                f"Stellar run page W={s['metrics']}: Portal RSS peak {s['portal_rss_peak_mib']} MiB (< 300 MB)")
    return lines


def wide_main(widths: list[int], steady: float, baseline: Path | None, baseline_max: int,
              cpu_profile: bool = False) -> None:
    """``baseline``: another checkout's built ``taunotebook/static`` (its pane.js and Stellar pages), measured
    in the same run for the widths up to ``baseline_max``."""
    print(f"load average at the start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    results: dict = {"panes": [], "stellar": []}
    with tempfile.TemporaryDirectory(prefix="bench-pane-wide-") as tmp:
        work = Path(tmp)
        lab_gen = start_jupyter(work / "lab", {"TAU_PORTAL_TOKEN": TOKEN})
        lab = next(lab_gen)
        try:
            with sync_playwright() as p:
                chromium = os.environ.get("TAU_CHROMIUM") or shutil.which("chromium")
                browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
                for width in widths:
                    results["panes"].append(r := wide_pane(browser, lab, work, width, steady, cpu_profile=cpu_profile))
                    _print_pane(r, steady)
                    for name, ms in r["page_cpu_top_self_ms"] or []:
                        print(f"    {ms:>8.1f} ms self  {name}")
                    if baseline is not None and width <= baseline_max:
                        results["panes"].append(r := wide_pane(browser, lab, work, width, steady,
                                                               bundle=baseline / "pane.js"))
                        _print_pane(r, steady)
                for width in sorted({max(widths), *(w for w in widths if baseline and w <= baseline_max)},
                                    reverse=True):
                    results["stellar"].append(s := stellar_wide(browser, work, width))
                    print_stellar(s)
                    if baseline is not None and width <= baseline_max:
                        package = baseline_package(work, baseline)
                        results["stellar"].append(s := stellar_wide(browser, work, width, package, timeout_s=240))
                        print_stellar(s)
                browser.close()
        finally:
            for _ in lab_gen:
                pass
    results["targets"] = wide_targets(results)
    for line in results["targets"]:
        print(line)
    print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    results["loadavg"] = os.getloadavg()
    out = ROOT / "bench" / "out"
    out.mkdir(parents=True, exist_ok=True)
    (out / "pane_wide.json").write_text(json.dumps(results, indent=2) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--points", type=int, default=250)
    parser.add_argument("--rate", type=float, default=20.0)
    parser.add_argument("--append-seconds", type=float, default=20.0)
    parser.add_argument("--metrics", type=int, nargs="+", metavar="W",
                        help="instead: live runs of W metrics each in a pane, then the widest one's Stellar page")
    parser.add_argument("--steady-seconds", type=float, default=20.0,
                        help="with --metrics: how long each pane is watched after its first draw")
    parser.add_argument("--baseline-static", type=Path, metavar="DIR",
                        help="with --metrics: another checkout's built taunotebook/static, measured in the same run")
    parser.add_argument("--baseline-max-metrics", type=int, default=1000, metavar="W",
                        help="with --baseline-static: measure the baseline only up to this width (default 1000)")
    parser.add_argument("--cpu-profile", action="store_true",
                        help="with --metrics: profile the page main thread over each window; print the top self times")
    args = parser.parse_args()
    if args.metrics:
        if min(args.metrics) < 8:
            parser.error(f"--metrics: each W must be at least 8, got {min(args.metrics)}")
        if args.baseline_static is not None and not (args.baseline_static / "pane.js").is_file():
            parser.error(f"--baseline-static: {args.baseline_static} holds no pane.js (build that checkout's js)")
        wide_main(args.metrics, args.steady_seconds, args.baseline_static, args.baseline_max_metrics,
                  args.cpu_profile)
        return
    print(f"load average at the start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory(prefix="bench-pane-") as tmp:
        work = Path(tmp)
        store = work / "store"
        open_store(store, create=True).close()
        with ServerThread(create_app(store, token=TOKEN)) as server:
            portal = f"http://127.0.0.1:{server.port}"
            lab_gen = start_jupyter(work / "lab", {"TAU_PORTAL_TOKEN": TOKEN, "TAU_PORTAL_URL": portal,
                                               "TAU_STORE": str(store)})
            lab = next(lab_gen)
            try:
                with sync_playwright() as p:
                    chromium = os.environ.get("TAU_CHROMIUM") or shutil.which("chromium")
                    browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
                    page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
                    lat = latency(page, lab, store, portal, work, args.points, args.rate)
                    print(f"write → drawn over {lat['measured']} rows at {args.rate:g}/s: p50 {lat['p50_ms']:.0f} ms, "
                          f"p95 {lat['p95_ms']:.0f} ms, max {lat['max_ms']:.0f} ms "
                          f"({lat['chunks_drawn']} chunks drawn)")
                    page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
                    big = million(page, lab, work, args.append_seconds)
                    print(f"\n1M-point metric: first draw {big['first_draw_ms']:.0f} ms after the cell started "
                          f"(pane view up at {big['view_rendered_ms']:.0f} ms; {big['first_read_points']} points "
                          "in the reduced first read)")
                    for name, ms in big["timeline_ms"].items():
                        print(f"  {name:<28} {ms:>8.0f} ms")
                    print(f"appending {big['appended']} points at 100/s: 50 ms probe late p50 "
                          f"{big['probe_late_p50_ms']:.1f} ms, p95 {big['probe_late_p95_ms']:.1f} ms, max "
                          f"{big['probe_late_max_ms']:.1f} ms; long tasks {big['long_tasks']} "
                          f"(max {big['long_task_max_ms']:.0f} ms)")
                    browser.close()
            finally:
                for _ in lab_gen:
                    pass
    sizes = bundle_sizes()
    print("\nbundles: " + ", ".join(f"{name} {size / 1e6:.2f} MB ({gz / 1e6:.2f} MB gzipped)"
                                    for name, (size, gz) in sizes.items()))
    print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    out = ROOT / "bench" / "out"
    out.mkdir(parents=True, exist_ok=True)
    (out / "pane.json").write_text(json.dumps({"latency": lat, "million": big, "bundles": sizes,
                                               "loadavg": os.getloadavg()}, indent=2) + "\n")


def bundle_sizes() -> dict[str, tuple[int, int]]:
    """Bytes of each built browser file the pane or the Stellar pages load, raw and gzipped."""
    static = ROOT / "taunotebook" / "static"
    return {str(f.relative_to(static)): (f.stat().st_size, len(gzip.compress(f.read_bytes(), 6)))
            for f in sorted(static.rglob("*.js"))}


if __name__ == "__main__":
    main()
