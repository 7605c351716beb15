"""Histogram frames read as columns (:func:`tau_collector.sources.histogram_events.histogram_rows`): the frames of
one payload length in the writers' layout give the records and buckets the per-frame reader gives, and every
frame it cannot vouch for (another layout, a tag not seen before or of another series, a tag not UTF-8, over
the limits) is left to the per-frame reader."""

from __future__ import annotations

import numpy as np
import pytest

from tau_collector.sources import event_columns
from tau_collector.sources.data_compat import HISTOGRAMS, SCALARS, histogram_buckets
from tau_collector.sources.event_columns import read_block_columns
from tau_collector.sources.histogram_events import PendingHistograms, histo_event, histogram_rows
from tau_collector.sources.media import MEDIA_KINDS, MediaRequest
from tau_collector.sources.tensorboard_proto.event_pb2 import Event, HistogramProto, Summary, SummaryMetadata
from tau_collector.sources.tensorboard_run import RunMemory, TensorBoardRun
from tau_collector.sources.tf_record import encode_frame

LIMITS = np.linspace(-2.0, 2.0, 15).tolist()
STEPS = [s for s in range(301, 400) if s % 4 and s % 5]  # two-byte steps, every field of the histogram written


def _histo_event(tag: str, step: int, rng: np.random.Generator, limits: list[float] = LIMITS) -> bytes:
    counts = rng.integers(0, 4, len(limits) + 1).astype(float) * (rng.random(len(limits) + 1) < 0.6)
    histo = HistogramProto(min=0.0 if step % 5 == 0 else -2.5 - step, max=2.5 + step % 3, num=float(counts.sum()),
                           sum=0.0 if step % 4 == 0 else 0.25 * step, sum_squares=1.0, bucket_limit=limits,
                           bucket=counts.tolist())
    return Event(wall_time=1.79e9 + step / 8, step=step,
                 summary=Summary(value=[Summary.Value(tag=tag, histo=histo.SerializeToString())])).SerializeToString()


def _scalar_event(tag: str, step: int) -> bytes:
    return Event(wall_time=1.79e9 + step, step=step,
                 summary=Summary(value=[Summary.Value(tag=tag, simple_value=step / 3)])).SerializeToString()


class _Value:
    def __init__(self, histo: bytes) -> None:
        self.histo = histo


def test_the_frames_of_one_layout_give_what_histo_event_and_the_buckets_rule_give():
    rng = np.random.default_rng(11)
    frames = [_histo_event("h/a", STEPS[i], rng) for i in range(12)]  # one payload length
    frames += [_histo_event("h/b", STEPS[i], rng) for i in range(3)]  # not seen before: left
    frames += [_histo_event("h/c", STEPS[i], rng) for i in range(3)]  # a scalars series: left
    frames += [_histo_event("h/a", STEPS[0], rng).replace(b"h/a", b"h/\xff")]  # not UTF-8: left
    assert len({len(f) for f in frames}) == 1
    payloads = np.frombuffer(b"".join(frames), dtype=np.uint8).reshape(len(frames), -1)
    plugins = {"h/a": HISTOGRAMS, "h/c": SCALARS}
    pending = PendingHistograms()
    records, offsets = np.arange(len(frames)) + 5, np.arange(len(frames)) * 1000
    taken, items, waiting = histogram_rows(payloads, records, offsets, "run", plugins, 100_000, pending)
    assert taken.tolist() == [True] * 12 + [False] * 7
    assert waiting.tolist() == [False] * 13 + [True] * 2 + [False] * 4  # h/b's but its first (which registers it)
    pending.resolve()
    assert len(items) == 12
    for item, frame, record, offset in zip(items, frames, records.tolist(), offsets.tolist(), strict=False):
        wall, step, tag, data = histo_event(frame)
        assert (item.run, item.tag, item.step, item.wall_time, item.record, item.offset) == (
            "run", tag, step, wall, record, offset)
        assert type(item.step) is int and type(item.wall_time) is float and type(item.offset) is int
        own = histogram_buckets(_Value(data), "histo", 100_000)
        assert item.buckets.dtype == own.dtype and item.buckets.tobytes() == own.tobytes()


