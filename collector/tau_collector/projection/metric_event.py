"""TauGrid's canonical metric point ``tau.experiment.metric.v1``: model, validation, identity, NDJSON.

Field order, omitempty rules, validation messages, the deterministic ``event_id`` and the
canonical one-line encoding are those of TauGrid's ``core/exptelemetry/metric.go``; lines we
write are byte-identical to TauGrid's for the same input.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import orjson

from tau_collector.taugrid.gojson import (
    ZERO_TIME_NS,
    GoJSONError,
    encode_float,
    encode_string,
    encode_string_map,
    format_time,
    parse_time,
)

__all__ = [
    "METRIC_EVENT_SCHEMA_V1",
    "PROTECTED_FIELDS",
    "MetricEvent",
    "MetricEventError",
    "NotCanonicalError",
    "new_metric_event",
    "encode_ndjson",
    "encode_ndjson_many",
    "decode_canonical_line",
    "decode_canonical_ndjson",
    "deterministic_event_id",
]

METRIC_EVENT_SCHEMA_V1 = "tau.experiment.metric.v1"

# JSON key order of the Go struct; also the names a tag may not override.
FIELD_ORDER = (
    "schema_version",
    "event_id",
    "workspace_id",
    "cluster",
    "namespace",
    "source_store_id",
    "project",
    "experiment_id",
    "run_group_id",
    "run_id",
    "metric_name",
    "step",
    "wall_time",
    "value",
    "unit",
    "source",
    "split",
    "metric_file_id",
    "metric_file_path",
    "tags",
    "exported_at",
)
PROTECTED_FIELDS = frozenset(FIELD_ORDER) - {"tags"}
_REQUIRED_NON_BLANK = ("project", "experiment_id", "run_group_id", "run_id", "metric_name")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


class MetricEventError(ValueError):
    """The event breaks the v1 contract; the message is TauGrid's."""


class NotCanonicalError(MetricEventError):
    """A line that does not decode to an event or does not re-encode to the same bytes."""


@dataclass(slots=True)
class MetricEvent:
    """One scalar point. Times are integer nanoseconds since the Unix epoch, UTC (None = unset)."""

    project: str = ""
    experiment_id: str = ""
    run_group_id: str = ""
    run_id: str = ""
    metric_name: str = ""
    step: int = 0
    wall_time: int | None = None
    value: float = 0.0
    exported_at: int | None = None
    schema_version: str = ""
    event_id: str = ""
    workspace_id: str = ""
    cluster: str = ""
    namespace: str = ""
    source_store_id: str = ""
    unit: str = ""
    source: str = ""
    split: str = ""
    metric_file_id: str = ""
    metric_file_path: str = ""
    tags: dict[str, str] = field(default_factory=dict)

    def deterministic_event_id(self) -> str:
        return deterministic_event_id(
            workspace_id=self.workspace_id,
            cluster=self.cluster,
            namespace=self.namespace,
            source_store_id=self.source_store_id,
            metric_file_id=self.metric_file_id,
            project=self.project,
            experiment_id=self.experiment_id,
            run_group_id=self.run_group_id,
            run_id=self.run_id,
            metric_name=self.metric_name,
            step=self.step,
            wall_time=self.wall_time,
        )

    def validate(self) -> None:
        """Raise :class:`MetricEventError` with TauGrid's message for the first broken rule."""
        if self.schema_version != METRIC_EVENT_SCHEMA_V1:
            raise MetricEventError(f"unknown metric schema {_go_quote(self.schema_version)}")
        for name in _REQUIRED_NON_BLANK:
            if not getattr(self, name).strip():
                raise MetricEventError(f"{name} is required")
        if self.step < 0:
            raise MetricEventError("step must be nonnegative")
        if self.step > _INT64_MAX:
            raise MetricEventError("step must be representable as int64")
        _validate_time("wall_time", self.wall_time)
        _validate_time("exported_at", self.exported_at)
        if math.isnan(self.value) or math.isinf(self.value):
            raise MetricEventError("value must be finite")
        for key in self.tags:
            if key.strip() in PROTECTED_FIELDS:
                raise MetricEventError(f"tag {_go_quote(key)} cannot override a protected metric field")
        if not self.event_id:
            raise MetricEventError("event_id is required")
        want = self.deterministic_event_id()
        if self.event_id != want:
            raise MetricEventError(
                f"event_id {_go_quote(self.event_id)} does not match deterministic identity {_go_quote(want)}"
            )

    def to_ndjson(self) -> bytes:
        return encode_ndjson(self)


