"""A local job that logs histograms and images with ``taunotebook.log`` (no TensorBoard, no W&B): read back from the
store through the whole pipeline (wrap, the sidecar's history source, the spool, the store)."""

from __future__ import annotations

import hashlib
import textwrap

import numpy as np

from tau_collector.expstore.read.reader import StoreReader
from taunotebook.job_log import image
from taunotebook.submission import submit

from ..polling import DEADLINE

JOB = """\
import numpy as np
from taunotebook import histogram, image, log

for step in range(5):
    weights = np.arange(10.0) * (step + 1)
    pixels = np.full((3, 4, 3), 40 * step, np.uint8)
    log(step=step, loss=1.0 / (step + 1), weights=histogram(weights, bins=4), sample=image(pixels, caption=f"s{step}"))
"""


def test_a_local_job_logs_histograms_and_images_into_the_store(tau_home) -> None:
    run = submit(code=textwrap.dedent(JOB), project="demo", name="media")
    assert run.wait(DEADLINE) == "succeeded", run.logs()
    reader = StoreReader(tau_home / "store")
    assert reader.rows(run.run_id, "loss").step.tolist() == list(range(5))
    series = reader.histograms(run.run_id, "weights")
    assert series.steps.tolist() == list(range(5))
    for step, buckets in zip(range(5), series.buckets, strict=True):
        counts, edges = np.histogram(np.arange(10.0) * (step + 1), bins=4)
        assert buckets.tolist() == np.column_stack([edges[:-1], edges[1:], counts]).tolist()
    for step in range(5):
        found = reader.images_near(run.run_id, "sample", step)
        (stored,) = found.images
        expected = image(np.full((3, 4, 3), 40 * step, np.uint8)).data
        assert (found.step, stored.caption) == (step, f"s{step}")
        assert stored.digest == "sha256:" + hashlib.sha256(expected).hexdigest()


