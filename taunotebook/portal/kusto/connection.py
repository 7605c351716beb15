"""One Kusto cluster and database, reached with the official ``azure-kusto-data`` client; faults become typed errors.

Authentication (``--kusto-auth``, ``TAU_PORTAL_KUSTO_AUTH``): ``default`` is azure-identity's
``DefaultAzureCredential`` (TauGrid's choice: environment, workload identity, managed identity, Azure
CLI, ...), ``cli`` the Azure CLI's login, ``none`` no credential at all, allowed only for a loopback
``http://`` test cluster. Every query carries ``servertimeout`` and TauGrid's no-partial-results
stance (``deferpartialqueryfailures=false``, errors reported in the data): an answer is whole or it is
an error. The client's parser keeps only ``DataTable`` frames, so a ``DataSetCompletion`` that says
``HasErrors``/``Cancelled`` is checked here before the rows are used (TauGrid's ``ParseKustoMetricRows``
does the same).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from ...kusto_env import AUTH_MODES, DEFAULT_DATABASE, ENV_AUTH, ENV_CLUSTER, ENV_DATABASE, ENV_PREFIX
from ...loopback import is_loopback_host
from .errors import KustoError, KustoTimeout, KustoUpstreamError
from .queries import KqlQuery

__all__ = ["AUTH_MODES", "ENV_PREFIX", "KustoAuth", "KustoConnection", "KustoSettings"]

KustoAuth = str  # one of AUTH_MODES
DEFAULT_TIMEOUT_S = 60.0


@dataclass(frozen=True, slots=True)
class KustoSettings:
    """Where and how to query. ``query_now`` pins KQL's ``now()``/``ago()`` (ADX's ``query_now`` property)."""

    cluster: str
    database: str = DEFAULT_DATABASE
    auth: KustoAuth = "default"
    timeout_s: float = DEFAULT_TIMEOUT_S
    client_grace_s: float = 5.0  # the HTTP read waits this much longer than the server's own timeout
    query_now: datetime | None = None

    def __post_init__(self) -> None:
        cluster = self.cluster.strip().rstrip("/")
        object.__setattr__(self, "cluster", cluster)
        object.__setattr__(self, "database", self.database.strip())
        if not cluster:
            raise ValueError("--kusto-cluster is required: the cluster URI, e.g. https://<name>.<region>.kusto.windows.net")
        if not self.database:
            raise ValueError("--kusto-database is required: the database holding TauExpMetricEventsV1")
        if self.auth not in AUTH_MODES:
            raise ValueError(f"--kusto-auth must be one of {', '.join(AUTH_MODES)}, not {self.auth!r}")
        parts = urlsplit(cluster)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"--kusto-cluster must be an https:// URI, got {cluster!r}")
        if parts.scheme == "http":
            if self.auth != "none" or not is_loopback_host(parts.hostname):
                raise ValueError(
                    f"--kusto-cluster {cluster!r} is plain http://: only a loopback test cluster with "
                    "--kusto-auth none may be; use the cluster's https:// URI"
                )
        elif self.auth == "none":
            raise ValueError("--kusto-auth none is only for a loopback http:// test cluster; use default or cli")
        if not self.timeout_s > 0:
            raise ValueError(f"Kusto timeout must be positive, got {self.timeout_s}")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> KustoSettings | None:
        """Settings from ``TAU_PORTAL_KUSTO_CLUSTER``/``_DATABASE``/``_AUTH`` (overridden by non-None
        ``overrides``, e.g. command-line flags); None when no cluster is named anywhere."""
        environ = os.environ if environ is None else environ
        values = {
            "cluster": environ.get(ENV_CLUSTER, ""),
            "database": environ.get(ENV_DATABASE, DEFAULT_DATABASE),
            "auth": environ.get(ENV_AUTH, "default"),
        }
        values.update({k: v for k, v in overrides.items() if v is not None})
        if not str(values["cluster"]).strip():
            return None
        return cls(**values)


def _client_class() -> type:
    from azure.kusto.data import KustoClient

    class CheckedKustoClient(KustoClient):
        # The client keeps only DataTable frames; look at the completion frame first.
        @staticmethod
        def _kusto_parse_by_endpoint(endpoint: str, response_json: Any) -> Any:
            if isinstance(response_json, list):
                for frame in response_json:
                    if isinstance(frame, dict) and frame.get("FrameType") == "DataSetCompletion" and (
                        frame.get("HasErrors") or frame.get("Cancelled")
                    ):
                        raise _IncompleteAnswer(frame)
            return KustoClient._kusto_parse_by_endpoint(endpoint, response_json)

    return CheckedKustoClient


class _IncompleteAnswer(Exception):
    def __init__(self, frame: dict) -> None:
        errors = frame.get("OneApiErrors") or []
        detail = "; ".join(_one_api_message(e) for e in errors[:3]) or "no error detail was sent"
        what = "was cancelled" if frame.get("Cancelled") else "reported errors"
        super().__init__(f"the query {what} (DataSetCompletion): {detail}")


def _one_api_message(error: Any) -> str:
    inner = error.get("error", error) if isinstance(error, dict) else {}
    if not isinstance(inner, dict):
        return str(error)[:300]
    return str(inner.get("@message") or inner.get("message") or inner.get("code") or inner)[:300]


class KustoConnection:
    """Runs :class:`~.queries.KqlQuery` objects against one database; thread-safe (one HTTP session)."""

    def __init__(self, settings: KustoSettings, *, credential: Any = None) -> None:
        self.settings = settings
        self._credential = credential
        self._client: Any = None
        self._lock = threading.Lock()

    @property
    def where(self) -> str:
        return f"{self.settings.database} at {self.settings.cluster}"

    def _kusto_client(self) -> Any:
        with self._lock:
            if self._client is None:
                self._client = self._new_client()
            return self._client

    def _new_client(self) -> Any:
        from azure.kusto.data import KustoConnectionStringBuilder

        s = self.settings
        if s.auth == "none":
            kcsb = KustoConnectionStringBuilder.with_no_authentication(s.cluster)
        elif s.auth == "cli":
            kcsb = KustoConnectionStringBuilder.with_az_cli_authentication(s.cluster)
        else:
            credential = self._credential
            if credential is None:
                from azure.identity import DefaultAzureCredential

                credential = DefaultAzureCredential()
            kcsb = KustoConnectionStringBuilder.with_azure_token_credential(s.cluster, credential)
        client = _client_class()(kcsb)
        client._client_server_delta = timedelta(seconds=s.client_grace_s)
        return client

    def _properties(self, query: KqlQuery) -> Any:
        from azure.kusto.data import ClientRequestProperties

        properties = ClientRequestProperties()
        properties.set_option("servertimeout", timedelta(seconds=self.settings.timeout_s))
        properties.set_option("deferpartialqueryfailures", False)
        if self.settings.query_now is not None:
            properties.set_option("query_now", self.settings.query_now.isoformat())
        for name, value in query.parameters.items():
            properties.set_parameter(name, value)
        return properties

    def execute(self, query: KqlQuery) -> list[dict[str, Any]]:
        """The primary result's rows as dicts; any fault raises a :class:`~.errors.KustoError` subclass."""
        try:
            response = self._kusto_client().execute_query(
                self.settings.database, query.text, self._properties(query)
            )
            if response.errors_count:
                raise _IncompleteAnswer({"HasErrors": True, "OneApiErrors": [
                    {"message": text} for text in response.get_exceptions()]})
            tables = response.primary_results
            if not tables:
                raise KustoUpstreamError(f"Kusto query on {self.where}: the answer has no primary result",
                                         kind="answer")
            return [row.to_dict() for row in tables[0]]
        except KustoError:
            raise
        except Exception as error:  # every client failure is classified; nothing escapes untyped
            raise self._classify(error) from error

    def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            client.close()

    def _classify(self, error: BaseException) -> KustoError:
        from azure.core.exceptions import ClientAuthenticationError
        from azure.kusto.data.exceptions import (
            KustoApiError,
            KustoAuthenticationError,
            KustoMultiApiError,
            KustoNetworkError,
            KustoServiceError,
            KustoThrottlingError,
        )

        where = f"Kusto query on {self.where}"
        if isinstance(error, _IncompleteAnswer):
            return KustoUpstreamError(f"{where}: {error}", kind="in-band")
        if isinstance(error, KustoThrottlingError):
            return KustoUpstreamError(f"{where}: throttled by the cluster (HTTP 429); retry shortly",
                                      kind="throttled")
        if isinstance(error, (KustoAuthenticationError, ClientAuthenticationError)) or (
            type(error).__module__.startswith("azure.identity")
        ):
            return KustoUpstreamError(
                f"{where}: could not get a token with --kusto-auth {self.settings.auth}: {_short(error)}",
                kind="credentials",
            )
        if isinstance(error, KustoNetworkError):
            cause = error.__cause__
            import requests

            if isinstance(cause, requests.exceptions.Timeout):
                return KustoTimeout(
                    f"{where}: no answer within {self.settings.timeout_s + self.settings.client_grace_s:g}s",
                    kind="timeout",
                )
            return KustoUpstreamError(f"{where}: cannot reach the cluster: {_short(cause or error)}",
                                      kind="network")
        if isinstance(error, KustoMultiApiError):
            messages = "; ".join(_one_api_message(e) if isinstance(e, dict) else str(e) for e in error.errors[:3])
            return KustoUpstreamError(f"{where}: the query failed in the answer: {messages}", kind="in-band")
        status = _status(error)
        if isinstance(error, KustoApiError):
            api = error.get_api_error()
            text = f"{api.code}: {_short(api.description or api.message)}"
            if status in (408, 504) or "timeout" in (api.code or "").lower():
                return KustoTimeout(f"{where}: timed out on the cluster ({text})", kind="timeout")
            return KustoUpstreamError(f"{where}: HTTP {status or '?'} {text}", kind="query")
        if isinstance(error, KustoServiceError):
            if status in (401, 403):
                return KustoUpstreamError(
                    f"{where}: HTTP {status}, the identity of --kusto-auth {self.settings.auth} may not read "
                    "this database (it needs the Viewer role)",
                    kind="unauthorized",
                )
            if status in (408, 504):
                return KustoTimeout(f"{where}: HTTP {status}, timed out", kind="timeout")
            return KustoUpstreamError(f"{where}: HTTP {status or '?'} {_short(error)}", kind="server")
        if isinstance(error, (ValueError, KeyError, TypeError)):
            return KustoUpstreamError(f"{where}: the answer could not be read: {_short(error)}", kind="answer")
        return KustoUpstreamError(f"{where}: {type(error).__name__}: {_short(error)}", kind="unknown")


def _status(error: BaseException) -> int | None:
    response = getattr(error, "http_response", None)
    status = getattr(response, "status_code", None) or getattr(response, "status", None)
    return status if isinstance(status, int) else None


def _short(error: object) -> str:
    text = " ".join(str(error).split())
    return (text[:400] + " …" if len(text) > 400 else text) or type(error).__name__
