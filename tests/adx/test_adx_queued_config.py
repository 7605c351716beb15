"""adx-queued-v1 configuration: TauGrid's defaults, drain budget and config identity."""

from __future__ import annotations

import hashlib

import pytest

from tau_collector.sinks.adx.queued import AdxQueuedSink, terminal_drain_timeout_s

URI = "https://ingest-example.westeurope.kusto.windows.net"


def test_drain_budget_with_defaults_is_three_ten_minute_attempts_plus_backoff_and_grace() -> None:
    assert terminal_drain_timeout_s() == 3 * 600 + (2**2 - 1) * 1 + 30


def test_drain_budget_counts_every_backoff_window() -> None:
    assert terminal_drain_timeout_s(max_attempts=4, retry_backoff_s=2, final_status_timeout_s=60) == (
        4 * 60 + (2**3 - 1) * 2 + 30
    )


def test_drain_budget_at_most_two_hours_is_accepted_and_above_is_refused() -> None:
    assert terminal_drain_timeout_s(max_attempts=10, final_status_timeout_s=600) == 6000 + 511 + 30
    with pytest.raises(ValueError, match="exceeds maximum terminal drain timeout 2h"):
        terminal_drain_timeout_s(max_attempts=10, final_status_timeout_s=700)


@pytest.mark.parametrize("attempts", [-1, 11])
def test_attempts_outside_zero_to_ten_are_refused(attempts: int) -> None:
    with pytest.raises(ValueError, match="adx_max_attempts must be between 0 and 10"):
        terminal_drain_timeout_s(max_attempts=attempts)


def test_zero_settings_take_taugrid_defaults() -> None:
    sink = AdxQueuedSink(URI, "metrics")
    assert (sink.max_attempts, sink.retry_backoff_s, sink.final_status_timeout_s, sink.status_poll_interval_s) == (
        3, 1.0, 600.0, 5.0,
    )  # fmt: skip
    assert (sink.table, sink.mapping) == ("TauExpMetricEventsV1", "TauExpMetricEventsV1Json")
    assert sink.terminal_drain_timeout_s() == 1833


@pytest.mark.parametrize("missing", ["cluster_uri", "database", "table", "mapping"])
def test_required_settings_are_named_when_missing(missing: str) -> None:
    settings = {"cluster_uri": URI, "database": "metrics", "table": "T", "mapping": "M", missing: "  "}
    with pytest.raises(ValueError, match="is required"):
        AdxQueuedSink(**settings)


def test_identity_is_stable_and_ignores_surrounding_space_and_trailing_slash() -> None:
    a = AdxQueuedSink(URI, "metrics").identity()
    assert a.startswith("adx-queued-v1:") and len(a) == len("adx-queued-v1:") + 64
    assert AdxQueuedSink(f" {URI}/ ", " metrics ").identity() == a
    # Explicit defaults resolve to the same configuration as zeros.
    assert AdxQueuedSink(URI, "metrics", max_attempts=3, retry_backoff_s=1, final_status_timeout_s=600).identity() == a


@pytest.mark.parametrize(
    "change",
    [
        {"cluster_uri": "https://ingest-other.westeurope.kusto.windows.net"},
        {"database": "other"},
        {"table": "Other"},
        {"mapping": "OtherJson"},
        {"client_id": "00000000-0000-0000-0000-000000000001"},
        {"max_attempts": 4},
        {"retry_backoff_s": 2.0},
        {"final_status_timeout_s": 300.0},
        {"status_poll_interval_s": 1.0},
    ],
)
def test_identity_changes_with_every_covered_setting(change: dict) -> None:
    settings: dict = {"cluster_uri": URI, "database": "metrics"}
    assert AdxQueuedSink(**{**settings, **change}).identity() != AdxQueuedSink(**settings).identity()


def test_identity_hashes_taugrids_config_struct_encoding() -> None:
    # The Go struct behind TauGrid's ConfigIdentity, marshalled: field order, resolved defaults,
    # durations in nanoseconds, and the credential kind constant.
    preimage = (
        '{"version":"adx-queued-v1","cluster_uri":"https://ingest-example.westeurope.kusto.windows.net",'
        '"database":"metrics","table":"TauExpMetricEventsV1","ingestion_mapping":"TauExpMetricEventsV1Json",'
        '"client_id":"abc","identity":"azidentity-token-credential-v1","max_attempts":3,'
        '"retry_backoff_ns":1000000000,"final_timeout_ns":600000000000,"status_poll_interval_ns":5000000000}'
    )
    expected = "adx-queued-v1:" + hashlib.sha256(preimage.encode()).hexdigest()
    assert AdxQueuedSink(URI, "metrics", client_id="abc").identity() == expected


def test_cluster_uri_must_be_http_or_https() -> None:
    with pytest.raises(ValueError, match="must be https://"):
        AdxQueuedSink("ingest-example.kusto.windows.net", "metrics")


def test_credential_is_workload_identity_when_a_federated_token_file_is_set(
    monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    from azure.identity import WorkloadIdentityCredential

    token = tmp_path / "token"
    token.write_text("header.payload.signature")
    monkeypatch.setenv("AZURE_FEDERATED_TOKEN_FILE", str(token))
    monkeypatch.setenv("AZURE_TENANT_ID", "00000000-0000-0000-0000-00000000000a")
    sink = AdxQueuedSink(URI, "metrics", client_id="00000000-0000-0000-0000-00000000000b")
    assert isinstance(sink._default_credential(), WorkloadIdentityCredential)


def test_credential_is_managed_identity_with_the_client_id_otherwise(monkeypatch: pytest.MonkeyPatch) -> None:
    from azure.identity import ManagedIdentityCredential

    monkeypatch.delenv("AZURE_FEDERATED_TOKEN_FILE", raising=False)
    sink = AdxQueuedSink(URI, "metrics", client_id="00000000-0000-0000-0000-00000000000b")
    assert isinstance(sink._default_credential(), ManagedIdentityCredential)


def test_credential_without_a_client_id_is_the_default_chain(monkeypatch: pytest.MonkeyPatch) -> None:
    from azure.identity import DefaultAzureCredential

    monkeypatch.delenv("AZURE_FEDERATED_TOKEN_FILE", raising=False)
    assert isinstance(AdxQueuedSink(URI, "metrics")._default_credential(), DefaultAzureCredential)
