"""What the loss pane's polls learned about each drawn run, and which metrics are polled before the browser says
which it shows."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

from taunotebook.client import MetricSummary

__all__ = ["DEFAULT_VISIBLE", "RunView", "catalog_entry", "default_visible"]

DEFAULT_VISIBLE = 8  # metrics polled before the browser says which it shows


@dataclass
class RunView:
    """What the polls have learned about one drawn run."""

    state: str = ""
    status_message: str = ""
    warnings: list[str] = field(default_factory=list)
    names: list[str] | None = None  # every metric of the run, in the catalog's order; None before the first answer
    cursor: str | None = None  # the Portal's name for ``names``: they come again only when they change
    entries: dict[str, dict] = field(default_factory=dict)  # catalog entries of the visible metrics


def default_visible(names: Iterable[str], fixed: list[str] | None) -> list[str]:
    """The metrics polled before the browser says which it shows: ``metrics=`` (the first
    :data:`DEFAULT_VISIBLE`), else the loss-like ones (name contains "loss") then the first others, catalog order."""
    if fixed:
        return fixed[:DEFAULT_VISIBLE]
    names = [n for n in names if not n.startswith("tau/")]
    lossy = [n for n in names if "loss" in n.lower()]
    others = [n for n in names if "loss" not in n.lower()]
    return (lossy + others)[:DEFAULT_VISIBLE]


def catalog_entry(m: MetricSummary) -> dict:
    """A catalog entry as the ``runs`` trait carries it: the wire's names, a non-finite latest value as None."""
    value = m.latest_value if m.latest_value is None or math.isfinite(m.latest_value) else None
    return {"count": m.count, "latest_step": m.latest_step, "latest_value": value,
            "non_finite_count": m.non_finite_count}
