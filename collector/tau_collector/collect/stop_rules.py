"""Stop on divergence: rules over the metrics the collector delivers, and the stop request a firing rule writes.

``--stop-on-nan [METRIC]`` fires on the first non-finite observation (NaN, +Inf or -Inf: Keras'
``TerminateOnNaN`` rule) of METRIC, or of any metric without one. ``--stop-if 'METRIC>VALUE'``
(also ``<``, ``>=``, ``<=``) fires on the first observation of METRIC that passes the comparison;
an infinite value compares as one (+Inf > 10), NaN passes none. Rules see every chunk the
collector delivers, finite points and the non-finite observations that never become MetricEvents
alike, in the order they were read.

The collector does not own the job: a firing rule writes ``stop-request.json`` (:data:`STOP_REQUEST`)
into its ``--out`` directory, once. ``tau-collector wrap`` watches for that file, stops the trainer
and records the run as cancelled with the request's words as the reason's message.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import orjson

from tau_collector.spool.durable import write_file_atomic

if TYPE_CHECKING:
    from tau_collector.sinks.base import Chunk

__all__ = ["StopRule", "StopRuleError", "StopWatch", "Firing", "parse_stop_if", "parse_stop_on_nan",
           "STOP_REQUEST", "REASON", "read_stop_request"]

STOP_REQUEST = "stop-request.json"
REASON = "metric-stop-rule"  # tau.status.reason of a run a rule stopped
_COMPARISON = re.compile(r"^\s*(?P<metric>[^<>=]*?)\s*(?P<op>>=|<=|>|<)\s*(?P<value>[^<>=]*?)\s*$")
_OPS = {">": np.greater, "<": np.less, ">=": np.greater_equal, "<=": np.less_equal}


class StopRuleError(ValueError):
    """A rule that cannot be read; the message names the flag and shows the right spelling."""


@dataclass(frozen=True, slots=True)
class StopRule:
    """``op`` is ``"non-finite"`` for ``--stop-on-nan`` (``metric`` "" = any metric), else a comparison."""

    metric: str
    op: str
    threshold: float = math.nan
    given: str = field(default="", compare=False)  # the comparison as the user spelled it (``loss>1e6``)

    @property
    def comparison(self) -> str:
        return self.given or f"{self.metric}{self.op}{_number(self.threshold)}"

    @property
    def text(self) -> str:
        """The rule as it was given on the command line."""
        if self.op == "non-finite":
            return "--stop-on-nan" + (f" {self.metric}" if self.metric else "")
        return f"--stop-if '{self.comparison}'"

    def as_args(self) -> list[str]:
        if self.op == "non-finite":
            return ["--stop-on-nan", self.metric] if self.metric else ["--stop-on-nan"]
        return ["--stop-if", self.comparison]


def parse_stop_if(text: str, *, flag: str = "--stop-if") -> StopRule:
    match = _COMPARISON.match(text)
    hint = (f"{flag} {text!r}: use METRIC>VALUE, METRIC<VALUE, METRIC>=VALUE or METRIC<=VALUE with a finite number, "
            f"e.g. {flag} 'loss>10'")
    if not match or not match["metric"] or not match["value"]:
        raise StopRuleError(hint)
    try:
        threshold = float(match["value"])
    except ValueError:
        raise StopRuleError(hint) from None
    if not math.isfinite(threshold):
        raise StopRuleError(f"{hint} (for NaN or infinity use --stop-on-nan)")
    return StopRule(match["metric"], match["op"], threshold, given=text.strip())


def parse_stop_on_nan(metric: str | None, *, flag: str = "--stop-on-nan") -> StopRule:
    metric = (metric or "").strip()
    if any(c in metric for c in "<>="):
        raise StopRuleError(f"{flag} {metric!r}: takes a metric name (or none for every metric); "
                            "for a comparison use --stop-if 'METRIC>VALUE'")
    return StopRule(metric, "non-finite")


@dataclass(frozen=True, slots=True)
class Firing:
    rule: StopRule
    metric: str
    step: int
    value: float

    @property
    def message(self) -> str:
        return f"stopped by {self.rule.text}: {self.metric} was {_number(self.value)} at step {self.step}"

    def as_json(self) -> dict:
        return {"rule": self.rule.text, "metric": self.metric, "step": self.step, "value": _number(self.value),
                "reason": REASON, "message": self.message}


class StopWatch:
    """Checks delivered chunks against the rules; the first firing writes the stop request, once."""

    def __init__(self, rules: list[StopRule], out_dir: str, *, log=None) -> None:
        self.rules = list(rules)
        self.path = os.path.join(out_dir, STOP_REQUEST)
        self.fired: Firing | None = None
        self._log = log

    def check(self, chunk: Chunk) -> Firing | None:
        """Called with every chunk the collector delivered; never raises into the collector."""
        if self.fired is not None or not self.rules:
            return self.fired
        firing = self._first_firing(chunk)
        if firing is not None:
            self.fired = firing
            try:
                write_file_atomic(self.path, orjson.dumps(firing.as_json(), option=orjson.OPT_APPEND_NEWLINE))
            except OSError as exc:  # the metrics still flow; only the stop is lost, and said so
                if self._log is not None:
                    self._log(f"{firing.message}, but the stop request could not be written ({exc}): "
                              f"the job keeps running")
                return firing
            if self._log is not None:
                self._log(f"{firing.message}; asked the job to stop ({self.path})")
        return firing

    def _first_firing(self, chunk: Chunk) -> Firing | None:
        found: list[tuple[int, Firing]] = []  # (read order, firing): the earliest observation wins
        points = chunk.points
        if points is not None and len(points):
            for rule in self.rules:
                if rule.op == "non-finite":
                    continue  # points are finite by construction
                codes = [i for i, name in enumerate(points.names) if name == rule.metric]
                if not codes:
                    continue
                hit = np.isin(points.key, codes) & _OPS[rule.op](points.value, rule.threshold)
                at = int(np.argmax(hit))
                if hit[at]:
                    found.append((at, Firing(rule, rule.metric, int(points.step[at]), float(points.value[at]))))
        elif chunk.kind == "history" and chunk.event_count and chunk.points is None:
            # A chunk replayed from the spool at start carries its events, not columns.
            for at, event in enumerate(chunk.decoded_events()):
                firing = self._match(event.metric_name, event.step, float(event.value), finite=True)
                if firing is not None:
                    found.append((at, firing))
                    break
        # Non-finite observations: their place among the chunk's points is not kept, so they follow them.
        for at, event in enumerate(chunk.non_finite, start=len(points) if points is not None else 0):
            firing = self._match(event.metric_name, event.step, float(event.value), finite=False)
            if firing is not None:
                found.append((at, firing))
                break
        return min(found, key=lambda item: item[0])[1] if found else None

    def _match(self, metric: str, step: int, value: float, *, finite: bool) -> Firing | None:
        for rule in self.rules:
            if rule.metric and rule.metric != metric:
                continue
            if rule.op == "non-finite":
                if not finite and not math.isfinite(value):
                    return Firing(rule, metric, step, value)
            elif bool(_OPS[rule.op](value, rule.threshold)):
                return Firing(rule, metric, step, value)
        return None


def read_stop_request(out_dir: str) -> dict | None:
    """The stop request a rule wrote into ``out_dir``, or None (none yet, or one being written)."""
    try:
        with open(os.path.join(out_dir, STOP_REQUEST), "rb") as handle:
            request = orjson.loads(handle.read())
    except (FileNotFoundError, orjson.JSONDecodeError):
        return None
    return request if isinstance(request, dict) else None


def _number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return repr(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)
