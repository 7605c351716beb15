"""Incremental, checkpointable reading of one JSONL history file into history rows.

The reader follows TauGrid's framing (``history.go``): while the job runs only bytes up to the
last ``\\n`` are consumed, so a line the writer is still appending is left for the next pass;
the final drain after completion also consumes the unterminated tail. Unlike TauGrid, a bad
line is not fatal: it becomes a :class:`SourceProblem` and the rows around it are still read;
Python's ``NaN``/``Infinity`` tokens and our normalizer's ``"NaN"``/``"Infinity"`` strings are
read as non-finite floats (``DESIGN.md`` §5).

The caller persists ``(offset, lines)`` of a :class:`HistoryRead` as its checkpoint together
with :func:`file_id` and :func:`prefix_sha256`, which tell whether the file is still the same.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any

import orjson

from tau_collector.sources.records import HistoryRow, ProblemKind, SourceProblem
from tau_collector.taugrid.gojson import decode_go_utf8

__all__ = [
    "DEFAULT_MAX_LINE_BYTES",
    "HistoryRead",
    "HistoryPathError",
    "read_history",
    "read_history_file",
    "decode_history_line",
    "complete_lines",
    "history_metric_file_id",
]

# Strings our normalizer writes for non-finite values so that TauGrid's collector (which skips
# strings) does not die on the file; read back as the floats they stand for.
_NONFINITE_STRINGS: dict[str, float] = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}

# orjson silently turns integers beyond 64 bits into floats; a run of 19+ digits not preceded by
# "." (a fraction) marks a line that json.loads must decode to keep such integers exact.
# Mapping digits to "0", "." to "F" and every other byte to "X" lets one bytes.find locate such
# runs in the whole buffer: far cheaper than a regex or a Python loop over fraction digits.
_INTEGER_MASK = bytes(
    0x30 if 0x30 <= byte <= 0x39 else 0x46 if byte == 0x2E else 0x58 for byte in range(256))
_LONG_INTEGER = b"X" + b"0" * 19

_READ_BLOCK = 1 << 20
# The longest line decoded; a longer one is a bad row, skipped without being held in memory.
DEFAULT_MAX_LINE_BYTES = 16 * 1024 * 1024
# Lines decoded together on the fast path; bounds the work redone when a batch holds a bad line.
_BATCH_LINES = 4096


class HistoryPathError(ValueError):
    """A ``--history`` argument that names something that cannot be a history file."""


@dataclass(slots=True)
class HistoryRead:
    """What one pass over a history file produced, and the checkpoint after it.

    ``offset``/``lines`` are the new checkpoint: the byte offset just past the last consumed
    line and the number of lines consumed since the start of the file (blank, bad and overlong
    lines count, they are consumed too). ``pending_bytes`` were left for the next pass: a
    partial last line while the job runs (0 after a final drain). ``reached_end`` is False
    when a bound (``max_bytes``, ``max_rows``) stopped the pass before the end of the file.
    """

    path: str
    start_offset: int
    start_lines: int
    offset: int
    lines: int
    rows: list[HistoryRow] = field(default_factory=list)
    problems: list[SourceProblem] = field(default_factory=list)
    max_fields: int = 0  # a line with more keys is a bad row, never decoded (0: no limit)
    pending_bytes: int = 0
    reached_end: bool = True

    @property
    def consumed_bytes(self) -> int:
        return self.offset - self.start_offset


def read_history(
    path: str,
    offset: int = 0,
    lines: int = 0,
    *,
    final: bool = False,
    prefix_hash: Any = None,
    max_bytes: int | None = None,
    max_rows: int | None = None,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    max_fields: int = 0,
) -> HistoryRead:
    """Read the lines of ``path`` that follow the checkpoint ``(offset, lines)``.

    ``final=False`` (the job is running) stops after the last ``\\n``; ``final=True`` also
    consumes an unterminated last line. ``prefix_hash``, when given, is a ``hashlib.sha256``
    object over the bytes before ``offset``; it is updated with the consumed bytes, so a caller
    can keep the checkpoint's prefix digest without re-reading the file.

    ``max_bytes`` and ``max_rows`` bound one pass over a large backlog: the pass stops after
    the last whole line within that many bytes (or after the first line, when it is longer) and
    lines; ``reached_end`` is False until a pass reaches the end of the file; call again from
    the new checkpoint. Without them the file is read to its end, a block at a time.

    A line longer than ``max_line_bytes`` is never held in memory: it is skipped (consumed once
    its newline is there, or at the final drain) and reported as a bad row with its offset. A line
    with more than ``max_fields`` keys (``":`` in its text) is reported as a bad row without being
    decoded.
    A file that cannot be read, or is shorter than ``offset``, yields one ``UNREADABLE``
    problem and no advance.
    """
    result = HistoryRead(path=path, start_offset=offset, start_lines=lines, offset=offset, lines=lines,
                         max_fields=max_fields)
    try:
        with open(path, "rb", buffering=0) as handle:
            fd = handle.fileno()
            size = os.fstat(fd).st_size
            if size < offset:
                result.problems.append(SourceProblem(
                    path, ProblemKind.UNREADABLE,
                    f"checkpoint offset {offset} is past the end of the file ({size} bytes): the file was "
                    "truncated or replaced; restore it or start the collector with a fresh --out",
                    offset=offset))
                return result
            block = max(1, max_bytes) if max_bytes is not None else _READ_BLOCK
            while True:
                more = _read_lines(fd, size, result, final=final, prefix_hash=prefix_hash, block=block,
                                   max_rows=max_rows, max_line_bytes=max_line_bytes)
                if not more:
                    return result
                if max_bytes is not None or max_rows is not None:
                    result.reached_end = False
                    return result
    except OSError as err:
        result.problems.append(SourceProblem(
            path, ProblemKind.UNREADABLE,
            f"cannot read history file ({err.strerror or err}); check that it exists and is readable",
            offset=result.offset))
        return result


def _read_lines(fd: int, size: int, result: HistoryRead, *, final: bool, prefix_hash: Any, block: int,
                max_rows: int | None, max_line_bytes: int) -> bool:
    """Consume the whole lines of one block from ``result.offset``; True when more bytes follow."""
    pos = result.offset
    available = size - pos
    if available <= 0:
        return False
    data = os.pread(fd, min(block, available), pos)
    cut = data.rfind(b"\n") + 1
    if cut == 0 and len(data) < available:
        # The block holds no line end: the line is longer than the block. Read it whole when it
        # is within the line limit, else skip it without holding it.
        want = len(data)
        while cut == 0 and len(data) <= max_line_bytes and len(data) < available:
            want = min(want * 2, max_line_bytes + 1, available)
            data = os.pread(fd, want, pos)
            cut = data.find(b"\n") + 1
        if cut:
            data = data[:cut]  # this one line makes the batch
        if cut == 0 and len(data) > max_line_bytes:
            return _skip_long_line(fd, size, result, final=final, prefix_hash=prefix_hash,
                                   max_line_bytes=max_line_bytes)
    at_end = pos + len(data) >= size
    if max_rows is not None and cut and data.count(b"\n", 0, cut) > max_rows:
        cut = _after_nth_newline(data, max(max_rows, 1))
        at_end = False
    if final and at_end and cut < len(data):
        if len(data) - cut > max_line_bytes:  # an unterminated tail over the limit: the last line
            if cut:
                _consume(data, cut, result, prefix_hash, max_line_bytes)
            return _skip_long_line(fd, size, result, final=final, prefix_hash=prefix_hash,
                                   max_line_bytes=max_line_bytes)
        cut = len(data)
    if cut == 0:
        result.pending_bytes = len(data)
        return False
    _consume(data, cut, result, prefix_hash, max_line_bytes)
    result.pending_bytes = len(data) - cut if at_end else 0
    return not at_end


def _after_nth_newline(data: bytes, count: int) -> int:
    position = -1
    for _ in range(count):
        position = data.index(b"\n", position + 1)
    return position + 1


def _consume(data: bytes, cut: int, result: HistoryRead, prefix_hash: Any, max_line_bytes: int) -> None:
    """Decode ``data[:cut]`` (whole lines, the last possibly unterminated) into ``result``."""
    if prefix_hash is not None:
        prefix_hash.update(memoryview(data)[:cut])
    text = data[:cut] if cut != len(data) else data
    if text[-1:] == b"\n":
        text = text[:-1]
    _decode_lines(result.path, text, result.offset, result.lines, result.rows, result.problems, max_line_bytes,
                  result.max_fields)
    result.offset += cut
    result.lines += text.count(b"\n") + 1


def _skip_long_line(fd: int, size: int, result: HistoryRead, *, final: bool, prefix_hash: Any,
                    max_line_bytes: int) -> bool:
    """Skip the line at ``result.offset``, longer than the limit, reading it a block at a time.

    It is consumed (and reported) once its newline is in the file, or at the final drain; while
    the job runs and it has no end yet, nothing is consumed and it is reported as pending.
    """
    start = result.offset
    # A final pass consumes the line whatever follows, so it hashes as it goes; a live pass
    # hashes only once it knows the line ends (a second read, of bytes the cache holds).
    hashing = prefix_hash if final else None
    pos = start
    end = -1
    while pos < size:
        piece = os.pread(fd, min(_READ_BLOCK, size - pos), pos)
        if not piece:
            break
        newline = piece.find(b"\n")
        if newline >= 0:
            piece = piece[:newline + 1]
            end = pos + newline + 1
        if hashing is not None:
            hashing.update(piece)
        pos += len(piece)
        if end >= 0:
            break
    line = result.lines + 1
    limit = f"the line limit of {max_line_bytes} bytes (--max-line-bytes)"
    if end < 0 and not final:
        result.problems.append(SourceProblem(
            result.path, ProblemKind.BAD_ROW,
            f"line is already {pos - start} bytes long, over {limit}, and has no end yet; it will be "
            "skipped once it ends (the rows before it were read)",
            line=line, offset=start))
        result.pending_bytes = pos - start
        return False
    length = (end if end >= 0 else pos) - start
    if prefix_hash is not None and hashing is None:
        at = start
        while at < start + length:
            piece = os.pread(fd, min(_READ_BLOCK, start + length - at), at)
            prefix_hash.update(piece)
            at += len(piece)
    result.problems.append(SourceProblem(
        result.path, ProblemKind.BAD_ROW,
        f"line is {length} bytes long, over {limit}; skipped it without reading it — fix the writer "
        "of this line or raise the limit (the other rows of the file were read)",
        line=line, offset=start))
    result.offset = start + length
    result.lines = line
    result.pending_bytes = 0
    return result.offset < size


def read_history_file(path: str, *, final: bool = True) -> HistoryRead:
    """Read a whole history file from its start (a completed job's file by default)."""
    return read_history(path, 0, 0, final=final)


def _decode_lines(
    path: str, data: bytes, base_offset: int, base_lines: int,
    rows: list[HistoryRow], problems: list[SourceProblem], max_line_bytes: int = 0, max_fields: int = 0,
) -> None:
    """Decode ``data`` (complete lines joined by ``\\n``, no trailing newline) into rows."""
    parts = data.split(b"\n")
    # offsets[i] = byte offset of line i in the file; offsets[-1] is one past the last line
    offsets = list(accumulate(map(len, parts), _next_line_start, initial=base_offset))
    # Lines that need more than orjson (big integers, non-finite strings, over the line limit)
    # are found by whole-buffer scans, so an ordinary batch costs one orjson call per line and
    # no Python work.
    special = [base_offset + position for position in _special_positions(data)]
    if max_line_bytes and len(data) > max_line_bytes:
        special += [offsets[i] for i, part in enumerate(parts) if len(part) > max_line_bytes]
        special.sort()
    if max_fields and data.count(_KEY_END) > max_fields:
        special += [offsets[i] for i, part in enumerate(parts) if part.count(_KEY_END) > max_fields]
        special.sort()
    special.append(offsets[-1] + 1)
    special_index = 0
    loads = orjson.loads
    for first in range(0, len(parts), _BATCH_LINES):
        last = min(first + _BATCH_LINES, len(parts))
        batch = parts[first:last]
        if special[special_index] >= offsets[last]:
            try:
                objects = list(map(loads, batch))
            except orjson.JSONDecodeError:
                pass
            else:
                if all(type(obj) is dict for obj in objects):
                    line_start = base_lines + first + 1
                    rows.extend(map(HistoryRow, objects, range(line_start, line_start + len(batch)),
                                    offsets[first:last]))
                    continue
        # a batch with a special, blank or bad line: line by line, so the others are still read
        for index in range(first, last):
            raw = parts[index]
            offset = offsets[index]
            line_number = base_lines + index + 1
            if special[special_index] < offsets[index + 1]:
                while special[special_index] < offsets[index + 1]:
                    special_index += 1
                _decode_slow(path, raw, line_number, offset, rows, problems, max_line_bytes, max_fields)
                continue
            try:
                obj = loads(raw)
            except orjson.JSONDecodeError:
                _decode_slow(path, raw, line_number, offset, rows, problems, max_line_bytes, max_fields)
                continue
            if type(obj) is dict:
                rows.append(HistoryRow(obj, line_number, offset))
            else:
                problems.append(_not_an_object(path, obj, line_number, offset))


_KEY_END = b'":'  # ends a key (and, rarely, appears inside a string: the count is an upper bound)


def _next_line_start(start: int, length: int) -> int:
    return start + length + 1


def _special_positions(data: bytes) -> list[int]:
    """Sorted byte positions in ``data`` whose line must take the slow path."""
    masked = data.translate(_INTEGER_MASK)
    positions: list[int] = [0] if masked.startswith(_LONG_INTEGER[1:]) else []
    hit = masked.find(_LONG_INTEGER)
    while hit != -1:
        positions.append(hit + 1)
        hit = masked.find(_LONG_INTEGER, hit + len(_LONG_INTEGER))
    # A single-byte `in` is a memchr; metric names rarely hold capitals, so the slower
    # substring scans usually do not run at all.
    for marker in (b'"NaN"' if b"N" in data else None, b'Infinity"' if b"I" in data else None):
        if marker is None:
            continue
        hit = data.find(marker)
        while hit != -1:
            positions.append(hit)
            hit = data.find(marker, hit + 1)
    positions.sort()
    return positions


def decode_history_line(raw: bytes, *, nonfinite_strings: bool = True) -> Any:
    """Decode one line as we read history: orjson first, else Go-like UTF-8 and ``json.loads``.

    Returns the decoded value (an object, or whatever else the line holds); with
    ``nonfinite_strings`` the strings ``"NaN"``/``"Infinity"``/``"-Infinity"`` of metric values
    become floats. Raises ``ValueError`` with a message that says what is wrong; blank lines
    raise too (callers skip them before).
    """
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        value = _stdlib_loads(raw)
    else:
        if _needs_stdlib(raw):
            value = _stdlib_loads(raw)
    if nonfinite_strings and type(value) is dict:
        _restore_nonfinite(value)
    return value


def _needs_stdlib(raw: bytes) -> bool:
    masked = raw.translate(_INTEGER_MASK)
    return _LONG_INTEGER in masked or masked.startswith(_LONG_INTEGER[1:])


def _stdlib_loads(raw: bytes) -> Any:
    """json.loads on Go-decoded text: NaN/Infinity tokens, exact big integers, U+FFFD for bad bytes."""
    text = decode_go_utf8(raw)
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        if err.msg == "Extra data":
            raise ValueError(f"trailing data after the JSON value at column {err.colno}") from None
        raise ValueError(f"invalid JSON: {err.msg} at column {err.colno}") from None
    except RecursionError:
        raise ValueError("invalid JSON: nested too deeply") from None
    if "\\u" in text or "\\U" in text:
        # Go decodes a lone surrogate escape as U+FFFD; json.loads keeps the surrogate.
        value = _scrub_surrogates(value)
    return value


def _scrub_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace") if _has_surrogate(
            value) else value
    if isinstance(value, dict):
        return {_scrub_surrogates(k): _scrub_surrogates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub_surrogates(v) for v in value]
    return value


def _has_surrogate(text: str) -> bool:
    return any("\ud800" <= ch <= "\udfff" for ch in text)


def _restore_nonfinite(obj: dict[str, Any]) -> None:
    get = _NONFINITE_STRINGS.get
    for key, value in obj.items():
        if type(value) is str and not key.startswith("_"):
            number = get(value)
            if number is not None:
                obj[key] = number


def _decode_slow(
    path: str, raw: bytes, line_number: int, offset: int,
    rows: list[HistoryRow], problems: list[SourceProblem], max_line_bytes: int = 0, max_fields: int = 0,
) -> None:
    over = None
    if max_line_bytes and len(raw) > max_line_bytes:
        over = f"line is {len(raw)} bytes long, over the line limit of {max_line_bytes} bytes (--max-line-bytes)"
    elif max_fields and raw.count(_KEY_END) > max_fields:
        over = f"line has {raw.count(_KEY_END)} keys, over the limit of {max_fields} a row may have (--max-row-fields)"
    if over:
        problems.append(SourceProblem(
            path, ProblemKind.BAD_ROW,
            f"{over}; skipped it — fix the writer of this line or raise the limit (the other rows of the file were "
            "read)", line=line_number, offset=offset))
        return
    if not raw.strip():
        return  # blank or whitespace-only (incl. a lone "\r" of a CRLF file): nothing to read
    try:
        value = decode_history_line(raw)
    except ValueError as err:
        problems.append(SourceProblem(
            path, ProblemKind.BAD_ROW,
            f"{err}; a history line must be exactly one JSON object — fix the writer of this line "
            "(the other rows of the file were read)",
            line=line_number, offset=offset))
        return
    if type(value) is dict:
        rows.append(HistoryRow(value, line_number, offset))
    else:
        problems.append(_not_an_object(path, value, line_number, offset))


def _not_an_object(path: str, value: Any, line_number: int, offset: int) -> SourceProblem:
    if value is None:
        kind = "null"
    elif isinstance(value, bool):
        kind = "a boolean"
    elif isinstance(value, list):
        kind = "an array"
    elif isinstance(value, str):
        kind = "a string"
    else:
        kind = "a number"
    return SourceProblem(
        path, ProblemKind.BAD_ROW,
        f"line holds {kind}, not a JSON object; a history line must be one object such as "
        '{"_step": 0, "loss": 1.5} — fix the writer of this line (the other rows of the file were read)',
        line=line_number, offset=offset)


def complete_lines(path: str) -> tuple[int, int, str]:
    """(offset after the last newline, lines before it, SHA-256 hex of those bytes or "" at 0) of
    ``path``, read a block at a time: what ``--baseline-existing-history`` checkpoints."""
    digest = hashlib.sha256()
    end = lines = position = 0
    with open(path, "rb", buffering=0) as handle:
        while True:
            block = handle.read(_READ_BLOCK)
            if not block:
                break
            last = block.rfind(b"\n")
            if last >= 0:
                lines += block.count(b"\n")
                end = position + last + 1
            position += len(block)
    if end:
        with open(path, "rb", buffering=0) as handle:
            remaining = end
            while remaining:
                block = handle.read(min(_READ_BLOCK, remaining))
                if not block:
                    break
                digest.update(block)
                remaining -= len(block)
    return end, lines, digest.hexdigest() if end else ""


def history_metric_file_id(path: str) -> str:
    """TauGrid's ``metric_file_id`` of a history file: ``history-`` + 16 hex of its clean absolute path."""
    clean = os.path.normpath(os.path.abspath(path))
    if clean.startswith("//"):  # POSIX normpath keeps a leading "//"; Go's filepath.Clean does not
        clean = "/" + clean.lstrip("/")
    return "history-" + hashlib.sha256(clean.encode("utf-8", "surrogateescape")).hexdigest()[:16]
