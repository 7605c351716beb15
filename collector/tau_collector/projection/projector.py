"""History rows → canonical MetricEvents, by TauGrid's JSONL projection rules (``history.go``).

One :class:`Projector` is built per (run identity, history file). It validates the
configuration once, then projects rows on a fast path that assembles the canonical NDJSON
line and the identity preimage from cached fragments;
:func:`.projection_reference.project_row_reference` is the straightforward spelling of the same
rules, used by the tests to check the fast path.

Where we differ from TauGrid (DESIGN §5): a NaN/±Inf metric value is not a fatal error but a
*non-finite observation* — returned beside the events as a MetricEvent-shaped record whose
value is not finite, never encoded as NDJSON.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from tau_collector.projection.cards import is_standard_metric, metric_card
from tau_collector.projection.metric_event import (
    METRIC_EVENT_SCHEMA_V1,
    PROTECTED_FIELDS,
    MetricEvent,
)
from tau_collector.sources.records import HistoryRow
from tau_collector.taugrid.gojson import GoJSONError, encode_float, encode_string, format_time, unix_seconds_to_ns

__all__ = [
    "source_file",
    "source_line",
    "JSONL_IMPORTER_VERSION",
    "PROTECTED_JSONL_TAGS",
    "ProjectionConfig",
    "ProjectionError",
    "Projected",
    "Projector",
    "RowError",
    "history_step",
    "history_time_ns",
    "metric_number",
]

JSONL_IMPORTER_VERSION = "tau.jsonl.import.v1"
PROTECTED_JSONL_TAGS = frozenset(
    {
        "jsonl.raw_key",
        "jsonl.history_file",
        "jsonl.history_path",
        "jsonl.history_line",
        "jsonl.importer",
        "tau.metric.card",
        "tau.metric.standard",
    }
)
_INT64_MAX = 2**63 - 1
_TWO_63 = float(2**63)


class ProjectionError(ValueError):
    """The projection configuration itself is invalid (nothing can be projected)."""


class RowError(ValueError):
    """One history row cannot be projected; the message is TauGrid's (``_step: must be …``)."""


@dataclass(frozen=True, slots=True)
class ProjectionConfig:
    """Run identity and options, shared by every history file of one collector."""

    project: str
    experiment_id: str
    run_group_id: str
    run_id: str
    exported_at: int  # ns since the epoch, UTC
    workspace_id: str = ""
    cluster: str = ""
    namespace: str = ""
    source_store_id: str = ""
    metric_prefix: str = ""
    source: str = "jsonl"
    tags: Mapping[str, str] = field(default_factory=dict)
    step_field: str = "_step"
    time_field: str = "_timestamp"


@dataclass(slots=True)
class Projected:
    """What rows became: canonical lines (with their events) and non-finite observations.

    ``points``, when asked for, lists the finite points column by column as the store keeps them
    (:mod:`tau_collector.projection.columns` turns them into :class:`~.projection_columns.PointColumns`).
    """

    lines: list[bytes]
    events: list[MetricEvent]
    non_finite: list[MetricEvent]
    points: PointLists | None = None
    # With ``joined``, the lines are moved here as they are made, joined in blocks of a thousand rows'
    # lines instead of a bytes object per line (tens of megabytes less for a large batch); ``lines`` is
    # then empty. Blocks, not one growing buffer: the spool joins them once, one copy of the chunk.
    ndjson: list[bytes] | None = None
    joined_count: int = 0

    @property
    def line_count(self) -> int:
        return self.joined_count + len(self.lines)

    def join_lines(self) -> None:
        """Move the lines made so far into ``ndjson``."""
        if self.ndjson is not None and self.lines:
            self.ndjson.append(b"".join(self.lines))
            self.joined_count += len(self.lines)
            self.lines.clear()


