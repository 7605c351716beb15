"""``GET /api/v2/stellar/parameter-importance`` (our addition): each hyperparameter's correlation with and
random-forest importance for a metric's final, best or latest value, over a set of runs.

The runs are those of the named experiments (``experiment_id``, repeatable) and runs (``run_id``, repeatable),
or, when neither is named, every run of the workspace; ``project`` narrows them. At most :data:`RUNS_LIMIT` runs
(the newest) and :data:`PARAMETERS_LIMIT` parameters (those most runs have) are scored; a cut is said in the
answer. A run's value is read from its metric summary (``latest_value``, ``min_value``, ``max_value``; no
series): ``final`` is the latest value of a run that has ended (not pending or running), ``latest`` that of any
run, ``best`` its minimum or maximum by ``goal`` (``min`` or ``max``; by default ``max`` for a metric whose
name says accuracy, reward, score and the like, else ``min``). Its parameters are its config's flattened fields.
The scores are defined in :mod:`..importance`; fewer than :data:`MIN_RUNS` runs with a value answer no scores
and say why in ``metadata.availability``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from starlette.responses import Response

from tau_collector.reads import ExperimentReader, HasGeneration, HasListings, MetricValueRow

from ..context import Context
from ..errors import V2Error, json_response, metadata
from ..importance import ParameterScore
from ..run_configs import read_configs, reads_configs
from ..wire.parameter_importance import parameter_importance_json

__all__ = ["MIN_RUNS", "PARAMETERS_LIMIT", "REDUCTIONS", "RUNS_LIMIT", "default_goal", "read"]

RUNS_LIMIT = 10_000
PARAMETERS_LIMIT = 64
MIN_RUNS = 3
IDS_LIMIT = 200
REDUCTIONS = ("final", "best", "latest")
_METRIC_LIMIT = 512
_HIGHER_IS_BETTER = re.compile(r"acc|auc|f1|precision|recall|reward|return|score|bleu|rouge|iou|map\b|ndcg|"
                               r"throughput|samples_per_sec|tokens_per_sec", re.IGNORECASE)


def default_goal(metric: str) -> str:
    """``max`` for a metric whose last path element names something to raise (accuracy, reward, score…), else
    ``min`` (losses, errors, perplexities)."""
    leaf = metric.rsplit("/", 1)[-1]
    return "max" if _HIGHER_IS_BETTER.search(leaf) and "loss" not in leaf.lower() else "min"


def _ids(ctx: Context, *names: str) -> list[str]:
    out = list(dict.fromkeys(v.strip() for name in names for v in ctx.query.all(name) if v.strip()))
    if len(out) > IDS_LIMIT:
        raise V2Error(400, "INVALID_ARGUMENT", f"{names[0]} may be given at most {IDS_LIMIT} times")
    return out


def _params(ctx: Context) -> tuple[str, str, str]:
    q = ctx.query
    metric = q.get("metric").strip()
    if not metric:
        raise V2Error(400, "INVALID_ARGUMENT", "metric is required: the metric whose value the parameters explain")
    if len(metric) > _METRIC_LIMIT or any(ord(c) < 32 for c in metric):
        raise V2Error(400, "INVALID_ARGUMENT", f"metric must be a metric name of at most {_METRIC_LIMIT} printable "
                                               "characters")
    reduction = q.get("reduction").strip().lower() or "final"
    if reduction not in REDUCTIONS:
        raise V2Error(400, "INVALID_ARGUMENT", f"reduction must be one of {', '.join(REDUCTIONS)}")
    goal = q.get("goal").strip().lower() or default_goal(metric)
    if goal not in ("min", "max"):
        raise V2Error(400, "INVALID_ARGUMENT", "goal must be min or max")
    return metric, reduction, goal


def _selected(reader: ExperimentReader, workspace: str, project: str, experiments: list[str],
              run_ids: list[str], metric: str) -> tuple[int, list[MetricValueRow]]:
    """(how many runs match, the newest :data:`RUNS_LIMIT` of them with the metric's summary values and their
    config fields): one query over a store's listings, else runs, summaries and configs read as any source has them."""
    if isinstance(reader, HasListings) and reader.has_listings():
        return reader.metric_values(workspace, metric, project=project, experiment_ids=experiments, run_ids=run_ids,
                                    limit=RUNS_LIMIT)
    runs = reader.runs(workspace, project=project or None)
    if experiments or run_ids:
        wanted_exp, wanted_runs = set(experiments), set(run_ids)
        runs = [r for r in runs if r.experiment_id in wanted_exp or r.run_id in wanted_runs]
    # Newest first, then run id: the cut keeps the newest runs.
    runs.sort(key=lambda r: (r.created_at or "", r.run_id), reverse=True)
    total, runs = len(runs), runs[:RUNS_LIMIT]
    configs = read_configs(reader, [r.run_id for r in runs])
    rows = []
    for run in runs:
        s = reader.metric_summary(run.run_id, metric)
        config = configs.get(run.run_id)
        rows.append(MetricValueRow(run.run_id, run.state, s and s.finite_count, s and s.latest_value,
                                   s and s.min_value, s and s.max_value,
                                   dict(config.fields) if config is not None else None))
    return total, rows