def new_metric_event(**fields: object) -> MetricEvent:
    """TauGrid's ``NewMetricEvent``: default the schema and event id, then validate."""
    event = MetricEvent(**fields)  # type: ignore[arg-type]
    _fill_defaults(event)
    event.validate()
    return event


def _fill_defaults(event: MetricEvent) -> None:
    if not event.schema_version:
        event.schema_version = METRIC_EVENT_SCHEMA_V1
    if not event.event_id:
        event.event_id = event.deterministic_event_id()


def _validate_time(name: str, value: int | None) -> None:
    if value is None or value == ZERO_TIME_NS:
        raise MetricEventError(f"{name} is required")
    try:
        format_time(value)
    except GoJSONError as exc:
        raise MetricEventError(f"{name} is invalid: {exc}") from None


def _go_quote(text: str) -> str:
    """Go's ``%q`` for the ASCII-printable strings that appear in messages (close enough elsewhere)."""
    return encode_string(text)


def deterministic_event_id(
    *,
    workspace_id: str,
    cluster: str,
    namespace: str,
    source_store_id: str,
    metric_file_id: str,
    project: str,
    experiment_id: str,
    run_group_id: str,
    run_id: str,
    metric_name: str,
    step: int,
    wall_time: int | None,
) -> str:
    """``"metric-" + sha256(json.Marshal(identity))``: compact, HTML-escaped, fixed key order."""
    return "metric-" + hashlib.sha256(
        identity_json(
            workspace_id, cluster, namespace, source_store_id, metric_file_id,
            project, experiment_id, run_group_id, run_id, metric_name, step, wall_time,
        ).encode("utf-8", "surrogatepass")
    ).hexdigest()


def identity_json(
    workspace_id: str,
    cluster: str,
    namespace: str,
    source_store_id: str,
    metric_file_id: str,
    project: str,
    experiment_id: str,
    run_group_id: str,
    run_id: str,
    metric_name: str,
    step: int,
    wall_time: int | None,
) -> str:
    """The identity preimage (exposed for tests and for fast paths that cache its prefix)."""
    h = _html
    return (
        '{"workspace_id":' + h(workspace_id)
        + ',"cluster":' + h(cluster)
        + ',"namespace":' + h(namespace)
        + ',"source_store_id":' + h(source_store_id)
        + ',"metric_file_id":' + h(metric_file_id)
        + ',"project":' + h(project)
        + ',"experiment_id":' + h(experiment_id)
        + ',"run_group_id":' + h(run_group_id)
        + ',"run_id":' + h(run_id)
        + ',"metric_name":' + h(metric_name)
        + ',"step":' + str(step)
        + ',"wall_time":' + _identity_time(wall_time)
        + "}"
    )


def _identity_time(wall_time: int | None) -> str:
    # json.Marshal of an unset time.Time writes the zero time; an invalid one fails the
    # marshal, which Go ignores (the id is then sha256 of empty input). Validation rejects
    # both before an id matters, but the id must still be computable.
    if wall_time is None:
        wall_time = ZERO_TIME_NS
    try:
        return '"' + format_time(wall_time) + '"'
    except GoJSONError:
        return ""


def _html(text: str) -> str:
    return encode_string(text, escape_html=True)


def _plain(text: str) -> str:
    return encode_string(text)


def encode_ndjson(event: MetricEvent) -> bytes:
    """TauGrid's ``EncodeMetricNDJSON``: normalize, validate, one compact line plus ``\\n``.

    The caller's event gets its defaults (schema version, event id) filled in.
    """
    _fill_defaults(event)
    event.validate()
    return _encode_validated(event)


