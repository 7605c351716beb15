"""The records that flow from sources into the projection, and the problems sources report.

Sources decode bytes into :class:`HistoryRow` (one W&B-style history object) and report what
they could not read as :class:`SourceProblem`; nothing downstream re-reads source bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["HistoryRow", "SourceProblem", "ProblemKind"]


class ProblemKind:
    """The ``error`` strings of ``tau-collector dump``'s stderr and of the collector status."""

    BAD_ROW = "bad_row"  # JSONL line that is not a valid history object (or bad step/time)
    TRUNCATED = "truncated"  # event file ends inside a frame (writer mid-write); not an error
    CRC_MISMATCH = "crc_mismatch"  # complete frame whose checksum is wrong: the file stops here
    CORRUPT = "corrupt"  # a complete run's event file ends inside a record (cut, or a length it cannot hold)
    BAD_EVENT = "bad_event"  # frame verified but the payload is not a tensorflow.Event
    BAD_VALUE = "bad_value"  # a scalar summary whose tensor cannot be read as a number
    UNREADABLE = "unreadable"  # file cannot be opened/read (permissions, vanished, a directory)
    BAD_CONFIG = "bad_config"  # the run's configuration file cannot be read as one (not stored)
    CONFIG_CONFLICT = "config_conflict"  # the run already has another configuration (this one not stored)

    # A row or record skipped while the rest of its file is read: counted as rejected rows.
    REJECTED = frozenset({BAD_ROW, BAD_EVENT})


@dataclass(slots=True)
class HistoryRow:
    """One decoded history object with where it came from.

    ``fields`` is the JSON object as decoded: numbers are ``int`` or ``float`` (a float may be
    NaN or ±Inf: Python writes those tokens and we keep them as non-finite observations).
    ``line`` is the 1-based line number in a JSONL file, or the 1-based record number in an
    event file; ``offset`` is the byte offset of the row's first byte.
    """

    fields: dict[str, Any]
    line: int
    offset: int


@dataclass(slots=True)
class SourceProblem:
    """Something a source could not read. ``line`` or ``offset`` locate it in ``path``."""

    path: str
    kind: str
    message: str
    line: int | None = None
    offset: int | None = None

    def __str__(self) -> str:
        where = self.path
        if self.line is not None:
            where += f":{self.line}"
        elif self.offset is not None:
            where += f" at byte {self.offset}"
        return f"{where}: {self.message}"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"file": self.path}
        if self.line is not None:
            out["line"] = self.line
        if self.offset is not None:
            out["offset"] = self.offset
        out["error"] = self.kind
        out["message"] = self.message
        return out
