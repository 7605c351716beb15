"""Our spool record of a chunk's histograms, images and text: written before delivery, removed after the checkpoint.

Like the non-finite records beside TauGrid's pending manifest (:mod:`.manifest`): the collector writes
``<out>/media/<sha256 of the record>.media`` (atomic, fsynced), delivers it to every sink that keeps media
(:meth:`~.sinks.base.Sink.deliver_media`), saves the checkpoint past the frames it came from, then removes
it. A start delivers every record still there again and removes it (:func:`replay_media`). Nothing is lost:
a record exists from before its delivery until after the checkpoint that covers its frames. Nothing shows
twice: the store keeps each value under its identity (run, tag, step, image rank; histogram and text rows
name their frame), so a replay, or frames read again from an older checkpoint, add nothing new.

File layout: ``tau-collector.media_chunk.v1\\n``, the header's length (8 bytes, little-endian), the header
(JSON: run, source file, the run's identity when known, and each record's fields with the lengths of its binary
parts), then the binary parts in order (a histogram's buckets as float64 ``[k, 3]``, each encoded image). Every
length is checked against the file's size before anything is allocated. A record without the identity (written
before it was carried) is read as before: its chunk's ``identity`` is None.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable

import numpy as np
import orjson

from tau_collector.sinks.base import MediaChunk, RunIdentity
from tau_collector.sources.media import HistogramRecord, ImageRecord, MediaRecord, TextRecord
from tau_collector.spool.checkpoint import SpoolError
from tau_collector.spool.durable import remove_durable, write_file_atomic

__all__ = ["MEDIA_CHUNK_SCHEMA", "MEDIA_DIR", "decode_media_chunk", "encode_media_chunk", "media_chunk_key",
           "replay_media", "write_media_record"]

MEDIA_CHUNK_SCHEMA = b"tau-collector.media_chunk.v1\n"
MEDIA_DIR = "media"
_NAME = re.compile(r"([0-9a-f]{64})\.media\Z")
_HEADER_BYTES = 8


def _describe(record: MediaRecord) -> tuple[dict, list[bytes]]:
    doc = {"kind": record.kind, "run": record.run, "tag": record.tag, "step": record.step,
           "wall_time": record.wall_time, "record": record.record, "offset": record.offset}
    if isinstance(record, HistogramRecord):
        data = np.ascontiguousarray(record.buckets, dtype="<f8").tobytes()
        return doc, [data]
    if isinstance(record, ImageRecord):
        doc.update(width=record.width, height=record.height)
        if record.captions:
            doc["captions"] = list(record.captions)
        return doc, list(record.images)
    doc.update(text=list(record.text), shape=list(record.shape))
    return doc, []


def _identity_doc(identity: RunIdentity) -> dict:
    return {"project": identity.project, "experiment_id": identity.experiment_id,
            "run_group_id": identity.run_group_id, "tags": [list(pair) for pair in identity.tags]}


def _identity(doc) -> RunIdentity | None:
    """The header's identity; None in a record written before it was carried."""
    if doc is None:
        return None
    return RunIdentity(str(doc["project"]), str(doc["experiment_id"]), str(doc["run_group_id"]),
                       tuple((str(k), str(v)) for k, v in doc.get("tags", ())))


def encode_media_chunk(run_id: str, source: str, records: list[MediaRecord],
                       identity: RunIdentity | None = None, order: int | None = None) -> tuple[str, list[bytes]]:
    """(the record's digest, its bytes in pieces); ``identity`` and ``order`` (the record's place among those
    written before one checkpoint) are kept in the header when given."""
    docs, blobs = [], []
    for record in records:
        doc, parts = _describe(record)
        doc["parts"] = [len(p) for p in parts]
        docs.append(doc)
        blobs += parts
    head = {"run_id": run_id, "source": source, "records": docs}
    if identity is not None:
        head["identity"] = _identity_doc(identity)
    if order is not None:
        head["order"] = order
    header = orjson.dumps(head)
    pieces = [MEDIA_CHUNK_SCHEMA, len(header).to_bytes(_HEADER_BYTES, "little"), header, *blobs]
    digest = hashlib.sha256()
    for piece in pieces:
        digest.update(piece)
    return digest.hexdigest(), pieces


_HASH_RUN = 48  # histograms' buckets hashed in one call (~50 KB at 46 buckets: no lock held while hashing)


def media_chunk_key(run_id: str, source: str, records: list[MediaRecord]) -> str:
    """A digest of everything ``records`` hold, for a chunk delivered without a spool record (an import): the
    same records give the same key, as :func:`encode_media_chunk`'s digest does, without encoding the record.

    The key names the delivery's files and index rows (``media_files``), so a re-run import must get it again:
    it hashes, in record order, each histogram's buckets as float64 little-endian and each image's bytes, then
    the records' fields as JSON. Histograms one after another are hashed a few dozen at a time (the same bytes
    in one call, which hashes without holding the interpreter's lock), each described by one tuple."""
    digest = hashlib.sha256(orjson.dumps([run_id, source]))
    update = digest.update
    described = []
    append = described.append
    contiguous = np.ascontiguousarray
    waiting: list[np.ndarray] = []  # buckets not hashed yet, in record order
    for record in records:
        if isinstance(record, HistogramRecord):
            buckets = contiguous(record.buckets, dtype="<f8")
            waiting.append(buckets)
            if len(waiting) == _HASH_RUN:
                update(b"".join(waiting))
                waiting.clear()
            append((record.kind, record.run, record.tag, record.step, record.wall_time, record.record, record.offset,
                    buckets.shape[0]))
            continue
        if waiting:
            update(b"".join(waiting))
            waiting.clear()
        common = (record.kind, record.run, record.tag, record.step, record.wall_time, record.record, record.offset)
        if isinstance(record, ImageRecord):
            for image in record.images:
                update(image)
            append((*common, record.width, record.height, [len(i) for i in record.images], list(record.captions)))
        else:
            append((*common, list(record.text), list(record.shape)))
    if waiting:
        update(b"".join(waiting))
    update(orjson.dumps(described))
    return digest.hexdigest()


