"""TauGrid's ``ClassifyRun``: a run's lifecycle state, whether it succeeded, and why, from its row, tags and summaries.

One rule for everyone who needs it: the Portal's run answers (``lifecycle_state``, ``successful``,
``success_reasons``) and the writer, which keeps each run's lifecycle in the index's run listing
(``tau_collector.expstore.write.listing``) so that listings filter and count by it without reading summaries.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["FAILURE_METRIC_TOKENS", "MIN_STEP_TAGS", "classify"]

FAILURE_METRIC_TOKENS = ("collapse_bad_steps", "bad_steps", "nan_steps", "inf_steps", "oom", "failed", "failure",
                         "error_count", "errors")
MIN_STEP_TAGS = ("tau.success.min_step", "success.min_step", "expected_max_step", "max_step")
_INT = re.compile(r"[+-]?[0-9]+")


def classify(state: str, completed_at: str | None, tags: Mapping[str, str],
             summaries: Iterable[Any]) -> tuple[str, bool, list[str]]:
    """(lifecycle_state, successful, success_reasons); ``summaries`` have ``metric_name``, ``max_step``,
    ``non_finite_count``, ``finite_count`` and ``max_value`` (e.g. :class:`~.rows.MetricSummaryRow`)."""
    state = state.strip().lower()
    if state in ("pending", "running"):
        return state, False, [f"run is {state}"]
    if state == "failed":
        return "failed", False, ["run state is failed"]
    if state not in ("succeeded", "completed"):
        if not (completed_at or "").strip():
            return "pending", False, ["run has not reached a terminal state"]
        return "incomplete", False, ["run state is not recognized as succeeded"]
    summaries = list(summaries)
    reasons = []
    steps = [s.max_step for s in summaries if s.max_step is not None]
    max_step = max(steps) if steps else None
    min_step = None
    for key in MIN_STEP_TAGS:
        raw = tags.get(key, "").strip()
        if _INT.fullmatch(raw):
            min_step = int(raw)
            break
    if min_step is not None and (max_step is None or max_step < min_step):
        got = "none" if max_step is None else str(max_step)
        reasons.append(f"max step {got} is below required step {min_step}")
    for s in summaries:
        if s.non_finite_count > 0:
            reasons.append(f"{s.metric_name} has {s.non_finite_count} non-finite values")
        name = s.metric_name.lower()
        if (any(t in name for t in FAILURE_METRIC_TOKENS) and s.finite_count > 0 and s.max_value is not None
                and s.max_value > 0):
            reasons.append(f"{s.metric_name} indicates failure with max value {_go_g6(s.max_value)}")
    if reasons:
        return "incomplete", False, reasons
    return "succeeded", True, ["run state succeeded and success gates passed"]


def _go_g6(value: float) -> str:
    # strconv.FormatFloat(v, 'g', 6, 64): like %g, but Go writes exponents with at least two digits too.
    return f"{value:.6g}"