def _encode_validated(e: MetricEvent) -> bytes:
    p = _plain
    parts = ['{"schema_version":', p(e.schema_version), ',"event_id":', p(e.event_id)]
    if e.workspace_id:
        parts += [',"workspace_id":', p(e.workspace_id)]
    if e.cluster:
        parts += [',"cluster":', p(e.cluster)]
    if e.namespace:
        parts += [',"namespace":', p(e.namespace)]
    if e.source_store_id:
        parts += [',"source_store_id":', p(e.source_store_id)]
    parts += [
        ',"project":', p(e.project),
        ',"experiment_id":', p(e.experiment_id),
        ',"run_group_id":', p(e.run_group_id),
        ',"run_id":', p(e.run_id),
        ',"metric_name":', p(e.metric_name),
        ',"step":', str(e.step),
        ',"wall_time":"', format_time(e.wall_time), '"',  # type: ignore[arg-type]
        ',"value":', encode_float(e.value),
    ]
    if e.unit:
        parts += [',"unit":', p(e.unit)]
    if e.source:
        parts += [',"source":', p(e.source)]
    if e.split:
        parts += [',"split":', p(e.split)]
    if e.metric_file_id:
        parts += [',"metric_file_id":', p(e.metric_file_id)]
    if e.metric_file_path:
        parts += [',"metric_file_path":', p(e.metric_file_path)]
    if e.tags:
        parts += [',"tags":', encode_string_map(e.tags)]
    parts += [',"exported_at":"', format_time(e.exported_at), '"}\n']  # type: ignore[arg-type]
    return "".join(parts).encode("utf-8", "surrogatepass")


def encode_ndjson_many(events: Iterable[MetricEvent]) -> bytes:
    return b"".join(encode_ndjson(e) for e in events)


# ---------------------------------------------------------------------------------------
# strict decoding (TauGrid's decodeCanonicalEvents / the collector's spool replay)

_STRING_FIELDS = frozenset(FIELD_ORDER) - {"step", "value", "wall_time", "exported_at", "tags"}


def decode_canonical_line(line: bytes, *, line_number: int = 1) -> MetricEvent:
    """Decode one NDJSON line (with its ``\\n``) and require it to be canonical.

    Unknown fields, wrong types, contract violations and any byte difference from the
    canonical re-encoding raise :class:`NotCanonicalError` naming the line.
    """
    where = f"chunk line {line_number}"
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise NotCanonicalError(f"{where}: invalid JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise NotCanonicalError(f"{where}: not a JSON object")
    values: dict[str, object] = {}
    for key, value in obj.items():
        if key in _STRING_FIELDS:
            if not isinstance(value, str):
                raise NotCanonicalError(f"{where}: {key} must be a string")
            values[key] = value
        elif key == "step":
            if not isinstance(value, int) or isinstance(value, bool):
                raise NotCanonicalError(f"{where}: step must be an integer")
            if not (_INT64_MIN <= value <= _INT64_MAX):
                raise NotCanonicalError(f"{where}: step overflows int64")
            values[key] = value
        elif key == "value":
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                raise NotCanonicalError(f"{where}: value must be a number")
            # Go writes -0.0 as `-0`, which orjson reads as the integer 0: keep its sign. Outside a
            # string (where `"` is escaped) these bytes can only be the value field itself.
            if value == 0 and isinstance(value, int) and b'"value":-0' in line:
                value = -0.0
            values[key] = float(value)
        elif key in ("wall_time", "exported_at"):
            if not isinstance(value, str):
                raise NotCanonicalError(f"{where}: {key} must be an RFC3339 string")
            try:
                values[key] = parse_time(value)
            except GoJSONError as exc:
                raise NotCanonicalError(f"{where}: {key}: {exc}") from None
        elif key == "tags":
            if value is None:
                continue
            if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
                raise NotCanonicalError(f"{where}: tags must be an object of strings")
            values[key] = value
        else:
            raise NotCanonicalError(f"{where}: json: unknown field {_go_quote(key)}")
    event = MetricEvent(**values)  # type: ignore[arg-type]
    try:
        _fill_defaults(event)
        event.validate()
    except MetricEventError as exc:
        raise NotCanonicalError(f"{where}: {exc}") from None
    if _encode_validated(event) != (line if line.endswith(b"\n") else line + b"\n"):
        raise NotCanonicalError(f"{where} is not canonical")
    return event


def decode_canonical_ndjson(data: bytes) -> list[MetricEvent]:
    """Decode a whole NDJSON chunk; every line must end with ``\\n`` and be canonical."""
    return list(iter_canonical_ndjson(data))


def iter_canonical_ndjson(data: bytes) -> Iterator[MetricEvent]:
    if data and not data.endswith(b"\n"):
        raise NotCanonicalError("chunk does not end with a newline")
    start = 0
    number = 0
    while start < len(data):
        end = data.index(b"\n", start) + 1
        number += 1
        yield decode_canonical_line(data[start:end], line_number=number)
        start = end


def replace(event: MetricEvent, **changes: object) -> MetricEvent:
    """A copy with ``changes``; the event id is recomputed unless given."""
    changes.setdefault("event_id", "")
    return dataclasses.replace(event, **changes)  # type: ignore[arg-type]