def _value(row: MetricValueRow, reduction: str, goal: str) -> float | None:
    if not row.finite_count or row.finite_count <= 0:
        return None
    if reduction == "final" and (row.state or "").strip().lower() in ("pending", "running"):
        return None
    value = (row.latest_value if reduction in ("final", "latest")
             else row.min_value if goal == "min" else row.max_value)
    return value if value is not None and math.isfinite(value) else None


def _reduction_words(reduction: str, goal: str) -> str:
    return {"final": "a final value (the latest value of a run that has ended)",
            "latest": "a latest value",
            "best": f"a best ({goal}imum) value"}[reduction]


@dataclass(frozen=True, slots=True)
class _Scored:
    """What an answer says besides its metadata: kept in the answer cache while the store is unchanged."""

    run_count: int
    valued_run_count: int
    notes: tuple[str, ...]
    reason: str | None
    scores: tuple[ParameterScore, ...]


def _score(reader: ExperimentReader, workspace: str, project: str, experiments: list[str], run_ids: list[str],
           metric: str, reduction: str, goal: str) -> _Scored:
    total, rows = _selected(reader, workspace, project, experiments, run_ids, metric)
    notes = []
    if total > len(rows):
        notes.append(f"{total} runs match; the newest {len(rows)} are scored")
    if rows and not any(r.finite_count is not None for r in rows):
        raise V2Error(400, "INVALID_ARGUMENT", f"metric {metric!r} was logged by none of the {len(rows)} runs "
                                               "selected")
    valued = [(r, v) for r in rows if (v := _value(r, reduction, goal)) is not None]
    fields = [r.fields or {} for r, _ in valued]
    counts: dict[str, int] = {}
    for f in fields:
        for key in f:
            counts[key] = counts.get(key, 0) + 1
    if len(counts) > PARAMETERS_LIMIT:
        kept = set(sorted(counts, key=lambda k: (-counts[k], k))[:PARAMETERS_LIMIT])
        notes.append(f"the runs have {len(counts)} parameters; the {PARAMETERS_LIMIT} most runs have are scored")
        fields = [{k: v for k, v in f.items() if k in kept} for f in fields]
    reason = None
    if len(valued) < MIN_RUNS:
        reason = (f"only {len(valued)} of the {len(rows)} runs selected have {_reduction_words(reduction, goal)} "
                  f"of {metric}; parameter importance needs at least {MIN_RUNS}")
    elif not counts:
        reason = ("the source carries no run configurations" if not reads_configs(reader)
                  else f"none of the {len(valued)} runs with a value of {metric} has a configuration")
    scores: list[ParameterScore] = []
    if reason is None:
        from ..importance import score_parameters

        scores = score_parameters(fields, [v for _, v in valued], ids=[r.run_id for r, _ in valued])
    return _Scored(len(rows), len(valued), tuple(notes), reason, tuple(scores))


def read(ctx: Context) -> Response:
    source, workspace = ctx.source_and_workspace()
    reader, served, warnings = ctx.sources.reader(source)
    q = ctx.query
    metric, reduction, goal = _params(ctx)
    experiments = _ids(ctx, "experiment_id", "experiment")
    run_ids = _ids(ctx, "run_id")
    project = q.get("project").strip()
    ctx.known_ids(reader, workspace, ("project", project, "project"),
                  *(("experiment_id", e, "experiment_id") for e in experiments))

    def build() -> _Scored:
        return _score(reader, workspace, project, experiments, run_ids, metric, reduction, goal)

    if isinstance(reader, HasGeneration):
        # Kept while the store is unchanged: a new point, run or config makes a new generation.
        key = ("parameter-importance", source, workspace, project, tuple(sorted(experiments)),
               tuple(sorted(run_ids)), metric, reduction, goal, RUNS_LIMIT, PARAMETERS_LIMIT, MIN_RUNS)
        scored = ctx.answers.computed(reader.generation(), key, build)
    else:
        scored = build()
    notes = [*warnings, *scored.notes]
    meta = metadata(source, [served], False, notes)
    if scored.reason is not None:
        meta["availability"] = {"state": "unavailable", "reasons": [*notes, scored.reason]}
    limits = {"runs": RUNS_LIMIT, "parameters": PARAMETERS_LIMIT, "min_runs": MIN_RUNS}
    return json_response(parameter_importance_json(meta, metric, reduction, goal, scored.run_count,
                                                   scored.valued_run_count, limits, scored.scores))
