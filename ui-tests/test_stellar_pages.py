"""The Stellar pages in headless Chromium against the real Portal, and the Portal behind a real Jupyter server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from playwright.sync_api import Page

from fixtures.browser import open_ready, screenshot
from fixtures.jupyter import JupyterServer, start_jupyter
from fixtures.portal import LOSS_POINTS, PortalServer
from taunotebook.portal import jupyter_proxy
from taunotebook.portal.jupyter_proxy import setup_tau_portal, stellar_link
from taunotebook.portal.views import pages

# -- helpers ---------------------------------------------------------------------------------------


def api_json(server: PortalServer, path: str, **params) -> dict:
    response = httpx.get(f"{server.base_url}/api/v2/stellar/{path}", params=params,
                         headers={"Authorization": f"Bearer {server.token}"}, timeout=30)
    response.raise_for_status()
    return response.json()


def chart(page: Page, metric: str):
    return page.locator(f'section.stellar-chart[data-metric="{metric}"]')


def plotted(page: Page, metric: str) -> list[dict]:
    """The traces plotly holds for a chart: role, run, and the x/y it drew (non-finite y as None)."""
    return page.evaluate(
        """(metric) => {
            const section = document.querySelector(`section.stellar-chart[data-metric="${metric}"]`);
            const gd = section.querySelector(".stellar-plot");
            return gd.data.map((t) => ({role: t.meta.role, run: t.meta.runId, name: t.name,
                                        x: Array.from(t.x, (v) => (v instanceof Date ? v.getTime() : v)),
                                        y: Array.from(t.y)}));
        }""",
        metric,
    )


def series_requests(page: Page, metric: str) -> list[dict]:
    return page.evaluate(
        """(metric) => window.__stellar.requests
              .filter((r) => r.path.endsWith('/series') && r.query.metric === metric)""",
        metric,
    )


def tensorboard_smoothing(values: list[float], weight: float) -> list[float]:
    """TensorBoard's classic debiased EMA, written out independently of the page's JavaScript."""
    if all(v == values[0] for v in values):
        return list(values)
    last, num_accum, out = 0.0, 0, []
    for v in values:
        last = last * weight + (1 - weight) * v
        num_accum += 1
        out.append(last / (1 - weight**num_accum))
    return out


def url(server: PortalServer, path: str) -> str:
    sep = "&" if "?" in path else "?"
    return f"{server.base_url}{path}{sep}token={server.token}"


# -- one run ---------------------------------------------------------------------------------------


def test_a_small_metric_is_drawn_point_for_point(page: Page, portal_server: PortalServer):
    open_ready(page, url(portal_server, "/stellar?target=run-a&project=proj"))
    acc = chart(page, "eval/acc")
    expected = api_json(portal_server, "runs/run-a/series", target="run-a", metric="eval/acc", project="proj")

    assert acc.get_attribute("data-state") == "ready"
    assert int(acc.get_attribute("data-points")) == expected["returned_points"] == 50
    raw = [t for t in plotted(page, "eval/acc") if t["role"] == "raw"]
    assert len(raw) == 1
    assert raw[0]["x"] == [p["step"] for p in expected["points"]]
    assert raw[0]["y"] == [p["value"] for p in expected["points"]]
    assert "all 50 points" in acc.inner_text()
    assert page.console_errors == []
    screenshot(page, "run-page")


def test_the_run_card_shows_state_and_metadata(page: Page, portal_server: PortalServer):
    open_ready(page, url(portal_server, "/stellar?target=run-a&project=proj"))
    card = page.locator('section.stellar-run[data-run-id="run-a"]')
    text = card.inner_text()

    assert card.locator(".stellar-state").inner_text() == "succeeded"
    for expected in ("proj", "exp-1", "g1", "tau_workspace=default"):
        assert expected in text


def test_loss_is_the_first_chart(page: Page, portal_server: PortalServer):
    open_ready(page, url(portal_server, "/stellar?target=run-a&project=proj"))
    metrics = page.locator("section.stellar-chart").evaluate_all("(els) => els.map((e) => e.dataset.metric)")

    assert metrics[0] == "train/loss"
    # tau/run_status is the run's state, said in words on its card (as the pane does), never a chart.
    assert set(metrics) == {"train/loss", "eval/acc"}
    assert page.locator('section.stellar-run[data-run-id="run-a"] .stellar-state').inner_text() == "succeeded"


def test_a_large_metric_is_drawn_reduced_within_the_width_based_budget(page: Page, portal_server: PortalServer):
    open_ready(page, url(portal_server, "/stellar?target=run-a&project=proj"))
    loss = chart(page, "train/loss")
    (request,) = series_requests(page, "train/loss")
    max_points = int(request["query"]["max_points"])
    expected = api_json(portal_server, "runs/run-a/series", target="run-a", metric="train/loss", project="proj",
                        max_points=max_points)
    drawn = int(loss.get_attribute("data-points"))

    assert max_points <= 12000
    assert drawn == expected["returned_points"] <= max_points < LOSS_POINTS
    assert expected["source_points"] == LOSS_POINTS
    assert f"of {LOSS_POINTS:,} points, reduced" in loss.inner_text()


def test_zoom_refetches_the_visible_steps_at_full_fidelity(page: Page, portal_server: PortalServer):
    open_ready(page, url(portal_server, "/stellar?target=run-a&project=proj"))
    before = [x for x in plotted(page, "train/loss")[0]["x"] if 5000 <= x <= 6000]

    page.evaluate("""() => Plotly.relayout(document.querySelector('section[data-metric="train/loss"] .stellar-plot'),
                                           {'xaxis.range': [5000, 6000]})""")
    page.wait_for_selector('section[data-metric="train/loss"][data-fetches="2"][data-state="ready"]')
    after = [x for x in plotted(page, "train/loss")[0]["x"] if 5000 <= x <= 6000]
    last = series_requests(page, "train/loss")[-1]

    assert (int(last["query"]["start_step"]), int(last["query"]["end_step"])) == (5000, 6000)
    assert after == list(range(5000, 6001))  # every step of the window, none reduced away
    assert len(after) > len(before)
    assert "steps 5,000–6,000, all 1,001 points" in chart(page, "train/loss").inner_text()
    screenshot(page, "zoomed")


def test_resetting_the_zoom_fetches_the_whole_run_again(page: Page, portal_server: PortalServer):
    open_ready(page, url(portal_server, "/stellar?target=run-a&project=proj"))
    gd = "document.querySelector('section[data-metric=\"train/loss\"] .stellar-plot')"
    page.evaluate(f"() => Plotly.relayout({gd}, {{'xaxis.range': [100, 200]}})")
    page.wait_for_selector('section[data-metric="train/loss"][data-fetches="2"]')
    page.evaluate(f"() => Plotly.relayout({gd}, {{'xaxis.autorange': true}})")
    page.wait_for_selector('section[data-metric="train/loss"][data-fetches="3"][data-view="full"]')

    last = series_requests(page, "train/loss")[-1]
    assert "start_step" not in last["query"]
    assert plotted(page, "train/loss")[0]["x"][-1] == LOSS_POINTS - 1


# -- controls --------------------------------------------------------------------------------------


def test_smoothing_is_tensorboards_debiased_ema(page: Page, portal_server: PortalServer):
    open_ready(page, url(portal_server, "/stellar?target=run-a&project=proj"))
    page.locator("#stellar-smoothing").fill("0.6")
    traces = {t["role"]: t for t in plotted(page, "eval/acc")}
    values = [p["value"] for p in api_json(portal_server, "runs/run-a/series", target="run-a",
                                           metric="eval/acc", project="proj")["points"]]

    assert set(traces) == {"raw", "smoothed"}
    assert traces["raw"]["y"] == values
    assert traces["smoothed"]["y"] == pytest.approx(tensorboard_smoothing(values, 0.6), rel=1e-12)
    assert traces["smoothed"]["y"] != values


def test_log_y_and_wall_time_axis_toggles(page: Page, portal_server: PortalServer):
    open_ready(page, url(portal_server, "/stellar?target=run-a&project=proj"))
    gd = "document.querySelector('section[data-metric=\"eval/acc\"] .stellar-plot')"
    page.locator("#stellar-log-y").check()
    page.locator("#stellar-x-axis").select_option("wall")
    layout = page.evaluate(f"() => ({{x: {gd}.layout.xaxis.type, y: {gd}.layout.yaxis.type}})")
    raw = next(t for t in plotted(page, "eval/acc") if t["role"] == "raw")

    assert layout == {"x": "date", "y": "log"}
    # The fixture writes step s at BASE + s ms: wall time 0.49 s after step 0 at step 490.
    assert raw["x"][-1] - raw["x"][0] == pytest.approx(490, abs=1)
    assert "≤ 0 not shown on the log axis" in chart(page, "eval/acc").inner_text()  # acc starts at 0
    screenshot(page, "log-wall-time")


# -- several runs and non-finite values ------------------------------------------------------------


def test_compared_runs_are_overlaid_one_trace_each(page: Page, portal_server: PortalServer):
    open_ready(page, url(portal_server, "/stellar?target=run-a&target=run-b&project=proj"))
    loss = chart(page, "train/loss")
    raw = [t for t in plotted(page, "train/loss") if t["role"] == "raw"]

    assert loss.get_attribute("data-traces") == "2"
    assert [t["run"] for t in raw] == ["run-a", "run-b"]
    assert page.locator("section.stellar-run").count() == 2
    screenshot(page, "compare")


def test_compare_parameter_adds_runs_to_the_spa_alias(page: Page, portal_server: PortalServer):
    open_ready(page, url(portal_server, "/stellar/runs/run-a?compare=run-b&project=proj"))

    assert chart(page, "train/loss").get_attribute("data-traces") == "2"


def test_non_finite_points_are_marked_and_counted_in_words(page: Page, portal_server: PortalServer):
    open_ready(page, url(portal_server, "/stellar?target=run-b&project=proj"))
    loss = chart(page, "train/loss")
    marks = [t for t in plotted(page, "train/loss") if t["role"] == "non-finite"]
    raw = next(t for t in plotted(page, "train/loss") if t["role"] == "raw")

    assert loss.get_attribute("data-non-finite") == "2"
    assert "2 non-finite values (NaN at step 3, +Inf at step 7)" in loss.locator(".stellar-nonfinite").inner_text()
    assert len(marks) == 1 and marks[0]["x"] == [3, 7]
    assert 3 not in raw["x"] and 7 not in raw["x"]
    assert raw["y"][raw["x"].index(5)] == 0.55  # last write wins
    screenshot(page, "non-finite")


# -- errors in words -------------------------------------------------------------------------------


def test_a_wrong_token_is_refused_with_the_message_in_words(page: Page, portal_server: PortalServer):
    response = page.goto(f"{portal_server.base_url}/stellar?target=run-a&token=wrong")

    assert response.status == 401
    text = page.locator("body").inner_text()
    assert "This Portal needs its token" in text and "taunotebook portal" in text
    assert "{" not in text  # words, not a JSON envelope
    screenshot(page, "wrong-token")


def test_a_lost_session_shows_the_401_message_in_the_chart(page: Page, portal_server: PortalServer):
    open_ready(page, url(portal_server, "/stellar?target=run-a&project=proj"))
    page.context.clear_cookies()
    page.evaluate("""() => Plotly.relayout(document.querySelector('section[data-metric="eval/acc"] .stellar-plot'),
                                           {'xaxis.range': [10, 20]})""")
    page.wait_for_selector('section[data-metric="eval/acc"][data-fetches="2"]')
    error = chart(page, "eval/acc").locator(".stellar-error")

    assert "HTTP 401 UNAUTHORIZED" in error.inner_text()
    assert "a token is required" in error.inner_text()
    assert chart(page, "eval/acc").get_attribute("data-state") == "error"
    screenshot(page, "lost-session")


def test_an_unknown_run_is_reported_not_drawn_empty(page: Page, portal_server: PortalServer):
    open_ready(page, url(portal_server, "/stellar?target=no-such-run&project=proj"), state="error")
    error = page.locator('#stellar-errors .stellar-error[data-status="404"]')

    assert "Run no-such-run could not be loaded: requested experiment data was not found" in error.inner_text()
    assert page.locator("section.stellar-chart").count() == 0


def test_another_workspaces_run_is_not_found(page: Page, portal_server: PortalServer):
    open_ready(page, url(portal_server, "/stellar?target=run-other&project=proj"), state="error")

    assert page.locator('.stellar-error[data-status="404"]').count() == 1
    assert page.locator("section.stellar-chart").count() == 0


# -- runs listing ----------------------------------------------------------------------------------


def test_the_runs_listing_shows_state_and_metric_summaries(page: Page, portal_server: PortalServer):
    open_ready(page, url(portal_server, "/stellar/runs"))
    keys = page.locator("#stellar-run-table thead th[data-column]").evaluate_all(
        "(ths) => ths.map((th) => th.dataset.column)")
    cells = page.locator('tr.stellar-run-row[data-run-id="run-b"] td').all_inner_texts()[1:]  # after the checkbox
    b = dict(zip(keys, cells, strict=True))

    assert page.locator('tr.stellar-run-row[data-run-id="run-a"] .stellar-state').inner_text() == "succeeded"
    assert page.locator('tr.stellar-run-row[data-run-id="run-other"]').count() == 0
    assert page.locator("#stellar-metric").input_value() == "train/loss"
    # The loss's latest (step 9), min and max over its finite values; its two non-finite points counted.
    assert [b[k] for k in ("metric:latest", "metric:min", "metric:max", "non_finite")] == ["0.9", "0", "0.9", "2"]
    assert page.locator('tr.stellar-run-row[data-run-id="run-b"] td[title="at step 9"]').count() == 1
    screenshot(page, "runs-listing")


def test_selected_runs_open_compared(page: Page, portal_server: PortalServer):
    open_ready(page, url(portal_server, "/"))
    page.locator('tr.stellar-run-row[data-run-id="run-a"] input[type=checkbox]').check()
    page.locator('tr.stellar-run-row[data-run-id="run-b"] input[type=checkbox]').check()
    page.locator("#stellar-compare").click()
    page.wait_for_selector("#stellar[data-state=ready]")

    opened = urlsplit(page.url)
    assert opened.path == "/stellar"
    assert sorted(parse_qs(opened.query)["target"]) == ["run-a", "run-b"]
    assert parse_qs(opened.query)["project"] == ["proj"]
    assert chart(page, "train/loss").get_attribute("data-traces") == "2"


# -- assets ----------------------------------------------------------------------------------------


def test_the_page_bundle_is_served_from_the_package(portal_server: PortalServer):
    response = httpx.get(f"{portal_server.base_url}/static/stellar/stellar.js",
                         headers={"Authorization": f"Bearer {portal_server.token}"})
    built = Path(pages.__file__).resolve().parents[2] / "static" / "stellar" / "stellar.js"

    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/javascript")
    assert response.content == built.read_bytes()


def test_a_missing_page_build_is_explained_in_words(page: Page, portal_server: PortalServer, tmp_path,
                                                    monkeypatch):
    monkeypatch.setattr(pages, "_BUILT_DIR", tmp_path / "not-built")
    open_ready(page, url(portal_server, "/stellar?target=run-a&project=proj"), state="error")

    notice = page.locator("#stellar-asset-missing").inner_text()
    assert "static/stellar/stellar.js is missing" in notice
    assert "npm ci --prefix js && npm run build --prefix js" in notice
    assert page.locator("#stellar-loading").count() == 0
    asset = httpx.get(f"{portal_server.base_url}/static/stellar/stellar.js",
                      headers={"Authorization": f"Bearer {portal_server.token}"})
    assert asset.status_code == 404 and "npm run build --prefix js" in asset.text


@pytest.mark.parametrize("name", ["../pages.py", "..%2Fpages.py", ".hidden", "a/b.js"])
def test_assets_outside_the_asset_directory_are_not_served(portal_server: PortalServer, name: str):
    response = httpx.get(f"{portal_server.base_url}/static/stellar/{name}",
                         headers={"Authorization": f"Bearer {portal_server.token}"})

    assert response.status_code == 404


# -- Jupyter ---------------------------------------------------------------------------------------


def test_the_proxy_config_keeps_the_token_off_the_command_line():
    config = setup_tau_portal()
    token = config["environment"][jupyter_proxy.ENV_PROXY_TOKEN]

    assert len(token) >= 32
    assert not any(token in part for part in config["command"])
    assert config["request_headers_override"] == {"Authorization": f"Bearer {token}", "Host": "127.0.0.1:{port}"}
    assert config["absolute_url"] is False
    assert config["launcher_entry"] == {"enabled": False}
    assert "{port}" in config["command"]


def test_stellar_link_outside_jupyter_points_at_the_portal(monkeypatch):
    for name in ("JUPYTERHUB_SERVICE_PREFIX", "JPY_PARENT_PID"):
        monkeypatch.delenv(name, raising=False)

    link = stellar_link("run a", "proj", portal_url="http://127.0.0.1:8765/?token=secret")
    assert link == "http://127.0.0.1:8765/stellar?target=run+a&project=proj"


def test_stellar_link_on_jupyterhub_goes_through_the_proxy(monkeypatch):
    monkeypatch.setenv("JUPYTERHUB_SERVICE_PREFIX", "/user/ada/")

    assert stellar_link("run-a", "proj") == "/user/ada/tau-portal/stellar?target=run-a&project=proj"


@pytest.fixture
def jupyter_server(tmp_path, portal_store) -> Iterator[JupyterServer]:
    """A real ``jupyter server`` on 127.0.0.1 with a base_url and a token, the Portal registered with the proxy."""
    yield from start_jupyter(tmp_path, {"TAU_STORE": str(portal_store)}, "server", base_url="/jbase/",
                             token="jupyter-test-token")


def test_the_portal_is_reachable_through_jupyter_server_proxy_with_jupyters_auth(
        page: Page, jupyter_server, monkeypatch):
    api = f"{jupyter_server.base}tau-portal/api/v2/stellar/runs/run-a?project=proj"
    anonymous = httpx.get(api, timeout=90)
    authorized = httpx.get(api, headers={"Authorization": f"token {jupyter_server.token}"}, timeout=90)

    assert anonymous.status_code in (302, 403)  # Jupyter's auth stops it before the Portal
    assert authorized.status_code == 200, authorized.text
    assert json.loads(authorized.text)["run"]["run_id"] == "run-a"

    # A kernel of that server would build this link: JPY_PARENT_PID is the server's pid.
    monkeypatch.delenv("JUPYTERHUB_SERVICE_PREFIX", raising=False)
    monkeypatch.setenv("JPY_PARENT_PID", str(jupyter_server.pid))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(jupyter_server.runtime_dir))
    link = stellar_link("run-a", "proj")
    assert link == "/jbase/tau-portal/stellar?target=run-a&project=proj"

    page.goto(f"{jupyter_server.base}api/status?token={jupyter_server.token}")  # logs the browser in
    open_ready(page, jupyter_server.origin + link)
    assert int(chart(page, "eval/acc").get_attribute("data-points")) == 50
    assert chart(page, "train/loss").get_attribute("data-non-finite") == "0"
    screenshot(page, "through-jupyter-server-proxy")


# -- runs as one line with a band, and the time axes (issue 21) --------------------------------------


def test_compared_runs_drawn_as_their_mean_with_a_band_say_how_many_runs_and_what_was_left_out(
        page: Page, portal_server: PortalServer):
    open_ready(page, url(portal_server, "/stellar?target=run-a&target=run-b&project=proj"))
    page.locator("#stellar-aggregate").select_option("mean")
    page.wait_for_function("""() => document.querySelector('section[data-metric="train/loss"] .stellar-plot')
                                      .data.some((t) => t.meta.role === 'aggregate')""")
    traces = plotted(page, "train/loss")
    roles = [t["role"] for t in traces]
    center = next(t for t in traces if t["role"] == "aggregate")
    lower = next(t for t in traces if t["role"] == "band-lower")
    upper = next(t for t in traces if t["role"] == "band-upper")
    counts = page.evaluate("""() => document.querySelector('section[data-metric="train/loss"] .stellar-plot')
                                     .data.find((t) => t.meta.role === 'aggregate').text""")

    assert "raw" not in roles  # the runs are the band now, not a line each
    # run-b logged steps 0..9 (NaN at 3, +Inf at 7): both runs count there, run-a alone after.
    assert center["name"] == "train/loss (mean of 2 runs, min–max, 2 non-finite left out)"
    assert counts[0].startswith("2 of 2 runs") and counts[-1].startswith("1 of 2 runs")
    assert all(lo <= c <= hi for lo, c, hi in zip(lower["y"], center["y"], upper["y"], strict=True))
    assert chart(page, "train/loss").get_attribute("data-traces") == "1"
    screenshot(page, "compare-mean-band")

    page.locator("#stellar-band").select_option("std")
    page.wait_for_function("""() => document.querySelector('section[data-metric="train/loss"] .stellar-plot')
                                      .data.find((t) => t.meta.role === 'aggregate').name.includes('±1 std')""")
    page.locator("#stellar-aggregate").select_option("")
    page.wait_for_function("""() => !document.querySelector('section[data-metric="train/loss"] .stellar-plot')
                                      .data.some((t) => t.meta.role === 'aggregate')""")
    assert [t["run"] for t in plotted(page, "train/loss") if t["role"] == "raw"] == ["run-a", "run-b"]


def test_relative_time_starts_at_zero_and_the_axis_is_kept_across_reloads(page: Page, portal_server: PortalServer):
    target = url(portal_server, "/stellar?target=run-a&project=proj")
    open_ready(page, target)
    page.locator("#stellar-x-axis").select_option("relative")
    gd = "document.querySelector('section[data-metric=\"eval/acc\"] .stellar-plot')"
    page.wait_for_function(f"() => {gd}.layout.xaxis.title.text.startsWith('relative time')")
    raw = next(t for t in plotted(page, "eval/acc") if t["role"] == "raw")

    # The fixture writes step s at BASE + s ms: eval/acc's steps 0..490 span 0.49 s from its first point.
    assert raw["x"][0] == 0
    assert raw["x"][-1] == pytest.approx(0.49, abs=1e-3)
    assert page.evaluate(f"() => {gd}.layout.xaxis.title.text") == "relative time (seconds)"

    open_ready(page, target)
    assert page.locator("#stellar-x-axis").input_value() == "relative"
    page.wait_for_function(f"() => {gd}.layout.xaxis.title.text.startsWith('relative time')")
    page.locator("#stellar-x-axis").select_option("step")  # leave the browser's choice as the other tests expect
