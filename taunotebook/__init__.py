"""taunotebook: live training-metric panes for Jupyter on top of tau-collector."""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

__all__ = ["LossPane", "SubmittedRun", "__version__", "attach", "histogram", "image", "load_ipython_extension", "log",
           "runs", "submit"]

# The submission API lives in ``submission`` (not a module called ``submit``): importing a submodule sets the
# package attribute of its name, and ``taunotebook.submit`` must stay the function whatever was imported.
_LAZY = {"submit": "submission", "runs": "submission", "SubmittedRun": "submission", "attach": "submission",
         "LossPane": "pane", "log": "job_log", "histogram": "job_log", "image": "job_log"}


def __getattr__(name: str) -> Any:
    # Lazy: `import taunotebook` stays cheap (no IPython, widget or backend imports until used).
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def load_ipython_extension(ip: Any) -> None:
    """``%load_ext taunotebook``: registers ``%%tau_submit``, ``%tau_runs/logs/cancel/pane``."""
    from .magics import load_ipython_extension as load

    load(ip)
