"""``taunotebook export-view``: the link taken apart, the reads keyed as the page keys them, the file's contents."""

from __future__ import annotations

import json
import re

import pytest

from fixtures.portal import PortalServer
from taunotebook import cli
from taunotebook.client.errors import PortalError
from taunotebook.export_view import ExportError, export_view, parse_view_link, read_key, run_ref


def config_of(html: str) -> dict:
    raw = re.search(r'<script type="application/json" id="stellar-config">(.*?)</script>', html, re.S).group(1)
    return json.loads(raw)


def test_the_link_forms_the_page_has():
    link = parse_view_link("http://h:1/user/ada/tau-portal/stellar?target=a,b&compare=c&project=p&token=t&smooth=0.5")
    assert (link.root, link.targets, link.token) == ("http://h:1/user/ada/tau-portal/", ["a", "b", "c"], "t")
    assert ("token", "t") not in link.query and link.get("smooth") == "0.5"
    alias = parse_view_link("http://h/stellar/runs/run%2Fx?compare=b")
    assert (alias.root, alias.targets) == ("http://h/", ["run/x", "b"])


@pytest.mark.parametrize("url, words", [
    ("ftp://h/stellar?target=a", "http(s)"),
    ("http://h/stellar/runs?q=x", "not a Stellar run or compare page"),
    ("http://h/stellar?project=p", "names no run"),
])
def test_a_link_that_is_not_a_view_is_refused_in_words(url, words):
    with pytest.raises(ExportError, match=re.escape(words)):
        parse_view_link(url)


def test_reads_are_keyed_exactly_as_the_pages_readkey_keys_them():
    # The two keys js/shared/export_html.js's readKey gives for these reads (node, printed once).
    assert read_key("api/v2/stellar/runs/run%2Fx%20%C3%BC/series",
                    [("target", "run/x ü"), ("metric", "train/loss"), ("max_points", "3200"), ("project", "p"),
                     ("end_step", "9"), ("start_step", "1"), ("source", "local")]) == (
        '["api/v2/stellar/runs/run/x ü/series",[["end_step","9"],["metric","train/loss"],["start_step","1"],'
        '["target","run/x ü"]]]')
    assert read_key("stellar/data/runs", [("run_id", "b"), ("run_id", "a")]) == (
        '["stellar/data/runs",[["run_id","a"],["run_id","b"]]]')


def test_the_parameters_left_out_of_a_key_are_the_page_s():
    # export_html.js keeps its own UNKEYED set (the page cannot import Python): the two must name the same parameters.
    from pathlib import Path

    from taunotebook.export_view import UNKEYED

    source = (Path(__file__).resolve().parents[1] / "js" / "shared" / "export_html.js").read_text(encoding="utf-8")
    found = re.search(r"^const UNKEYED = new Set\(\[([^\]]*)\]\);$", source, re.M)
    assert found, "export_html.js defines UNKEYED as a Set of string literals"
    assert frozenset(re.findall(r'"([^"]+)"', found.group(1))) == UNKEYED


def test_the_export_holds_the_views_charts_and_zoom_window(portal_server: PortalServer):
    url = (f"{portal_server.base_url}/stellar?target=run-a&target=run-b&project=proj&q=loss"
           f"&zoom.train%2Floss=100..200&token={portal_server.token}")
    html, notes = export_view(url)
    config = config_of(html)
    offline = config["offline"]
    assert offline["metrics"] == ["train/loss"]  # the search matches it alone
    assert "x=step" in offline["query"] and "token" not in offline["query"]
    keys = set(offline["responses"])
    assert read_key("api/v2/stellar/runs/run-a/series", [("target", "run-a"), ("metric", "train/loss")]) in keys
    window = read_key("api/v2/stellar/runs/run-a/series",
                      [("target", "run-a"), ("metric", "train/loss"), ("start_step", "100"), ("end_step", "200")])
    assert [p["step"] for p in offline["responses"][window]["points"]] == list(range(100, 201))
    assert notes == []
    assert "<script src" not in html and "<link" not in html  # nothing to load


def test_a_wrong_token_fails_with_the_portals_words(portal_server: PortalServer, tmp_path, capsys):
    out = tmp_path / "v.html"
    code = cli.main(["export-view", f"{portal_server.base_url}/stellar?target=run-a&token=wrong", "-o", str(out)])
    assert code == 1 and not out.exists()
    assert "401" in capsys.readouterr().err


def test_the_command_writes_the_file(portal_server: PortalServer, tmp_path, capsys):
    out = tmp_path / "v.html"
    code = cli.main(["export-view", f"{portal_server.base_url}/stellar?target=run-b&project=proj", "-o", str(out),
                     "--token", portal_server.token])
    assert code == 0, capsys.readouterr().err
    assert config_of(out.read_text(encoding="utf-8"))["targets"] == ["run-b"]
    assert cli.main(["export-view", "http://h/nope", "-o", str(out)]) == 2