def decode_media_chunk(raw: bytes, where: str) -> MediaChunk:
    head = len(MEDIA_CHUNK_SCHEMA)
    if not raw.startswith(MEDIA_CHUNK_SCHEMA) or len(raw) < head + _HEADER_BYTES:
        raise SpoolError(f"media spool record {where} does not start with {MEDIA_CHUNK_SCHEMA!r}")
    size = int.from_bytes(raw[head:head + _HEADER_BYTES], "little")
    at = head + _HEADER_BYTES + size
    if at > len(raw):
        raise SpoolError(f"media spool record {where}: its header claims {size} bytes, the file holds fewer")
    try:
        header = orjson.loads(raw[head + _HEADER_BYTES:at])
        docs = header["records"]
        if sum(n for doc in docs for n in doc["parts"]) != len(raw) - at:
            raise ValueError("its parts do not add up to the file's size")
        records: list[MediaRecord] = []
        for doc in docs:
            parts = []
            for n in doc["parts"]:
                parts.append(raw[at:at + n])
                at += n
            common = (doc["run"], doc["tag"], doc["step"], doc["wall_time"])
            if doc["kind"] == HistogramRecord.kind:
                buckets = np.frombuffer(parts[0], dtype="<f8").reshape(-1, 3).astype(np.float64)
                records.append(HistogramRecord(*common, buckets, doc["record"], doc["offset"]))
            elif doc["kind"] == ImageRecord.kind:
                records.append(ImageRecord(*common, doc["width"], doc["height"], tuple(parts), doc["record"],
                                           doc["offset"], captions=tuple(doc.get("captions", ()))))
            elif doc["kind"] == TextRecord.kind:
                records.append(TextRecord(*common, tuple(doc["text"]), tuple(doc["shape"]), doc["record"],
                                          doc["offset"]))
            else:
                raise ValueError(f"unknown kind {doc['kind']!r}")
        identity = _identity(header.get("identity"))
    except (ValueError, KeyError, TypeError) as exc:
        raise SpoolError(f"media spool record {where} is malformed: {exc}") from None
    digest = hashlib.sha256(raw).hexdigest()
    return MediaChunk(digest, header["run_id"], header["source"], tuple(records), identity)


def write_media_record(out: str, run_id: str, source: str, records: list[MediaRecord],
                       identity: RunIdentity | None = None, order: int | None = None) -> tuple[str, MediaChunk]:
    """Spool ``records`` (atomic, fsynced); returns the record's path and the chunk to deliver. ``order`` is the
    record's place among the records written before the next checkpoint: a replay delivers them in that order."""
    digest, pieces = encode_media_chunk(run_id, source, records, identity, order)
    path = os.path.join(out, MEDIA_DIR, digest + ".media")
    write_file_atomic(path, pieces)
    return path, MediaChunk(digest, run_id, source, tuple(records), identity)


def _written_order(path: str) -> int:
    """The header's ``order`` (-1 for a record written before it was kept), reading the header alone; a record too
    short or malformed to say sorts first and is refused, naming itself, when it is read whole."""
    with open(path, "rb") as handle:
        head = handle.read(len(MEDIA_CHUNK_SCHEMA) + _HEADER_BYTES)
        if len(head) < len(MEDIA_CHUNK_SCHEMA) + _HEADER_BYTES or not head.startswith(MEDIA_CHUNK_SCHEMA):
            return -1
        size = int.from_bytes(head[len(MEDIA_CHUNK_SCHEMA):], "little")
        if size > os.fstat(handle.fileno()).st_size:  # the file decides no allocation
            return -1
        try:
            order = orjson.loads(handle.read(size)).get("order", -1)
        except (orjson.JSONDecodeError, AttributeError):
            return -1
    return order if isinstance(order, int) else -1


def replay_media(out: str, deliver: Callable[[MediaChunk], None]) -> int:
    """Deliver every media record left by a process that stopped, in the order they were written (the records of
    one drain: those before its checkpoint removed them), then remove it; returns how many."""
    directory = os.path.join(out, MEDIA_DIR)
    try:
        names = sorted(os.listdir(directory))
    except FileNotFoundError:
        return 0
    left = []
    for name in names:
        path = os.path.join(directory, name)
        if name.startswith(".") and ".tmp-" in name:
            os.unlink(path)  # an interrupted atomic write: never delivered
            continue
        match = _NAME.match(name)
        if not match:
            raise SpoolError(f"unexpected file in the media spool: {path}; remove it if you put it there")
        left.append((_written_order(path), name, path, match.group(1)))
    count = 0
    for _order, _name, path, key in sorted(left):
        with open(path, "rb") as handle:
            chunk = decode_media_chunk(handle.read(), path)
        if chunk.key != key:
            raise SpoolError(f"media spool record {path} does not match its name (damaged); remove it to go on")
        deliver(chunk)
        remove_durable(path)
        count += 1
    return count