def test_frames_over_the_limits_or_of_another_layout_are_left():
    rng = np.random.default_rng(12)
    frames = [_histo_event("h/a", STEPS[i], rng) for i in range(10)]
    payloads = np.frombuffer(b"".join(frames), dtype=np.uint8).reshape(len(frames), -1)
    args = (np.arange(10), np.arange(10), "run", {"h/a": HISTOGRAMS})
    taken, items, waiting = histogram_rows(payloads, *args, 3 * 15, PendingHistograms())  # 16 counts: 48 values
    assert not taken.any() and not waiting.any() and items == []
    other = payloads.copy()
    other[:, -3] ^= 0xFF  # a count's byte: still the layout
    other[4, 12] ^= 0x01  # the summary's length: another layout (and not the writers')
    taken, items, _ = histogram_rows(other, *args, 100_000, PendingHistograms())
    assert taken.tolist() == [True] * 4 + [False] + [True] * 5 and len(items) == 9


def _event_file(path) -> None:
    """Histograms of 10 tags (one not ASCII, one whose limits change, one first seen mid-file, one a scalars series
    first, one an images series first), steps 0 (left out of the frame) to 239, scalars, and a tag that is not
    UTF-8."""
    rng = np.random.default_rng(13)
    out = []
    for step in range(240):
        for tag in ("h/t0", "h/t1", "h/t2", "h/t3", "h/ü", "h/t5", "h/t6", "h/t7", "h/s0"):
            if tag == "h/t7" and step < 120:
                continue
            if tag == "h/s0" and step == 0:
                out.append(_scalar_event(tag, step))
                continue
            limits = LIMITS if tag != "h/t5" or step % 2 else np.linspace(-1.0, 1.0, 15).tolist()
            out.append(_histo_event(tag, step, rng, limits))
        out.append(_scalar_event("loss", step))
        if step == 50:  # a histo value saying it is an image: the tag's later histograms are not read as columns
            marked = Event.FromString(_histo_event("h/m0", step, rng))
            marked.summary.value[0].metadata.CopyFrom(SummaryMetadata(
                plugin_data=SummaryMetadata.PluginData(plugin_name="images")))
            out.append(marked.SerializeToString())
        if step > 50:
            out.append(_histo_event("h/m0", step, rng))
        if step == 77:
            out.append(_histo_event("h/t1", step, rng).replace(b"h/t1", b"h/\xff1"))
    path.write_bytes(b"".join(encode_frame(frame) for frame in out))


def _read(run: TensorBoardRun, path: str) -> list:
    memory, offset, records, out = RunMemory(), 0, 0, []
    request = MediaRequest(frozenset(MEDIA_KINDS))
    while True:
        batch, columns = read_block_columns(run, path, memory=memory, offset=offset, records_before=records,
                                            max_bytes=24 * 1024, media=request, final=True)
        out.append((batch, columns))
        offset, records = batch.checkpoint, batch.records
        if not batch.more:
            return out


@pytest.mark.filterwarnings("ignore")
def test_a_file_read_with_columns_gives_the_batches_read_frame_by_frame(tmp_path, monkeypatch):
    (tmp_path / "run").mkdir()
    path = tmp_path / "run" / "events.out.tfevents.1.host"
    _event_file(path)
    run = TensorBoardRun(str(tmp_path / "run"), "run", "id")
    taken = []
    real = event_columns.histogram_rows

    def counting(*args):
        found = real(*args)
        taken.append(int(found[0].sum()))
        return found

    monkeypatch.setattr(event_columns, "histogram_rows", counting)
    by_columns = _read(run, str(path))
    monkeypatch.setattr(event_columns, "COLUMNS_MIN", 10 ** 9)
    one_by_one = _read(run, str(path))
    histograms = sum(1 for batch, _ in one_by_one for m in batch.media)
    assert sum(taken) > histograms * 3 // 4  # most were read as columns
    assert len(by_columns) == len(one_by_one) > 5
    for (a, ca), (b, cb) in zip(by_columns, one_by_one, strict=True):
        assert (a.checkpoint, a.records, a.stop, a.more) == (b.checkpoint, b.records, b.stop, b.more)
        assert list(a.dropped.items()) == list(b.dropped.items())
        assert [p.message for p in a.problems] == [p.message for p in b.problems]
        assert len(a.media) == len(b.media)
        for x, y in zip(a.media, b.media, strict=True):
            assert (type(x), x.run, x.tag, x.step, x.wall_time, x.record, x.offset) == (
                type(y), y.run, y.tag, y.step, y.wall_time, y.record, y.offset)
            assert x.buckets.dtype == y.buckets.dtype and x.buckets.tobytes() == y.buckets.tobytes()
        assert ca.names == cb.names
        for name in ("metric", "step", "wall_time", "value", "record", "offset"):
            assert np.array_equal(getattr(ca, name), getattr(cb, name))
    tags = {m.tag for batch, _ in by_columns for m in batch.media}
    assert {"h/ü", "h/t5", "h/t7"} <= tags and "h/s0" not in tags