def test_hostile_run_ids_and_script_text_stay_inside_their_elements():
    from taunotebook.export_view import STATIC_DIR, TEMPLATE, export_html

    evil = "</script><img src=x onerror=alert(1)><!--"
    html = export_html({"mode": "runs", "targets": [evil], "offline": {"exportedAt": "2026-01-01T00:00:00.000Z"}},
                       'const s = "</script><b>"; // <!-- x', "a{} </style><script>alert(1)</script>", evil,
                       (STATIC_DIR / TEMPLATE).read_text(encoding="utf-8"))
    assert len(re.findall(r"</script>", html, re.I)) == 2  # the config's and the script's own end tags
    assert len(re.findall(r"</style>", html, re.I)) == 1
    assert "<img" not in html
    assert config_of(html)["targets"] == [evil]


def test_a_run_ref_is_read_as_the_pages_parse_run_ref_reads_it():
    assert [run_ref(k, "page") for k in ("r", "p/r", "a/b/r", "/r", "r/")] == [
        ("r", "page"), ("r", "p"), ("r", "a/b"), ("/r", "page"), ("r", "page")]


def test_runs_of_several_projects_are_exported_each_with_its_project(tmp_path):
    from fixtures.portal import TOKEN, serve
    from tau_collector.expstore import open_store
    from tau_collector.expstore.write.writer import MetricWriter
    from tau_collector.projection.metric_event import new_metric_event

    store = open_store(tmp_path / "store", create=True)
    events = [new_metric_event(project=project, experiment_id="e", run_group_id="g", run_id=run, metric_name="loss",
                               step=step, wall_time=1_760_000_000_000_000_000 + step, value=step * scale,
                               exported_at=0, source="history", tags={})
              for project, run, scale in (("alpha", "shared", 1.0), ("beta", "b-only", 2.0)) for step in range(5)]
    MetricWriter(store).write_chunk("c", events, [], request_hash="h")
    store.close()
    with serve(tmp_path / "store") as server:
        base = f"http://127.0.0.1:{server.port}/stellar"
        html, notes = export_view(f"{base}?target=alpha/shared&compare=beta/b-only&token={TOKEN}")
        offline = config_of(html)["offline"]
        assert config_of(html)["targets"] == ["alpha/shared", "beta/b-only"] and notes == []
        for run, last in (("shared", 4.0), ("b-only", 8.0)):
            series = offline["responses"][read_key(f"api/v2/stellar/runs/{run}/series",
                                                   [("target", run), ("metric", "loss")])]
            assert series["points"][-1]["value"] == last
        assert offline["responses"][read_key("stellar/data/runs", [("run_id", "shared"), ("run_id", "b-only")])]
        # A run named in a project it is not in is not found there.
        with pytest.raises(PortalError, match="not found"):
            export_view(f"{base}?target=beta/shared&token={TOKEN}")


@pytest.mark.parametrize("text, seconds", [("10", 10.0), ("10s", 10.0), ("1m30s", 90.0), ("1.5", 1.5)])
def test_the_timeout_takes_every_duration_form(monkeypatch, tmp_path, text, seconds):
    from taunotebook import export_view as module

    asked = {}
    monkeypatch.setattr(module, "export_view", lambda url, **kw: (asked.update(kw), ("<html>", []))[1])
    assert module.main(["http://h/stellar?target=a", "-o", str(tmp_path / "v.html"), "--timeout", text]) == 0
    assert asked["timeout"] == seconds


def test_a_zero_or_bad_timeout_is_refused_in_words(tmp_path, capsys):
    from taunotebook import export_view as module

    for text, words in (("0", "must be more than 0"), ("soon", "invalid duration 'soon'")):
        with pytest.raises(SystemExit) as exit_:
            module.main(["http://h/stellar?target=a", "-o", str(tmp_path / "v.html"), "--timeout", text])
        err = capsys.readouterr().err
        assert exit_.value.code == 2 and "--timeout" in err and words in err


def test_the_python_export_is_the_pages_export_byte_for_byte():
    # One template (js/shared/export_html.js's EXPORT_TEMPLATE, written by the build beside the bundles), filled
    # the same way on both sides: node's exportHtml and export_html give the same bytes.
    import shutil
    import subprocess
    from pathlib import Path

    from taunotebook.export_view import STATIC_DIR, TEMPLATE, export_html

    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    args = {"config": {"mode": "runs", "targets": ["a</script>", "b @@SCRIPT@@"], "offline": {
                "exportedAt": "2026-01-01T00:00:00.000Z", "responses": {"k": "<x> & $1 $&"}}},
            "script": "console.log('</script> @@CSS@@ $&')", "css": "a{} </style>", "heading": "a</script> vs b"}
    module = Path(__file__).resolve().parents[1] / "js" / "shared" / "export_html.js"
    code = (f"import {{ exportHtml }} from {json.dumps(module.as_uri())};"
            f"process.stdout.write(exportHtml({json.dumps(args)}));")
    from_js = subprocess.run([node, "--input-type=module", "-e", code], capture_output=True, text=True,
                             check=True).stdout
    template = (STATIC_DIR / TEMPLATE).read_text(encoding="utf-8")
    assert export_html(args["config"], args["script"], args["css"], args["heading"], template) == from_js
    assert "@@" not in template.replace("@@TITLE@@", "").replace("@@CSS@@", "").replace("@@CONFIG@@", "").replace(
        "@@HEADING@@", "").replace("@@EXPORTED_AT@@", "").replace("@@SCRIPT@@", "")
