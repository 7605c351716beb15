"""Parameter importance: how much each hyperparameter of a set of runs tells about a metric's value.

W&B's definitions (its parameter-importance panel), ours in ``docs/comparing-runs.md``:

- **correlation**: the linear (Pearson) correlation of a parameter's value with the metric's value over the runs
  that have both, from -1 to 1; Spearman's (of the ranks) beside it. A categorical parameter is one-hot
  encoded and its correlation is that of the value whose indicator correlates most strongly (named in
  ``correlation_value``); a parameter with a single value has none (``null``).
- **importance**: a random forest (scikit-learn's ``RandomForestRegressor``) is fitted with the parameters as its
  inputs and the metric's value as its target; a parameter's importance is the forest's impurity-based feature
  importance (``feature_importances_``, summing to 1 over the inputs), summed over the columns that encode it
  (the one-hot columns of a categorical, a numeric's missing-value indicator). A parameter with one value in
  every run never splits a tree: its importance is 0.

The forest is bounded whatever the number of runs: :data:`FOREST_TREES` trees of depth at most :data:`FOREST_DEPTH`,
grown in this thread (``n_jobs=1``, ``random_state=0``) on at most :data:`FOREST_ROWS` runs: given the runs' ids,
those whose SHA-256 of the run id is smallest, in that order (a fixed sample that does not depend on the order the
runs were listed in, and that a new run changes by at most one row); without ids, the first ones. The
correlations are over every run.

Encoding: a parameter whose values are all numbers (booleans as 0/1) is numeric, a missing value being the
median of the others plus an indicator column; any other parameter is categorical, a run without it counting as
a value of its own ("missing"). scikit-learn, scipy and numpy are imported here only: when a request asks, or
in the background once a Portal has started (:func:`warm_up`), so that the first request does not wait for them.
"""

from __future__ import annotations

import hashlib
import math
import operator
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["FOREST_DEPTH", "FOREST_ROWS", "FOREST_TREES", "MISSING", "ParameterScore", "forest_rows",
           "score_parameters", "warm_up"]

FOREST_TREES = 24
FOREST_DEPTH = 10
FOREST_ROWS = 1000  # runs the forest is grown on (the sample the module doc states when there are more)
MISSING = "(missing)"
_ABSENT = object()
_NUMERIC_TYPES = {int, float, bool, object}  # object: _ABSENT's type
_VALUES_LIMIT = 32  # distinct values of a categorical parameter that get their own column; the rest share one


@dataclass(frozen=True, slots=True)
class ParameterScore:
    """One parameter's scores against the metric."""

    name: str
    kind: str  # numeric | categorical | constant
    runs: int  # runs that have the parameter
    importance: float
    correlation: float | None
    spearman: float | None
    correlation_value: str | None  # a categorical's value whose indicator gave the correlation


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _pearson(np, x, y) -> float | None:
    if x.size < 3:
        return None
    sx, sy = float(x.std()), float(y.std())
    if sx == 0.0 or sy == 0.0 or not math.isfinite(sx) or not math.isfinite(sy):
        return None
    r = float(np.mean((x - x.mean()) * (y - y.mean())) / (sx * sy))
    return max(-1.0, min(1.0, r))


def _spearman(np, x, y) -> float | None:
    from scipy.stats import rankdata

    return _pearson(np, rankdata(x), rankdata(y)) if x.size >= 3 else None


def _import_scoring() -> None:
    import numpy as np
    from scipy.stats import rankdata
    from sklearn.ensemble import RandomForestRegressor

    # A first fit loads what scikit-learn imports lazily (its tree builders, joblib's backends).
    RandomForestRegressor(n_estimators=2, random_state=0, n_jobs=1).fit(np.arange(8.0).reshape(4, 2),
                                                                         rankdata([3, 1, 2, 0]))


def warm_up() -> threading.Thread:
    """Import scikit-learn and scipy in a daemon thread (about a second that a Portal's first parameter-importance
    request would otherwise wait for); a request meanwhile waits on Python's import lock, never fails."""
    thread = threading.Thread(target=_import_scoring, name="importance-warm-up", daemon=True)
    thread.start()
    return thread


def forest_rows(n: int, ids: Sequence[str] | None) -> list[int]:
    """The rows the forest is grown on (the module doc's rule): at most :data:`FOREST_ROWS` of ``n``."""
    if ids is None:
        return list(range(min(n, FOREST_ROWS)))
    order = sorted(range(n), key=lambda i: hashlib.sha256(ids[i].encode()).digest())
    return order[:FOREST_ROWS]


