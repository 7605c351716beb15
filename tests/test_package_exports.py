"""The package's exported names stay what they are whatever submodules were imported."""

from __future__ import annotations

import importlib
import subprocess
import sys


def test_submit_stays_the_function_after_importing_every_submodule() -> None:
    # In a fresh interpreter: this process may have imported the modules in any order already.
    code = (
        "import taunotebook, taunotebook.submission, taunotebook.magics, taunotebook.pane\n"
        "import importlib.util\n"
        "assert importlib.util.find_spec('taunotebook.submit') is None, 'a module shadows the submit function'\n"
        "print(callable(taunotebook.submit), taunotebook.submit.__module__, taunotebook.runs.__module__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["True", "taunotebook.submission", "taunotebook.submission"]


def test_submit_is_the_function_here_too() -> None:
    import taunotebook

    importlib.import_module("taunotebook.submission")
    assert taunotebook.submit is taunotebook.submission.submit
    assert taunotebook.SubmittedRun is taunotebook.submission.SubmittedRun
