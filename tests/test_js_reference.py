"""The smoothing table the JavaScript unit tests check against is what its Python generator computes today."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

GENERATOR = Path(__file__).resolve().parents[1] / "js" / "test" / "reference" / "make_reference.py"


def test_the_committed_smoothing_table_matches_its_generator():
    done = subprocess.run([sys.executable, str(GENERATOR), "--check"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
