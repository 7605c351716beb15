"""``source=kusto``: the Portal's reader of runs and series from Azure Data Explorer (TauGrid's kusto source).

``queries`` builds the KQL, ``connection`` runs it with ``azure-kusto-data`` and types every fault
(``errors``), ``reader`` returns the local store reader's result types. Decisions for the v2 answers
over this source, where TauGrid's kusto answers have quirks:

* **Series availability**: TauGrid marks *every* kusto series ``degraded`` with the warning "source=kusto
  series are extrema-preserving display projections; Kusto source rows remain authoritative". Ours is
  M4 (pixel-exact), so that warning is not true here and is not sent: availability follows the v2 rule
  (``degraded`` iff ``partial`` or a warning), so a decimated series is still ``degraded``/``partial``.
  ``provenance.served_sources`` is ``["kusto"]`` and ``freshness.state`` ``unknown``, as TauGrid's.
* **Metric catalog**: TauGrid answers ``count: 0`` with no values (its catalog has no counts); ours has
  exact ``count``/``finite_count`` (``non_finite_count`` is 0: a non-finite value never becomes a
  MetricEvent), the step range, the latest point and the extremes, like the local source.
* **Run state**: the latest terminal ``tau/run_status`` marker, else ``running`` (TauGrid: ``unknown``).
"""

from .connection import KustoAuth, KustoConnection, KustoSettings
from .errors import AmbiguousRunError, KustoError, KustoTimeout, KustoUnavailable, KustoUpstreamError
from .reader import KustoReader

__all__ = [
    "AmbiguousRunError",
    "KustoAuth",
    "KustoConnection",
    "KustoError",
    "KustoReader",
    "KustoSettings",
    "KustoTimeout",
    "KustoUnavailable",
    "KustoUpstreamError",
]
