"""Which Jupyter server a kernel belongs to: read from that server's info file, without importing the server."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from taunotebook.portal.jupyter_proxy import jupyter_base_url


@pytest.fixture
def kernel_of(monkeypatch, tmp_path):
    """A kernel's environment: the parent server's pid, Jupyter's runtime directory, no JupyterHub."""
    monkeypatch.delenv("JUPYTERHUB_SERVICE_PREFIX", raising=False)
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path))

    def server(pid: int, info: dict | str | None) -> None:
        monkeypatch.setenv("JPY_PARENT_PID", str(pid))
        if info is not None:
            text = info if isinstance(info, str) else json.dumps(info)
            (tmp_path / f"jpserver-{pid}.json").write_text(text, encoding="utf-8")

    return server


def test_the_parent_servers_base_url_is_read_from_its_info_file(kernel_of):
    kernel_of(4242, {"pid": 4242, "base_url": "/user/ada", "port": 8888})
    assert jupyter_base_url() == "/user/ada/"


def test_no_info_file_means_not_inside_jupyter(kernel_of):
    kernel_of(4243, None)
    assert jupyter_base_url() is None


@pytest.mark.parametrize("info", ["{not json", {"pid": 1, "base_url": "/other/"}, "[1, 2]"])
def test_an_unreadable_or_foreign_info_file_is_ignored(kernel_of, info):
    kernel_of(4244, info)
    assert jupyter_base_url() is None


def test_finding_the_server_does_not_import_jupyter_server(tmp_path):
    # Importing jupyter_server.serverapp builds jsonschema's URI grammars: seconds before a pane could draw.
    (tmp_path / "jpserver-77.json").write_text(json.dumps({"pid": 77, "base_url": "/"}), encoding="utf-8")
    code = ("import sys\nfrom taunotebook.portal.jupyter_proxy import jupyter_base_url\n"
            "print(jupyter_base_url(), 'jupyter_server.serverapp' in sys.modules)")
    env = {"JPY_PARENT_PID": "77", "JUPYTER_RUNTIME_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.split() == ["/", "False"]