@dataclass(slots=True)
class PointLists:
    """Finite points as parallel lists: raw key, step, wall time (ns), value, history line."""

    keys: list[str] = field(default_factory=list)
    steps: list[int] = field(default_factory=list)
    walls: list[int] = field(default_factory=list)
    values: list[float] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.keys)

    def truncate(self, size: int) -> None:
        for column in (self.keys, self.steps, self.walls, self.values, self.lines):
            del column[size:]


# ---------------------------------------------------------------------------------------
# TauGrid's step / time / number rules


def history_step(value: object) -> int:
    """``historyStep``: exact int64 for integers, truncation for floats."""
    if isinstance(value, int) and not isinstance(value, bool):
        if -(2**63) <= value <= _INT64_MAX:
            if value < 0:
                raise RowError("must be nonnegative")
            return value
        try:
            number = float(value)
        except OverflowError:
            raise RowError("must be numeric and representable as int64") from None
    elif isinstance(value, float):
        number = value
    else:
        raise RowError("must be numeric and representable as int64")
    if math.isnan(number) or math.isinf(number) or number > _TWO_63 or number < -_TWO_63:
        raise RowError("must be numeric and representable as int64")
    if number == _TWO_63:
        # Go's int64(2^63) wraps to MinInt64 on the platforms TauGrid runs on.
        raise RowError("must be nonnegative")
    step = int(number)
    if step < 0:
        raise RowError("must be nonnegative")
    return step


def history_time_ns(value: object) -> int:
    """``historyTime``: ``time.UnixMicro(int64(seconds * 1e6))`` as integer nanoseconds."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise RowError("must be finite epoch seconds")
    try:
        number = float(value)
    except OverflowError:
        raise RowError("must be finite epoch seconds") from None
    if math.isnan(number) or math.isinf(number):
        raise RowError("must be finite epoch seconds")
    return unix_seconds_to_ns(number)


def metric_number(value: object) -> float | None:
    """A metric value as float64 (possibly non-finite), or None when the value is not numeric."""
    if isinstance(value, float):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            return float(value)
        except OverflowError:  # an integer beyond float64: Go's ParseFloat overflows to ±Inf
            return math.inf if value > 0 else -math.inf
    return None


def compact_tags(tags: Mapping[str, str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in tags.items():
        key = key.strip()
        if key:
            out[key] = value.strip()
    return out


def go_base(path: str) -> str:
    """Go's ``filepath.Base`` on Linux: last element, trailing slashes ignored, "." for ""."""
    if not path:
        return "."
    stripped = path.rstrip("/")
    if not stripped:
        return "/"
    return stripped.rsplit("/", 1)[-1]


def prefixed(prefix: str, name: str) -> str:
    if prefix:
        return prefix.removesuffix("/") + "/" + name
    return name


# ---------------------------------------------------------------------------------------
# the fast projector


