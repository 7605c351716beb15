"""The parameter-importance answer on the wire (our addition): its encoder and its OpenAPI fragment."""

from __future__ import annotations

from collections.abc import Iterable

from ..importance import ParameterScore
from .common import NONNEG, ref

__all__ = ["PARAMETER_IMPORTANCE", "PARAMETER_SCORE", "parameter_importance_json"]

_UNIT = {"type": "number", "nullable": True, "minimum": -1, "maximum": 1}

PARAMETER_SCORE = {
    "type": "object",
    "required": ["name", "kind", "runs", "importance", "correlation", "spearman", "correlation_value"],
    "properties": {
        "name": {"type": "string", "description": "the flattened config key"},
        "kind": {"type": "string", "enum": ["numeric", "categorical", "constant"]},
        "runs": NONNEG,
        "importance": {"type": "number", "minimum": 0, "maximum": 1,
                       "description": "the random forest's impurity importance, summed over the parameter's columns"},
        "correlation": {**_UNIT, "description": "Pearson's r with the metric's value (null: undefined)"},
        "spearman": {**_UNIT, "description": "Spearman's rho (numeric parameters)"},
        "correlation_value": {"type": "string", "nullable": True,
                              "description": "a categorical's value whose indicator gave the correlation"},
    },
}

PARAMETER_IMPORTANCE = {
    "type": "object",
    "required": ["metadata", "metric", "reduction", "goal", "run_count", "valued_run_count", "limits",
                 "parameters"],
    "properties": {
        "metadata": ref("Metadata"),
        "metric": {"type": "string"},
        "reduction": {"type": "string", "enum": ["final", "best", "latest"]},
        "goal": {"type": "string", "enum": ["min", "max"]},
        "run_count": NONNEG,
        "valued_run_count": NONNEG,
        "limits": {"type": "object", "properties": {"runs": NONNEG, "parameters": NONNEG, "min_runs": NONNEG}},
        "parameters": {"type": "array", "items": ref("ParameterScore"),
                       "description": "most important first; empty when too few runs (said in metadata)"},
    },
}


def parameter_importance_json(meta: dict, metric: str, reduction: str, goal: str, run_count: int,
                              valued_run_count: int, limits: dict, scores: Iterable[ParameterScore]) -> dict:
    """The answer's body, key order as the fragment lists it."""
    return {
        "metadata": meta, "metric": metric, "reduction": reduction, "goal": goal, "run_count": run_count,
        "valued_run_count": valued_run_count, "limits": limits,
        "parameters": [{"name": s.name, "kind": s.kind, "runs": s.runs, "importance": s.importance,
                        "correlation": s.correlation, "spearman": s.spearman,
                        "correlation_value": s.correlation_value} for s in scores],
    }
