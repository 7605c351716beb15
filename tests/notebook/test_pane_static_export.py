"""A notebook with a loss pane, executed by a real kernel and exported with ``jupyter nbconvert --to html``: the
HTML shows the pane's picture and its line of text (no widget front end runs there)."""

from __future__ import annotations

import base64
import io
import re
import subprocess
import sys

import nbformat
import pytest
from PIL import Image

from fixtures.notebook_kernel import KERNEL, notebook
from taunotebook.pane_picture import RUN_COLORS, assign_run_colors
from taunotebook.raster import hex_rgb

pytestmark = pytest.mark.slow


def nbconvert(*args: str, cwd) -> None:
    done = subprocess.run([sys.executable, "-m", "nbconvert", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]


def test_nbconvert_html_of_an_executed_notebook_shows_the_picture_and_the_line(portal_server, tmp_path):
    url = f"{portal_server.base_url}?token={portal_server.token}"
    nb = notebook(
        f"""
        from taunotebook.pane import LossPane
        pane = LossPane("run-a", portal={url!r}, project="proj")
        pane
        """,
        """
        import time
        deadline = time.monotonic() + 120
        while pane.polling or not pane.state:  # until the run's last points are read (it ended long ago)
            assert time.monotonic() < deadline, pane.status
            time.sleep(0.05)
        print(pane.state)
        """,
    )
    path = tmp_path / "pane.ipynb"
    nbformat.write(nb, path)
    nbconvert("--to", "notebook", "--execute", "--inplace", f"--ExecutePreprocessor.kernel_name={KERNEL}",
              path.name, cwd=tmp_path)
    executed = nbformat.read(path, as_version=4)
    outputs = executed.cells[0].outputs
    static = [o for o in outputs if "data-tau-pane-static" in o.get("data", {}).get("text/html", "")]
    assert len(static) == 1, outputs  # one static output, updated in place (by display id), not one per refresh
    line = static[0]["data"]["text/plain"]
    assert line.startswith("loss pane · run run-a · succeeded · train/loss "), line
    assert "eval/acc 0.98 (step 490)" in line

    nbconvert("--to", "html", path.name, cwd=tmp_path)
    page = (tmp_path / "pane.html").read_text(encoding="utf-8")
    assert "loss pane · run run-a · succeeded · train/loss " in page
    images = re.findall(r'data-tau-pane-static="[^"]+"><img alt="[^"]*" src="data:image/png;base64,([A-Za-z0-9+/=]+)"',
                        page)
    assert len(images) == 1
    image = Image.open(io.BytesIO(base64.b64decode(images[0]))).convert("RGB")
    run_rgb = hex_rgb(RUN_COLORS[assign_run_colors(["run-a"])["run-a"]])
    drawn = sum(1 for x in range(image.width) for y in range(image.height) if image.getpixel((x, y)) == run_rgb)
    assert drawn > 200  # the curves (train/loss, eval/acc) in the run's colour
