"""A start replays the media records a stopped collector left in the order they were written, not in the order of
their names (digests): the records of one drain are written in reading order, and the store keeps a step's images
from its latest write, so a replay in name order could put an older event file's images back over a newer one's."""

from __future__ import annotations

import os

import pytest

from tau_collector.sources.media import ImageRecord
from tau_collector.spool.checkpoint import SpoolError
from tau_collector.spool.media_record import MEDIA_DIR, replay_media, write_media_record


def image(tag: str, step: int, payload: bytes) -> ImageRecord:
    return ImageRecord("run", tag, step, 1.0, 1, 1, (payload,), 0, 0)


def left_behind(out: str, sources: list[str], payloads: list[bytes], *, orders) -> list[str]:
    """Spool one record a source (as one drain does), returning their names in writing order."""
    names = []
    for order, (source, payload) in zip(orders, zip(sources, payloads, strict=True), strict=True):
        path, _chunk = write_media_record(out, "run-1", source, [image("sample", 5, payload)], order=order)
        names.append(os.path.basename(path))
    return names


def payloads_sorting_backwards(tmp_path) -> list[bytes]:
    """Two image payloads whose records' names (digests) sort opposite to their writing order."""
    for n in range(64):
        probe = str(tmp_path / f"probe{n}")
        first, second = b"older-%d" % n, b"newer-%d" % n
        names = left_behind(probe, ["events.1", "events.2"], [first, second], orders=[0, 1])
        if names[1] < names[0]:
            return [first, second]
    raise AssertionError("no pair of payloads sorted backwards in 64 tries")


def test_replay_delivers_a_drains_records_in_the_order_they_were_written(tmp_path):
    first, second = payloads_sorting_backwards(tmp_path)
    out = str(tmp_path / "out")
    names = left_behind(out, ["events.1", "events.2"], [first, second], orders=[0, 1])
    assert sorted(names) == [names[1], names[0]]  # by name the newer would come first
    delivered = []
    assert replay_media(out, lambda chunk: delivered.append(chunk.records[0].images[0])) == 2
    assert delivered == [first, second]
    assert os.listdir(os.path.join(out, MEDIA_DIR)) == []


def test_a_record_written_before_the_order_was_kept_is_replayed_first(tmp_path):
    first, second = payloads_sorting_backwards(tmp_path)
    out = str(tmp_path / "out")
    left_behind(out, ["events.1", "events.2"], [first, second], orders=[None, 0])
    delivered = []
    replay_media(out, lambda chunk: delivered.append(chunk.records[0].images[0]))
    assert delivered == [first, second]


def test_a_torn_record_is_refused_by_name_and_the_good_ones_are_delivered_first(tmp_path):
    out = str(tmp_path / "out")
    names = left_behind(out, ["events.1"], [b"kept"], orders=[0])
    torn = os.path.join(out, MEDIA_DIR, "f" * 64 + ".media")
    with open(torn, "wb") as handle:
        handle.write(b"tau-collector.media_chunk.v1\n" + (2**40).to_bytes(8, "little"))  # a header of 1 TiB claimed
    delivered = []
    with pytest.raises(SpoolError, match="f{64}.media"):
        replay_media(out, lambda chunk: delivered.append(chunk.records[0].images[0]))
    assert delivered == []  # the torn record sorts first (its order unknown): nothing delivered past it
    assert sorted(os.listdir(os.path.join(out, MEDIA_DIR))) == sorted([names[0], "f" * 64 + ".media"])  # none lost