def _columns(configs: Sequence[Mapping[str, Any]], keys: list[str]) -> list[Sequence[Any]]:
    """Each key's values over the configs (:data:`_ABSENT` where a config lacks it), read a row at a time (a
    config with every key through one C-level ``itemgetter``): 10,000 runs x 20 keys in milliseconds."""
    if not keys:
        return []
    getter = operator.itemgetter(*keys)
    one = len(keys) == 1
    absent = (_ABSENT,) * len(keys)
    rows = [((getter(c),) if one else getter(c)) if len(c) == len(keys)
            else tuple(map(c.get, keys, absent)) for c in configs]
    return list(zip(*rows, strict=True)) if rows else [() for _ in keys]


def score_parameters(configs: Sequence[Mapping[str, Any]], values: Sequence[float],
                     ids: Sequence[str] | None = None) -> list[ParameterScore]:
    """Each parameter of ``configs`` (one flattened config per run, ``{}`` for none) scored against ``values``
    (the runs' metric values, finite, same order; ``ids`` their run ids, which choose the forest's sample),
    most important first (then by |correlation|, then name)."""
    import numpy as np

    y = np.asarray(values, dtype=float)
    n = y.size
    keys = sorted({k for c in configs for k in c})
    columns: list[Any] = []  # the forest's input columns
    owners: list[int] = []  # column -> index of its parameter in keys
    partial: list[tuple[str, int, float | None, float | None, str | None]] = []
    for index, raw in enumerate(_columns(configs, keys)):
        kinds = set(map(type, raw))
        if kinds <= _NUMERIC_TYPES:
            # A number that is not finite counts as missing.
            x = np.array([math.nan if v is _ABSENT else v for v in raw] if object in kinds else raw, dtype=float)
            have = np.isfinite(x)
            present = int(have.sum())
            if np.unique(x[have]).size + (present < n) <= 1:
                partial.append(("constant", present, None, None, None))
                continue
            r = _pearson(np, x[have], y[have])
            rho = _spearman(np, x[have], y[have])
            columns.append(np.where(have, x, float(np.median(x[have]))))
            owners.append(index)
            if present < n:
                columns.append((~have).astype(float))
                owners.append(index)
            partial.append(("numeric", present, r, rho, None))
            continue
        present = n - raw.count(_ABSENT)
        texts = [MISSING if v is _ABSENT else _text(v) for v in raw]
        counts: dict[str, int] = {}
        for t in texts:
            counts[t] = counts.get(t, 0) + 1
        if len(counts) <= 1:
            partial.append(("constant", present, None, None, None))
            continue
        kept = sorted(counts, key=lambda t: (-counts[t], t))[:_VALUES_LIMIT]
        codes = {t: i for i, t in enumerate(kept)}
        coded = np.fromiter((codes.get(t, -1) for t in texts), dtype=np.int64, count=n)
        best: tuple[float, float | None, str | None] = (-1.0, None, None)
        for code, value in enumerate(kept):
            indicator = (coded == code).astype(float)
            columns.append(indicator)
            owners.append(index)
            r = _pearson(np, indicator, y)
            if r is not None and abs(r) > best[0]:
                best = (abs(r), r, value)
        if len(counts) > len(kept):
            columns.append((coded == -1).astype(float))
            owners.append(index)
        partial.append(("categorical", present, best[1], None, best[2]))
    importance = [0.0] * len(keys)
    if columns and n >= 2 and float(y.std()) > 0.0:
        from sklearn.ensemble import RandomForestRegressor

        # scikit-learn's bootstrap weights every row (unused ones by 0), so a forest costs what all its rows cost:
        # it is grown on a bounded sample of the runs.
        rows = np.asarray(forest_rows(n, ids), dtype=np.int64)
        features, target = np.column_stack(columns)[rows], y[rows]
        forest = RandomForestRegressor(n_estimators=FOREST_TREES, random_state=0, n_jobs=1,
                                       max_depth=FOREST_DEPTH, min_samples_leaf=2)
        forest.fit(features, target)
        for owner, share in zip(owners, forest.feature_importances_, strict=True):
            importance[owner] += float(share)
    out = [ParameterScore(name=key, kind=kind, runs=runs, importance=round(importance[i], 6), correlation=r,
                          spearman=rho, correlation_value=value)
           for i, (key, (kind, runs, r, rho, value)) in enumerate(zip(keys, partial, strict=True))]
    out.sort(key=lambda s: (-s.importance, -abs(s.correlation or 0.0), s.name))
    return out
