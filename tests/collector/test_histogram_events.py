"""The histogram event read without protobuf (:mod:`tau_collector.sources.histogram_events`): for the layout
writers give an old ``histo`` value it yields what protobuf reads; any other layout is left to protobuf (None)."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from tau_collector.sources import tensorboard_run
from tau_collector.sources.histogram_events import histo_event
from tau_collector.sources.media import MEDIA_KINDS, MediaRequest
from tau_collector.sources.tensorboard_proto.event_pb2 import Event, HistogramProto, Summary, SummaryMetadata


def _histo(counts: int = 64) -> bytes:
    limits = np.linspace(-3.0, 3.0, counts).tolist()
    return HistogramProto(min=-3.0, max=3.0, num=10.0, sum=0.5, sum_squares=2.0, bucket_limit=limits,
                          bucket=[float(i % 5) for i in range(counts)]).SerializeToString()


def _event(tag: str = "weights/w", step: int = 7, wall: float = 1.79e9 + 0.25, histo: bytes | None = None,
           **value) -> Event:
    v = Summary.Value(tag=tag, histo=_histo() if histo is None else histo, **value)
    return Event(wall_time=wall, step=step, summary=Summary(value=[v]))


def _by_protobuf(payload: bytes) -> tuple[float, int, str, bytes]:
    event = Event.FromString(payload)
    (value,) = event.summary.value
    assert value.WhichOneof("value") == "histo"
    return event.wall_time, event.step, value.tag, value.histo


@pytest.mark.parametrize("event", [
    _event(), _event(step=0), _event(step=2**62 + 3), _event(wall=0.0), _event(tag="ü/γ"), _event(tag="t" * 300),
    _event(histo=b""), _event(histo=_histo(5000)), _event(step=1, wall=-1.5),
], ids=["plain", "step0", "big-step", "wall0", "unicode", "long-tag", "empty-histo", "long-histo", "negative-wall"])
def test_the_writers_layout_reads_as_protobuf_reads_it(event: Event) -> None:
    payload = event.SerializeToString()
    assert histo_event(payload) == _by_protobuf(payload)
    assert histo_event(memoryview(payload)) == _by_protobuf(payload)


def test_other_layouts_are_left_to_protobuf() -> None:
    two_values = Event(wall_time=1.0, step=3, summary=Summary(value=[
        Summary.Value(tag="a", histo=_histo()), Summary.Value(tag="b", histo=_histo())]))
    with_metadata = _event(metadata=SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="histograms")))
    cases = {
        "negative step (a ten-byte varint)": _event(step=-1).SerializeToString(),
        "two values": two_values.SerializeToString(),
        "metadata": with_metadata.SerializeToString(),
        "no tag (node_name)": Event(wall_time=1.0, step=2, summary=Summary(value=[
            Summary.Value(node_name="n", histo=_histo())])).SerializeToString(),
        "a scalar": Event(wall_time=1.0, step=2, summary=Summary(value=[
            Summary.Value(tag="x", simple_value=1.0)])).SerializeToString(),
    }
    good = _event().SerializeToString()
    cases["trailing byte"] = good + b"\x00"
    cases["truncated"] = good[:-1]
    cases["tag not UTF-8"] = good.replace(b"weights/w", b"weights/\xff")
    cases["a duplicate step after the summary"] = good + b"\x10\x05"
    for why, payload in cases.items():
        assert histo_event(payload) is None, why


def test_reading_a_file_gives_the_same_media_either_way(tmp_path) -> None:
    """A run's event file read with the fast path and with protobuf alone: the same records, problems, counts."""
    from tensorboardX import SummaryWriter

    writer = SummaryWriter(str(tmp_path / "run"))
    for step in range(30):
        counts = [float((step + i) % 7) for i in range(16)]
        writer.add_histogram_raw("h/a", min=-1.0, max=1.0, num=sum(counts), sum=0.0, sum_squares=1.0,
                                 bucket_limits=np.linspace(-1, 1, 16).tolist(), bucket_counts=counts,
                                 global_step=step, walltime=1.79e9 + step)
        writer.add_histogram("h/b", np.arange(step + 3, dtype=np.float64), step, walltime=1.79e9 + step)
    from tensorboardX.proto.summary_pb2 import HistogramProto as WrittenHisto
    from tensorboardX.proto.summary_pb2 import Summary as WrittenSummary

    bad = WrittenHisto(min=0.0, max=1.0, num=3.0, bucket_limit=[0.5], bucket=[0.0, 1.0, 2.0])  # limits too few
    for step in (1, 2):
        writer.file_writer.add_summary(WrittenSummary(value=[WrittenSummary.Value(tag="h/bad", histo=bad)]), step)
    writer.close()
    path = next(str(p) for p in (tmp_path / "run").iterdir())
    run = tensorboard_run.TensorBoardRun(str(tmp_path / "run"), "run", "id")
    request = MediaRequest(frozenset(MEDIA_KINDS))

    def read(fast: bool):
        real = tensorboard_run.histo_event
        if not fast:
            tensorboard_run.histo_event = lambda _: None
        try:
            return tensorboard_run.read_segment(run, path, memory=tensorboard_run.RunMemory(), media=request,
                                                final=True)
        finally:
            tensorboard_run.histo_event = real

    fast, slow = read(True), read(False)
    assert len(fast.media) == len(slow.media) == 60
    for a, b in zip(fast.media, slow.media, strict=True):
        assert (a.run, a.tag, a.step, a.wall_time, a.record, a.offset) == (b.run, b.tag, b.step, b.wall_time,
                                                                           b.record, b.offset)
        assert a.buckets.dtype == b.buckets.dtype and np.array_equal(a.buckets, b.buckets)
    assert [p.message for p in fast.problems] == [p.message for p in slow.problems]
    assert len(fast.problems) == 2 and "bucket limits" in fast.problems[1].message
    assert fast.dropped == slow.dropped and fast.observations == slow.observations
    # The import's block reader: histograms of a block wait for their buckets, made a layout at a time.
    from tau_collector.sources.event_columns import read_block_columns

    block, _ = read_block_columns(run, path, memory=tensorboard_run.RunMemory(), media=request, final=True)
    assert len(block.media) == 60 and block.dropped == slow.dropped
    for a, b in zip(block.media, slow.media, strict=True):
        assert (a.tag, a.step, a.wall_time, a.record, a.offset) == (b.tag, b.step, b.wall_time, b.record, b.offset)
        assert a.buckets.dtype == b.buckets.dtype and np.array_equal(a.buckets, b.buckets)
    assert [p.message for p in block.problems] == [p.message for p in slow.problems]


