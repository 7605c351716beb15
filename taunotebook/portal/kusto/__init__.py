"""``source=kusto``: the Portal's reader of runs and series from Azure Data Explorer (TauGrid's kusto source)."""

from .connection import KustoAuth, KustoConnection, KustoSettings
from .errors import KustoError, KustoTimeout, KustoUnavailable, KustoUpstreamError
from .reader import AmbiguousRunError, KustoReader

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
