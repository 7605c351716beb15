"""The client's reads of the local Portal's page data (``/stellar/data/...``) and of parameter importance."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import httpx

from .errors import PortalUnreachable, error_from_response
from .importance_models import ParameterImportance
from .links import API_PATH, PAGE_DATA_PATH, path_segment
from .models import ExperimentList, PointDetails
from .series_columns import SeriesColumns, read_export_csv
from .table_models import RunTable
from .tail_models import Tails

__all__ = ["PageReads"]


class PageReads:
    """Page data (points, export columns, tails, experiments, the runs table) and parameter importance; TauGrid's
    Portal serves none of it.

    A mixin of :class:`~.client.PortalClient`: it reads through the client's transport (``_get``, ``_send``,
    ``_common``, ``_optional``, ``_http``) and defaults (``project``, ``base_url``)."""

    project: str | None
    base_url: str
    _http: httpx.Client

    def point_details(
        self,
        run_id: str,
        metric: str,
        *,
        start_step: int | None = None,
        end_step: int | None = None,
        project: str | None = None,
        source: str | None = None,
    ) -> PointDetails:
        """``GET /stellar/data/runs/{run_id}/points``: where the metric's non-finite values sit, and wall times.

        A TauGrid Portal answers 404 (:class:`NotFoundError` with code ``NOT_FOUND``, message ``route was
        not found``): draw without them.
        """
        params = [*self._common(source), ("metric", metric),
                  *self._optional(project, start_step=start_step, end_step=end_step)]
        path = f"{PAGE_DATA_PATH}/runs/{path_segment(run_id, 'run_id')}/points"
        return self._get(path, params, PointDetails.from_json)

    def series_columns(
        self,
        run_id: str,
        metric: str,
        *,
        start_step: int | None = None,
        end_step: int | None = None,
        project: str | None = None,
        source: str | None = None,
    ) -> SeriesColumns:
        """``GET /stellar/data/export/{run_id}``: every stored point of the series (non-finite ones too), as
        numpy columns (``.to_pandas()`` with pandas). Read as it streams; one attempt, no retries."""
        params = [*self._common(source), ("metric", metric), ("format", "csv"),
                  *self._optional(project, start_step=start_step, end_step=end_step)]
        path = f"{PAGE_DATA_PATH}/export/{path_segment(run_id, 'run_id')}"
        try:
            with self._http.stream("GET", path, params=params) as response:
                if not response.is_success:
                    response.read()
                    raise error_from_response(response)
                return read_export_csv(response.iter_bytes(), run_id, metric, start_step, end_step)
        except (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError) as exc:
            raise PortalUnreachable(None, "UNREACHABLE", f"{type(exc).__name__}: {exc}", "unreachable", True,
                                    url=self.base_url + path.lstrip("/")) from exc

    def tails(
        self,
        run_id: str,
        since: Mapping[str, tuple[int | None, int | None] | int | None],
        *,
        catalog_since: str | None = None,
        max_points: int | None = None,
        project: str | None = None,
        source: str | None = None,
    ) -> Tails:
        """``GET /stellar/data/runs/{run_id}/tails``: several metrics' new points of one run in one request.

        ``since`` maps each metric to the step its new points start at (inclusive; ``None``: the whole range,
        M4-reduced to ``max_points``), or to ``(step, count)`` where ``count`` is the catalog count the caller
        holds: a metric whose count and latest step are unchanged has no points read. ``catalog_since`` is
        the ``cursor`` of an earlier answer: the run's metric names come only when they changed since.
        A TauGrid Portal answers 404 (``route was not found``): read the v2 catalog and series instead.
        """
        params = self._common(source)
        for metric, held in since.items():
            step, count = held if isinstance(held, tuple) else (held, None)
            params += [("metric", metric), ("since", "" if step is None else str(int(step))),
                       ("count", "" if count is None else str(int(count)))]
        params += self._optional(project, catalog_since=catalog_since, max_points=max_points)
        path = f"{PAGE_DATA_PATH}/runs/{path_segment(run_id, 'run_id')}/tails"
        return self._get(path, params, Tails.from_json)

    def experiments(self, *, project: str | None = None, source: str | None = None) -> ExperimentList:
        """``GET /stellar/data/experiments``: the served workspace's experiments with their run counts."""
        params = self._common(source)
        project = project if project is not None else self.project
        if project is not None:
            params.append(("project", project))
        return self._get(f"{PAGE_DATA_PATH}/experiments", params, ExperimentList.from_json)

    def run_table(
        self,
        *,
        project: str | None = None,
        experiment: str | None = None,
        group: str | None = None,
        run_ids: Iterable[str] = (),
        metrics: Iterable[str] = (),
        source: str | None = None,
    ) -> RunTable:
        """``GET /stellar/data/runs``: every run of the workspace (newest first, at most 5000) with its config
        fields and the ``metrics``' latest/min/max (default: the Portal picks a loss), in one request.

        ``experiment``, ``group`` and ``run_ids`` (at most 200) narrow it. A TauGrid Portal answers 404
        (:class:`NotFoundError`, message ``route was not found``).
        """
        params = self._common(source)
        project = project if project is not None else self.project
        for key, value in (("project", project), ("experiment", experiment), ("group", group)):
            if value is not None:
                params.append((key, value))
        params += [("run_id", r) for r in run_ids]
        params += [("metric", m) for m in metrics]
        return self._get(f"{PAGE_DATA_PATH}/runs", params, RunTable.from_json)

    def parameter_importance(self, metric: str, *, reduction: str = "final", goal: str | None = None,
                             experiment_ids: Iterable[str] = (), run_ids: Iterable[str] = (),
                             project: str | None = None, source: str | None = None) -> ParameterImportance:
        """``GET /api/v2/stellar/parameter-importance``: each hyperparameter's correlation with and random-forest
        importance for ``metric``'s final, best or latest value over the runs of ``experiment_ids`` and
        ``run_ids`` (neither: the workspace's), most important first (docs/comparing-runs.md)."""
        params = [*self._common(source), *self._optional(project), ("metric", metric), ("reduction", reduction)]
        if goal is not None:
            params.append(("goal", goal))
        params += [("experiment_id", e) for e in experiment_ids]
        params += [("run_id", r) for r in run_ids]
        return self._get(f"{API_PATH}/parameter-importance", params, ParameterImportance.from_json)
