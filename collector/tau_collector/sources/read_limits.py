"""How much a source reads at once, and the sizes beyond which input is refused: defaults, env, flags.

A collector runs beside a training job that owns the machine's memory, so nothing a file says
sizes an allocation (DESIGN §3, "Bounded resources"). Every source reads in batches bounded by
bytes and by records (history lines or event-file records); a backlog of any size becomes a
sequence of such batches, each spooled and delivered as one chunk. A history line (or event
record) longer than ``max_line_bytes`` is skipped without being held; nested values deeper
than ``max_depth`` are dropped and counted.

Each limit has a flag on ``collect``, ``dump`` and ``taunotebook import`` and an environment
variable (used when the flag is absent); see ``docs/configuration.md``. ``taunotebook import`` starts
from :data:`IMPORT_LIMITS`: it reads a finished backlog in a process of its own, not beside a training
job, and a batch's fixed costs (a file, a transaction, a pass of the projection) are paid per batch.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace

__all__ = ["DEFAULT_LIMITS", "IMPORT_LIMITS", "Limits", "LimitsError", "add_arguments", "from_args"]

class LimitsError(ValueError):
    """A limit given on the command line or in the environment is not a positive integer."""


@dataclass(frozen=True, slots=True)
class Limits:
    """``batch_bytes``: source bytes per batch (a longer single line or record still makes one
    batch); ``batch_records``: history lines or event records per batch; ``max_line_bytes``: the
    longest line or record read; ``max_depth``: the deepest nesting flattened into metric names;
    ``max_row_fields``: the most keys a history line, or summary values an event record, may have (each
    numeric one is an event of ~700 bytes: 16 MiB of ``"k":1,`` would be two million events, gigabytes
    in one chunk); ``max_tensor_values``: the most values the tensor of a histogram, image or text summary
    may have (a histogram's buckets count three each, an image event's width and height two), checked before
    any is read: a 16 MiB record can hold a million buckets or strings, and a tensor's shape claim any number."""

    batch_bytes: int = 512 * 1024
    batch_records: int = 20_000
    max_line_bytes: int = 16 * 1024 * 1024
    max_depth: int = 32
    max_row_fields: int = 20_000
    max_tensor_values: int = 100_000


DEFAULT_LIMITS = Limits()
# A wide row (2,000 metrics: ~85 KB of JSON) filled a 512 KiB batch with 6 rows, 12,000 points a chunk;
# 4 MiB hold ~50 such rows (~100,000 points), while narrow lines stay bounded by ``batch_records``.
# Memory follows the points a batch holds: 4 MiB of JSON is some tens of MB decoded, once, in the importer.
IMPORT_LIMITS = Limits(batch_bytes=4 * 1024 * 1024)

_FLAGS = {  # field: (flag, environment variable, help)
    "batch_bytes": ("--batch-bytes", "TAU_COLLECTOR_BATCH_BYTES",
                    "source bytes read per batch, each delivered as one chunk"),
    "batch_records": ("--batch-records", "TAU_COLLECTOR_BATCH_RECORDS",
                      "history lines or event-file records per batch"),
    "max_line_bytes": ("--max-line-bytes", "TAU_COLLECTOR_MAX_LINE_BYTES",
                       "a longer history line or event record is skipped and reported"),
    "max_depth": ("--max-depth", "TAU_COLLECTOR_MAX_DEPTH",
                  "nested W&B/Tune values deeper than this are dropped and counted"),
    "max_row_fields": ("--max-row-fields", "TAU_COLLECTOR_MAX_ROW_FIELDS",
                       "a history line with more keys, or an event with more summary values, than this is "
                       "skipped and reported"),
    "max_tensor_values": ("--max-tensor-values", "TAU_COLLECTOR_MAX_TENSOR_VALUES",
                          "a histogram, image or text summary whose tensor has more values than this is skipped "
                          "and reported"),
}


def _positive(text: str) -> int:
    try:
        value = int(text.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {value}")
    return value


def add_arguments(parser: argparse.ArgumentParser | argparse._ArgumentGroup, defaults: Limits = DEFAULT_LIMITS) -> None:
    """The limit flags; each falls back to ``TAU_COLLECTOR_<NAME>`` and then its value in ``defaults``."""
    for field in fields(Limits):
        flag, env, text = _FLAGS[field.name]
        parser.add_argument(flag, type=_positive, metavar="N", dest=field.name,
                            help=f"{text} (default {getattr(defaults, field.name)}) [${env}]")


def from_args(args: argparse.Namespace, environ: Mapping[str, str] | None = None, *,
              defaults: Limits = DEFAULT_LIMITS) -> Limits:
    """The limits the flags in ``args`` give, with the environment where a flag is absent, else ``defaults``."""
    environ = os.environ if environ is None else environ
    values = {}
    for field in fields(Limits):
        value = getattr(args, field.name, None)
        if value is None:
            env = _FLAGS[field.name][1]
            raw = environ.get(env, "").strip()
            if raw:
                try:
                    value = _positive(raw)
                except argparse.ArgumentTypeError as exc:
                    raise LimitsError(f"${env}: {exc}") from None
        if value is not None:
            values[field.name] = value
    return replace(defaults, **values)
