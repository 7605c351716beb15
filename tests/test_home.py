"""``TAU_HOME``: one rule for every part that keeps files there (backends, quickstart, import, the proxied Portal)."""

from __future__ import annotations

from pathlib import Path

from taunotebook import backends, quickstart
from taunotebook.home import tau_home
from taunotebook.portal import jupyter_proxy


def test_tau_home_wins(monkeypatch, tmp_path):
    monkeypatch.setenv("TAU_HOME", str(tmp_path / "th"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert tau_home() == tmp_path / "th"


def test_without_tau_home_the_xdg_data_directory(monkeypatch, tmp_path):
    monkeypatch.delenv("TAU_HOME", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert tau_home() == tmp_path / "xdg" / "tau"


def test_else_the_per_user_data_directory(monkeypatch, tmp_path):
    monkeypatch.delenv("TAU_HOME", raising=False)
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert tau_home() == tmp_path / ".local" / "share" / "tau"


def test_every_part_uses_the_same_rule(monkeypatch, tmp_path):
    monkeypatch.setenv("TAU_HOME", str(tmp_path))
    monkeypatch.delenv(jupyter_proxy.ENV_STORE, raising=False)
    assert backends.tau_home() == quickstart.tau_home() == tmp_path
    assert jupyter_proxy.default_store() == tmp_path / "store"
    monkeypatch.setenv(jupyter_proxy.ENV_STORE, str(tmp_path / "elsewhere"))
    assert jupyter_proxy.default_store() == Path(tmp_path / "elsewhere")