class Projector:
    """Projects the rows of one history file for one run configuration.

    ``history_path`` is the path as given (tag ``jsonl.history_path``; its base name is
    ``jsonl.history_file``); ``metric_file_id``/``metric_file_path`` identify the logical
    source (TauGrid: ``history-<16 hex>`` and the absolute path).
    """

    def __init__(
        self,
        config: ProjectionConfig,
        *,
        history_path: str,
        metric_file_id: str = "",
        metric_file_path: str = "",
        with_events: bool = True,
        with_lines: bool = True,
    ) -> None:
        self.config = config
        self.with_events = with_events
        self.with_lines = with_lines
        for name in ("project", "experiment_id", "run_group_id", "run_id"):
            if not getattr(config, name).strip():
                raise ProjectionError(f"{name} is required")
        for key in config.tags:
            if key.strip() in PROTECTED_JSONL_TAGS:
                raise ProjectionError(f"tag {encode_string(key)} cannot override protected JSONL metadata")
        self._user_tags = compact_tags(config.tags)
        for key in self._user_tags:
            if key in PROTECTED_FIELDS:
                raise ProjectionError(f"tag {encode_string(key)} cannot override a protected metric field")
        try:
            self._exported = format_time(config.exported_at)
        except GoJSONError as exc:
            raise ProjectionError(f"exported_at is invalid: {exc}") from None
        self._history_path = history_path
        self._history_file = go_base(history_path)
        self._metric_file_id = metric_file_id
        self._metric_file_path = metric_file_path
        self._step_field = config.step_field or "_step"
        self._time_field = config.time_field or "_timestamp"
        self._source = config.source or "jsonl"
        self._build_templates()
        self._metric_cache: dict[str, MetricPieces | None] = {}
        self._keys_cache: dict[tuple[str, ...], list[str]] = {}
        self._time_cache: tuple[int, str] = (-1, "")

    def _build_templates(self) -> None:
        c = self.config
        p = encode_string
        h = _html
        head = []
        for name, value in (
            ("workspace_id", c.workspace_id),
            ("cluster", c.cluster),
            ("namespace", c.namespace),
            ("source_store_id", c.source_store_id),
        ):
            if value:
                head.append(f',"{name}":{p(value)}')
        head.append(
            f',"project":{p(c.project)},"experiment_id":{p(c.experiment_id)}'
            f',"run_group_id":{p(c.run_group_id)},"run_id":{p(c.run_id)},"metric_name":'
        )
        self._line_head = "".join(head)
        tail = []
        for name, value in (
            ("source", self._source),
            ("metric_file_id", self._metric_file_id),
            ("metric_file_path", self._metric_file_path),
        ):
            if value:
                tail.append(f',"{name}":{p(value)}')
        self._line_mid = "".join(tail) + ',"tags":{'
        self._line_end = '},"exported_at":"' + self._exported + '"}\n'
        self._identity_head = (
            f'{{"workspace_id":{h(c.workspace_id)},"cluster":{h(c.cluster)},"namespace":{h(c.namespace)}'
            f',"source_store_id":{h(c.source_store_id)},"metric_file_id":{h(self._metric_file_id)}'
            f',"project":{h(c.project)},"experiment_id":{h(c.experiment_id)}'
            f',"run_group_id":{h(c.run_group_id)},"run_id":{h(c.run_id)},"metric_name":'
        )
        # Every event carries the same tag keys (user tags + the seven JSONL keys); only some
        # values vary. Lay the sorted keys out once, marking the varying slots.
        constant = dict(self._user_tags)
        constant["jsonl.history_file"] = self._history_file
        constant["jsonl.history_path"] = self._history_path
        constant["jsonl.importer"] = JSONL_IMPORTER_VERSION
        varying = ("jsonl.raw_key", "jsonl.history_line", "tau.metric.card", "tau.metric.standard")
        keys = sorted([*constant, *varying])
        self._tag_layout: list[tuple[str, str | None]] = []  # (encoded "key": prefix, varying slot or None)
        for index, key in enumerate(keys):
            sep = "," if index else ""
            if key in constant:
                self._tag_layout.append((sep + p(key) + ":" + p(constant[key]), None))
            else:
                self._tag_layout.append((sep + p(key) + ":", key))
        self._constant_tags = constant

    def _metric(self, raw_key: str) -> MetricPieces | None:
        """Per-key fragments, computed once per key and file."""
        try:
            return self._metric_cache[raw_key]
        except KeyError:
            pass
        name = raw_key.strip()
        pieces: MetricPieces | None = None
        if name:
            name = prefixed(self.config.metric_prefix, name)
            card = metric_card(name)
            standard = "true" if is_standard_metric(name) else "false"
            slots = {
                "jsonl.raw_key": encode_string(raw_key),
                "tau.metric.card": encode_string(card),
                "tau.metric.standard": '"' + standard + '"',
                "jsonl.history_line": "\0",  # the one per-row slot
            }
            layout = "".join(
                prefix if slot is None else prefix + slots[slot] for prefix, slot in self._tag_layout
            )
            before_line, after_line = layout.split("\0")
            tags = dict(self._constant_tags)
            tags["jsonl.raw_key"] = raw_key
            tags["tau.metric.card"] = card
            tags["tau.metric.standard"] = standard
            pieces = MetricPieces(
                name=name,
                identity_head=self._identity_head + _html(name),
                line_head='"' + self._line_head + encode_string(name),
                line_tags_head=self._line_mid + before_line,
                line_tags_tail=after_line + self._line_end,
                tags=tags,
            )
        self._metric_cache[raw_key] = pieces
        return pieces

    def metric_tags(self, raw_key: str) -> tuple[str, dict[str, str]] | None:
        """What a row's ``raw_key`` projects to, for column writers: (metric name, tags without
        ``jsonl.history_line``), or None when the key is not a metric (the step or time field,
        ``_``-prefixed, blank). A column writer adds the row's line to the tags."""
        if raw_key == self._step_field or raw_key == self._time_field or raw_key.startswith("_"):
            return None
        pieces = self._metric(raw_key)
        return None if pieces is None else (pieces.name, pieces.tags)

    def _time_text(self, ns: int) -> str:
        last_ns, last_text = self._time_cache
        if ns == last_ns:
            return last_text
        text = format_time(ns)
        self._time_cache = (ns, text)
        return text

    def _metric_keys(self, fields: dict[str, object]) -> list[str]:
        shape = tuple(fields)
        keys = self._keys_cache.get(shape)
        if keys is None:
            step_field, time_field = self._step_field, self._time_field
            keys = sorted(k for k in shape if k != step_field and k != time_field and not k.startswith("_"))
            if len(self._keys_cache) < 1024:
                self._keys_cache[shape] = keys
        return keys

    def project(self, row: HistoryRow) -> Projected:
        """Project one row; raises :class:`RowError` (TauGrid's message) for a bad row."""
        out = Projected([], [], [])
        self._project_into(row, out)
        return out

    def project_rows(self, rows: Iterable[HistoryRow], *, points: bool = False, joined: bool = False
                     ) -> tuple[Projected, list[tuple[HistoryRow, RowError]]]:
        """Project many rows; a bad row is returned with its error and does not stop the others.

        ``points`` also lists the finite points in :attr:`Projected.points`; ``joined`` collects the
        lines in :attr:`Projected.ndjson`."""
        out = Projected([], [], [], PointLists() if points else None, [] if joined else None)
        errors: list[tuple[HistoryRow, RowError]] = []
        for index, row in enumerate(rows):
            if joined and not index % 1024:
                out.join_lines()
            mark = (len(out.lines), len(out.events), len(out.non_finite), len(out.points or ()))
            try:
                self._project_into(row, out)
            except RowError as exc:
                # A row is all or nothing, as in TauGrid: drop what it had produced.
                del out.lines[mark[0]:], out.events[mark[1]:], out.non_finite[mark[2]:]
                if out.points is not None:
                    out.points.truncate(mark[3])
                errors.append((row, exc))
        out.join_lines()
        return out, errors

    def metric_pieces(self, raw_key: str) -> MetricPieces | None:
        """The cached fragments of a metric key (None: not a metric), for bulk line builders."""
        if raw_key == self._step_field or raw_key == self._time_field or raw_key.startswith("_"):
            return None
        return self._metric(raw_key)

    def time_text(self, ns: int) -> str:
        """``format_time`` of the last time asked again is free: rows of one step share it."""
        return self._time_text(ns)

    def _project_into(self, row: HistoryRow, out: Projected) -> None:
        fields = row.fields
        if row.line < 1:
            raise RowError("history line must be positive")
        raw_step = fields.get(self._step_field)
        if type(raw_step) is int and 0 <= raw_step <= _INT64_MAX:
            step = raw_step
        else:
            try:
                step = history_step(raw_step)
            except RowError as exc:
                raise RowError(f"{self._step_field}: {exc}") from None
        raw_time = fields.get(self._time_field)
        if type(raw_time) is float and raw_time - raw_time == 0.0:
            wall_ns = int(raw_time * 1_000_000) * 1000
        else:
            try:
                wall_ns = history_time_ns(raw_time)
            except RowError as exc:
                raise RowError(f"{self._time_field}: {exc}") from None
        keys = self._metric_keys(fields)
        if not keys:
            return
        lines, with_events, with_lines, points = out.lines, self.with_events, self.with_lines, out.points
        metric_cache = self._metric_cache
        step_time = ""
        line_text = '"' + str(row.line) + '"'
        sha256 = hashlib.sha256
        for raw_key in keys:
            value = fields[raw_key]
            if type(value) is not float:
                value = metric_number(value)
                if value is None:
                    continue
            metric = metric_cache.get(raw_key) if raw_key in metric_cache else self._metric(raw_key)
            if metric is None:
                continue
            if not step_time:
                try:
                    step_time = f',"step":{step},"wall_time":"{self._time_text(wall_ns)}"'
                except GoJSONError as exc:
                    raise RowError(
                        f"project metric {encode_string(raw_key)}: wall_time is invalid: {exc}"
                    ) from None
            finite = value - value == 0.0
            if finite and points is not None:
                points.keys.append(raw_key)
                points.steps.append(step)
                points.walls.append(wall_ns)
                points.values.append(value)
                points.lines.append(row.line)
            if finite and not with_lines:
                continue
            # Strings in the fragments are already JSON-escaped (lone surrogates included),
            # so a plain UTF-8 encode cannot fail.
            event_id = "metric-" + sha256(f"{metric.identity_head}{step_time}}}".encode()).hexdigest()
            if finite:
                number = repr(value)  # encode_float's fast path, inlined: this loop is the hot path
                if "e" in number:
                    number = encode_float(value)
                elif number.endswith(".0"):
                    number = number[:-2]
                lines.append(
                    f'{{"schema_version":"{METRIC_EVENT_SCHEMA_V1}","event_id":"{event_id}{metric.line_head}'
                    f'{step_time},"value":{number}{metric.line_tags_head}{line_text}'
                    f"{metric.line_tags_tail}".encode()
                )
                if with_events:
                    out.events.append(self._event(metric, step, wall_ns, value, event_id, row.line))
            else:
                out.non_finite.append(self._event(metric, step, wall_ns, value, event_id, row.line))

    def _event(
        self, metric: MetricPieces, step: int, wall_ns: int, value: float, event_id: str, line: int
    ) -> MetricEvent:
        c = self.config
        tags = dict(metric.tags)
        tags["jsonl.history_line"] = str(line)
        return MetricEvent(
            schema_version=METRIC_EVENT_SCHEMA_V1,
            event_id=event_id,
            workspace_id=c.workspace_id,
            cluster=c.cluster,
            namespace=c.namespace,
            source_store_id=c.source_store_id,
            project=c.project,
            experiment_id=c.experiment_id,
            run_group_id=c.run_group_id,
            run_id=c.run_id,
            metric_name=metric.name,
            step=step,
            wall_time=wall_ns,
            value=value,
            source=self._source,
            metric_file_id=self._metric_file_id,
            metric_file_path=self._metric_file_path,
            tags=tags,
            exported_at=c.exported_at,
        )


@dataclass(frozen=True, slots=True)
class MetricPieces:
    name: str
    identity_head: str  # identity preimage up to and including the metric name
    line_head: str  # NDJSON after the event id up to and including the metric name
    line_tags_head: str  # from after the value up to the jsonl.history_line value
    line_tags_tail: str  # from after the jsonl.history_line value to the end of the line
    tags: dict[str, str]


def _html(text: str) -> str:
    return encode_string(text, escape_html=True)


def source_file(event: MetricEvent) -> str:
    """The history file an event was projected from (its ``jsonl.history_path`` tag), or "" for other sources."""
    return event.tags.get("jsonl.history_path", "")


def source_line(event: MetricEvent) -> int:
    """The history line an event was projected from, or 0 for other sources."""
    return int(event.tags.get("jsonl.history_line", "0"))