def test_the_wall_time_is_the_double_written() -> None:
    payload = _event(wall=1.0 / 3.0).SerializeToString()
    assert histo_event(payload)[0] == struct.unpack("<d", payload[1:9])[0] == 1.0 / 3.0


class _Value:
    def __init__(self, histo: bytes) -> None:
        self.histo = histo


def test_buckets_made_a_layout_at_a_time_equal_each_histograms_own() -> None:
    """:class:`PendingHistograms` against ``histogram_buckets`` of each: empty, all-zero, NaN and negative counts,
    one bucket, limits one fewer than the counts, infinite and float32-overflowing edges, mixed layouts."""
    from tau_collector.sources.data_compat import histogram_buckets
    from tau_collector.sources.histogram_events import PendingHistograms

    rng = np.random.default_rng(3)
    limits = np.linspace(-2.0, 2.0, 12).tolist()
    made = []
    for i in range(120):
        counts = rng.integers(0, 3, 12).astype(float) * (rng.random(12) < 0.5)
        if i % 11 == 0:
            counts[:] = 0.0
        if i % 13 == 0:
            counts[rng.integers(0, 12)] = np.nan
        if i % 17 == 0:
            counts[rng.integers(0, 12)] = -1.0
        made.append(HistogramProto(min=-1e300 if i % 7 == 0 else -2.5, max=2.5 + i, bucket_limit=limits,
                                   bucket=counts.tolist()))
    made += [HistogramProto(min=1.0, max=2.0, bucket_limit=[0.0], bucket=[4.0]),
             HistogramProto(min=0.0, max=9.0, bucket_limit=[1.0, float("inf")], bucket=[0.0, 1.0, 2.0]),
             HistogramProto(min=0.0, max=9.0, bucket_limit=[1.0, 2.0, 3.0], bucket=[0.0, 1.0, 0.0])]
    pending = PendingHistograms()
    records = []
    for i, histo in enumerate(made):
        data = histo.SerializeToString()
        records.append((pending.add("run", "t", i, 1.0, data, i, i, 100_000), data))
    assert [i for i, (r, _) in enumerate(records) if r is None] == []
    pending.resolve()
    for record, data in records:
        own = histogram_buckets(_Value(data), "histo", 100_000)
        assert record.buckets.dtype == own.dtype and record.buckets.shape == own.shape
        assert np.array_equal(record.buckets, own, equal_nan=True)


def test_a_histogram_that_could_be_refused_does_not_wait() -> None:
    from tau_collector.sources.histogram_events import PendingHistograms

    pending = PendingHistograms()
    too_few_limits = HistogramProto(min=0.0, max=1.0, bucket_limit=[0.5], bucket=[0.0, 1.0, 2.0]).SerializeToString()
    assert pending.add("run", "t", 1, 1.0, too_few_limits, 1, 1, 100_000) is None
    wide = HistogramProto(bucket_limit=[float(i) for i in range(40)], bucket=[1.0] * 40).SerializeToString()
    assert pending.add("run", "t", 1, 1.0, wide, 1, 1, 100) is None  # 3 x 40 values over the limit of 100
    unpacked = HistogramProto(bucket_limit=[1.0], bucket=[1.0]).SerializeToString() + b"\x31" + bytes(8)
    assert pending.add("run", "t", 1, 1.0, unpacked, 1, 1, 100_000) is None
