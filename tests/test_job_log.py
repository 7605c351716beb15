"""``taunotebook.log``/``histogram``/``image``: W&B-shaped rows and image files a job writes with neither TensorBoard
nor W&B, read back by the collector (a real local job: ``tests/backends/test_local_media.py``)."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from PIL import Image as PILImage

import taunotebook
from tau_collector.job import history_writer
from tau_collector.sources.base import Position
from tau_collector.sources.history import HistorySource
from taunotebook.job_log import MAX_BUCKETS, histogram, image, log


def test_histogram_of_values_is_numpys_and_a_pair_is_taken_in_either_order() -> None:
    values = np.random.default_rng(1).normal(size=1000)
    counts, edges = np.histogram(values, bins=32)
    made = histogram(np.append(values, [np.nan, np.inf]), bins=32)  # non-finite values left out
    assert made == {"_type": "histogram", "bins": edges.tolist(), "values": counts.tolist()}
    assert histogram((edges, counts)) == histogram((counts, edges)) == made
    with pytest.raises(ValueError, match="one more than the counts"):
        histogram(([0, 1], [1, 2]))
    with pytest.raises(ValueError, match="no finite values"):
        histogram([np.nan])
    with pytest.raises(ValueError, match="more than the 33333"):
        histogram((np.arange(MAX_BUCKETS + 2), np.ones(MAX_BUCKETS + 1)))
    with pytest.raises(ValueError, match="increasing"):
        histogram(([2, 1, 0], [1, 1]))


def test_image_encodes_pixels_as_png_and_keeps_encoded_bytes() -> None:
    rgb = np.arange(5 * 7 * 3, dtype=np.uint8).reshape(5, 7, 3)
    made = image(rgb, caption="rgb")
    decoded = PILImage.open(io.BytesIO(made.data))
    assert (decoded.format, decoded.size, made.width, made.height) == ("PNG", (7, 5), 7, 5)
    assert np.array_equal(np.asarray(decoded), rgb)
    grey = image(np.linspace(0, 1, 12).reshape(3, 4))  # floats are 0..1
    assert np.asarray(PILImage.open(io.BytesIO(grey.data))).tolist()[2][3] == 255
    chw = image(np.moveaxis(rgb, -1, 0))  # channels first, as torch holds them
    assert chw.data == made.data
    assert image(made.data, caption="again") == type(made)(made.data, 7, 5, "again", "png")
    with pytest.raises(ValueError, match="shape"):
        image(np.zeros((5, 5, 7)))


@pytest.mark.parametrize("save", [{}, {"progressive": True}, {"exif": b"Exif\0\0" + b"MM\0*" + bytes(600),
                                                                "icc_profile": bytes(3000)}])
def test_image_of_jpeg_bytes_reads_its_size_from_the_frame_header(save) -> None:
    out = io.BytesIO()
    PILImage.new("RGB", (37, 19), (200, 30, 90)).save(out, format="JPEG", **save)
    made = image(out.getvalue(), caption="photo")
    assert (made.width, made.height, made.format, made.caption) == (37, 19, "jpg", "photo")


@pytest.mark.parametrize("data", [
    b"\xff\xd8\xff",  # the markers end before any frame header
    b"\xff\xd8\xff\xe0\x00",  # a segment's length cut off
    b"\xff\xd8\xff\xe0\x00\x01rest",  # a length below its own two bytes
    b"\xff\xd8\xff\xe0\xff\xff" + bytes(10),  # a length past the end
    b"\xff\xd8\xff\xda\x00\x02" + bytes(10),  # the image data before any frame header
    b"\xff\xd8\xff\xc0\x00\x11\x08\x00",  # a frame header cut off
    b"\xff\xd8" + b"\xff\xd0" * 5000,  # markers without end: given up after a bound
])
def test_image_of_jpeg_bytes_without_a_readable_frame_header_has_no_size(data) -> None:
    made = image(data)
    assert (made.width, made.height, made.format) == (None, None, "jpg")


def test_log_writes_the_row_and_the_image_file_the_history_source_reads(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("TAU_HISTORY_DIR", str(tmp_path))
    pixels = np.full((4, 6, 3), 200, np.uint8)
    row = log(step=3, loss=0.5, weights=histogram([1, 2, 2, 3], bins=2), sample=image(pixels, caption="three"),
              grid=[image(pixels), image(pixels[:, :, 0], caption="grey")])
    history_writer._close_log_writers()  # the buffered row is written now
    assert row["sample"]["path"].startswith("media/images/sample_") and row["sample"]["caption"] == "three"
    assert (tmp_path / row["sample"]["path"]).read_bytes() == image(pixels).data
    (chunk,) = tmp_path.glob("chunk-*.jsonl")
    written = json.loads(chunk.read_text())
    assert written["_step"] == 3 and written["weights"] == {"_type": "histogram", "bins": [1.0, 2.0, 3.0],
                                                            "values": [1, 3]}
    source = HistorySource([str(tmp_path / "*.jsonl")])
    batch = source.read(source.inputs()[0], Position(), final=True)
    assert not batch.problems and batch.rows[0].fields["loss"] == 0.5
    by_tag = {m.tag: m for m in batch.media}
    assert by_tag["weights"].buckets.tolist() == [[1.0, 2.0, 1.0], [2.0, 3.0, 3.0]]
    assert by_tag["sample"].images == (image(pixels).data,) and by_tag["sample"].captions == ("three",)
    assert by_tag["grid"].images == (image(pixels).data, image(pixels[:, :, 0]).data)
    assert by_tag["grid"].captions == (None, "grey")


def test_without_a_history_dir_the_row_is_printed(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.delenv("TAU_HISTORY_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    log(step=1, pic=image(b"\x89PNG\r\n\x1a\n" + bytes(30)))
    printed = json.loads(capsys.readouterr().out)
    assert printed["step"] == 1 and printed["pic"]["_type"] == "image-file"
    assert (tmp_path / printed["pic"]["path"]).is_file()


def test_the_helpers_are_the_packages() -> None:
    assert (taunotebook.log, taunotebook.histogram, taunotebook.image) == (log, histogram, image)
