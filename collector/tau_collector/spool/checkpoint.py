"""TauGrid's ``checkpoint.json``, byte for byte: how far each source file has been consumed, the next
chunk sequence and the acknowledged terminal chunks (TAUGRID-REFERENCE §2.3). Written after every
delivered chunk (:mod:`.spool` orders the writes); loaded and validated on start.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field

import orjson

from tau_collector.spool.durable import write_file_atomic
from tau_collector.taugrid.gojson import GoMap, format_time, marshal

__all__ = ["CHECKPOINT_SCHEMA_V1", "Checkpoint", "SourceCheckpoint", "SpoolError", "valid_digest"]

CHECKPOINT_SCHEMA_V1 = "tau.experiment.metrics_checkpoint.v1"
_DIGEST = re.compile(r"[0-9a-f]{64}\Z")


class SpoolError(RuntimeError):
    """The spool or checkpoint cannot be trusted; the message says which file and what to do."""


def _now_text() -> str:
    return format_time(time.time_ns())


def valid_digest(value: object) -> bool:
    return isinstance(value, str) and _DIGEST.match(value) is not None


def _source_fragment(name: str, source: SourceCheckpoint, fragments: dict[str, tuple[SourceCheckpoint, bytes]]
                     ) -> bytes:
    """Entry ``name``'s JSON (key included), from ``fragments`` (one per name: the entry and its bytes when last
    encoded) if the entry is the same object. Entries are immutable and a copy shares them: an entry is encoded
    once, when it is made, not on every save."""
    cached = fragments.get(name)
    if cached is not None and cached[0] is source:
        return cached[1]
    fragment = b"\n    " + marshal(name) + b": " + marshal(source.to_go(), indent="  ", depth=2)
    fragments[name] = (source, fragment)
    return fragment


@dataclass(frozen=True, slots=True)
class SourceCheckpoint:
    """How far one source file has been consumed (TauGrid's ``SourceCheckpoint``); immutable: a change is a new
    entry, so checkpoints can share entries and their encoded bytes."""

    path: str
    file_id: str
    offset: int
    prefix_sha256: str = ""
    sequence: int = 0
    chunk_digest: str = ""
    lines: int = 0
    updated_at: str = ""

    def to_go(self) -> dict[str, object]:
        out: dict[str, object] = {"path": self.path, "file_id": self.file_id, "offset": self.offset}
        if self.prefix_sha256:
            out["prefix_sha256"] = self.prefix_sha256
        out["sequence"] = self.sequence
        if self.chunk_digest:
            out["chunk_digest"] = self.chunk_digest
        out["lines"] = self.lines
        out["updated_at"] = self.updated_at
        return out


@dataclass(slots=True)
class Checkpoint:
    config_identity: str
    next_sequence: int = 1
    sources: dict[str, SourceCheckpoint] = field(default_factory=dict)
    terminals: dict[str, tuple[int, str]] = field(default_factory=dict)  # observation id -> (seq, digest)
    updated_at: str = ""
    # Each source entry's JSON as last encoded, by path (shared with copies): the checkpoint is rewritten
    # after every chunk and all but a few entries are unchanged. One per path, so it is as bounded as the
    # checkpoint; paths that left it (folded files) are dropped.
    _fragments: dict[str, tuple[SourceCheckpoint, bytes]] = field(default_factory=dict, repr=False, compare=False)

    def to_bytes(self) -> bytes:
        """MarshalIndent of TauGrid's checkpoint struct, spliced from per-source fragments."""
        head = marshal({
            "schema_version": CHECKPOINT_SCHEMA_V1,
            "config_identity": self.config_identity,
            "next_sequence": self.next_sequence,
        }, indent="  ")[:-2]  # without the closing "\n}"
        if self.sources:
            fragments, sources_ = self._fragments, self.sources
            cached = fragments.get
            entries = b",".join([hit[1] if (hit := cached(path)) is not None and hit[0] is source
                                 else _source_fragment(path, source, fragments)
                                 for path, source in sorted(sources_.items())])
            if len(self._fragments) > 2 * len(self.sources) + 64:
                for gone in [path for path in self._fragments if path not in self.sources]:
                    del self._fragments[gone]
            sources = [b"{", entries, b"\n  }"]
        else:
            sources = [b"{}"]
        terminals = marshal(GoMap({
            key: {"sequence": seq, "chunk_digest": digest} for key, (seq, digest) in self.terminals.items()
        }), indent="  ", depth=1)
        # One join: the entries of a minute of closed files are a few hundred KB, copied once more, not per "+".
        return b"".join([head, b',\n  "sources": ', *sources, b',\n  "terminals": ', terminals,
                         b',\n  "updated_at": ', marshal(self.updated_at), b"\n}\n"])

    def copy(self) -> Checkpoint:
        return Checkpoint(
            self.config_identity,
            self.next_sequence,
            dict(self.sources),  # entries are immutable: shared
            dict(self.terminals),
            self.updated_at,
            self._fragments,
        )

    def adopt(self, other: Checkpoint) -> None:
        """Take over ``other``'s state (after it was saved): the in-memory checkpoint moves on."""
        self.next_sequence, self.sources = other.next_sequence, other.sources
        self.terminals, self.updated_at = other.terminals, other.updated_at

    @classmethod
    def load(cls, path: str, config_identity: str) -> tuple[Checkpoint, bool]:
        """The checkpoint at ``path`` (or a fresh one) for this configuration identity."""
        try:
            with open(path, "rb") as handle:
                raw = handle.read()
        except FileNotFoundError:
            return cls(config_identity), False
        except OSError as exc:
            raise SpoolError(f"cannot read checkpoint {path}: {exc.strerror or exc}") from None
        try:
            doc = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise SpoolError(f"checkpoint {path} is not valid JSON ({exc}); it was not written by a collector "
                             "or was damaged: move it away to start over") from None
        known = {"schema_version", "config_identity", "next_sequence", "sources", "terminals", "updated_at"}
        if not isinstance(doc, dict) or set(doc) - known:
            raise SpoolError(f"checkpoint {path} has unknown fields: {sorted(set(doc) - known)}")
        if doc.get("schema_version") != CHECKPOINT_SCHEMA_V1 or not isinstance(doc.get("next_sequence"), int) \
                or doc["next_sequence"] < 1 or not isinstance(doc.get("sources"), dict):
            raise SpoolError(f"checkpoint {path} has invalid schema or fields")
        if doc.get("config_identity") != config_identity:
            raise SpoolError(
                f"checkpoint {path} belongs to a different collector configuration "
                f"(config identity {doc.get('config_identity')!r}, this run has {config_identity!r}). "
                "The run, project, experiment, group, source, history, completion file, tags or sink "
                "changed since it was written. Restore the original flags, or use a new --out directory "
                "to collect with the new configuration"
            )
        checkpoint = cls(config_identity, doc["next_sequence"], updated_at=str(doc.get("updated_at", "")))
        source_keys = {"path", "file_id", "offset", "prefix_sha256", "sequence", "chunk_digest", "lines", "updated_at"}
        for key, value in doc["sources"].items():
            if not isinstance(value, dict) or set(value) - source_keys:
                raise SpoolError(f"checkpoint {path} has an invalid source {key!r}")
            try:
                source = SourceCheckpoint(**value)
            except TypeError:
                raise SpoolError(f"checkpoint {path} has an invalid source {key!r}") from None
            if source.path != key or not isinstance(source.offset, int) or source.offset < 0 \
                    or not isinstance(source.lines, int) or source.lines < 0 \
                    or (source.sequence == 0 and source.chunk_digest) \
                    or (source.sequence > 0 and not valid_digest(source.chunk_digest)):
                raise SpoolError(f"checkpoint {path} has an invalid source {key!r}")
            checkpoint.sources[key] = source
        terminals = doc.get("terminals") or {}
        if not isinstance(terminals, dict):
            raise SpoolError(f"checkpoint {path} has invalid terminals")
        for key, value in terminals.items():
            if not isinstance(value, dict) or not isinstance(value.get("sequence"), int) \
                    or value["sequence"] < 1 or not valid_digest(value.get("chunk_digest")):
                raise SpoolError(f"checkpoint {path} has an invalid terminal reference {key!r}")
            checkpoint.terminals[key] = (value["sequence"], value["chunk_digest"])
        return checkpoint, True

    def save(self, path: str) -> None:
        self.updated_at = _now_text()
        write_file_atomic(path, self.to_bytes())
