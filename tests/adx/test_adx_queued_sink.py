"""The adx-queued-v1 sink against real Azure Storage APIs (Azurite), the real Kusto ingest client and a test ADX worker."""

from __future__ import annotations

import hashlib
import threading

import pytest

from services.adx_env import AdxEnv, metric_chunk
from services.ingestion_worker import Outcome
from tau_collector.projection.metric_event import decode_canonical_ndjson
from tau_collector.sinks import Chunk, SinkError
from tau_collector.sinks.adx.queued import AdxQueuedSink, chunk_ingest_tag


class RecordingSleep:
    """Records the backoff the sink asks for, and sleeps it (the fixtures' backoffs are short)."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)
        threading.Event().wait(seconds)


def make_sink(env: AdxEnv, **overrides: object) -> AdxQueuedSink:
    options: dict = {
        "max_attempts": 3,
        "retry_backoff_s": 0.1,
        "final_status_timeout_s": 20.0,
        "status_poll_interval_s": 0.2,
    }
    options.update(overrides)
    return AdxQueuedSink(env.ingest_uri, env.database, **options)


def test_chunk_is_ingested_and_acknowledged_with_its_events(adx_env: AdxEnv) -> None:
    chunk = metric_chunk()
    sink = make_sink(adx_env)
    try:
        sink.deliver(chunk)
    finally:
        sink.close()

    assert sink.last_ack is not None and sink.last_ack.final_status == "Succeeded"
    assert sink.last_ack.attempts == 1 and sink.last_ack.events == 5
    stored = adx_env.worker.events
    assert stored == {e.event_id: e for e in decode_canonical_ndjson(chunk.ndjson)}
    assert len(adx_env.worker.rows) == 5
    assert adx_env.worker.errors == []
    [ingestion] = adx_env.worker.ingestions
    tag = chunk_ingest_tag(chunk.chunk_digest)
    assert ingestion.ingest_if_not_exists == (tag,)
    assert ingestion.ingest_by_tags == (tag,)
    assert (ingestion.data_format, ingestion.mapping_reference) == ("json", "TauExpMetricEventsV1Json")
    assert (ingestion.report_method, ingestion.report_level) == (1, 2)  # Table, FailuresAndSuccesses


def test_redelivered_chunk_is_skipped_and_acknowledged_without_duplicates(adx_env: AdxEnv) -> None:
    chunk = metric_chunk()
    sink = make_sink(adx_env)
    try:
        sink.deliver(chunk)
        sink.deliver(chunk)  # e.g. a crash after the ack, before the checkpoint: replayed
    finally:
        sink.close()

    assert sink.last_ack is not None and sink.last_ack.final_status == "Skipped"
    assert [i.status for i in adx_env.worker.ingestions] == ["Succeeded", "Skipped"]
    assert len(adx_env.worker.rows) == chunk.event_count
    assert set(adx_env.worker.events) == {e.event_id for e in decode_canonical_ndjson(chunk.ndjson)}


def test_different_chunks_are_both_ingested(adx_env: AdxEnv) -> None:
    first, second = metric_chunk(1, range(0, 3)), metric_chunk(2, range(3, 7))
    sink = make_sink(adx_env)
    try:
        sink.deliver(first)
        sink.deliver(second)
    finally:
        sink.close()

    assert [i.status for i in adx_env.worker.ingestions] == ["Succeeded", "Succeeded"]
    assert sorted(e.step for e in adx_env.worker.events.values()) == list(range(7))


def test_transient_failure_is_retried_with_backoff_then_succeeds(adx_env: AdxEnv) -> None:
    adx_env.worker.inject(Outcome.TRANSIENT_FAILURE, Outcome.TRANSIENT_FAILURE)
    sleep = RecordingSleep()
    sink = make_sink(adx_env, max_attempts=3, retry_backoff_s=0.1, sleep=sleep)
    chunk = metric_chunk()
    try:
        sink.deliver(chunk)
    finally:
        sink.close()

    assert [i.status for i in adx_env.worker.ingestions] == ["Failed", "Failed", "Succeeded"]
    assert sleep.calls == [0.1, 0.2]  # backoff·2^(n−1) after attempt n
    assert sink.last_ack is not None and sink.last_ack.attempts == 3
    assert len(adx_env.worker.rows) == chunk.event_count


def test_transient_failures_beyond_the_attempts_raise_a_retryable_error(adx_env: AdxEnv) -> None:
    adx_env.worker.inject(Outcome.TRANSIENT_FAILURE, Outcome.TRANSIENT_FAILURE)
    sleep = RecordingSleep()
    sink = make_sink(adx_env, max_attempts=2, retry_backoff_s=0.1, sleep=sleep)
    try:
        with pytest.raises(SinkError, match=r"after 2 attempt\(s\).*failure=Transient") as raised:
            sink.deliver(metric_chunk())
    finally:
        sink.close()

    assert raised.value.retryable is True
    assert sleep.calls == [0.1]
    assert adx_env.worker.rows == []


def test_permanent_failure_raises_a_non_retryable_error_without_retrying(adx_env: AdxEnv) -> None:
    adx_env.worker.inject(Outcome.PERMANENT_FAILURE)
    sleep = RecordingSleep()
    sink = make_sink(adx_env, sleep=sleep)
    try:
        with pytest.raises(SinkError, match="failure=Permanent code=BadRequest_InjectedPermanentFailure") as raised:
            sink.deliver(metric_chunk())
    finally:
        sink.close()

    assert raised.value.retryable is False
    assert sleep.calls == []
    assert len(adx_env.worker.ingestions) == 1


def test_unknown_mapping_is_a_permanent_failure(adx_env: AdxEnv) -> None:
    sink = make_sink(adx_env, mapping="NoSuchMapping")
    try:
        with pytest.raises(SinkError, match="BadRequest_MappingReferenceWasNotFound") as raised:
            sink.deliver(metric_chunk())
    finally:
        sink.close()

    assert raised.value.retryable is False


def test_status_that_never_arrives_times_out_as_retryable(adx_env: AdxEnv) -> None:
    adx_env.worker.inject(Outcome.NEVER_ANSWER, Outcome.NEVER_ANSWER)
    sink = make_sink(adx_env, max_attempts=2, final_status_timeout_s=1.0, status_poll_interval_s=0.2)
    try:
        with pytest.raises(SinkError, match=r"no final ingestion status within 1s \(status Pending") as raised:
            sink.deliver(metric_chunk())
    finally:
        sink.close()

    assert raised.value.retryable is True
    assert [i.status for i in adx_env.worker.ingestions] == ["Unanswered", "Unanswered"]


def test_late_success_after_a_timeout_makes_the_retry_skip(adx_env: AdxEnv) -> None:
    # The first attempt's status never comes; the retry carries the same ingest-if-not-exists tag,
    # so once one ingestion has succeeded the chunk is in ADX exactly once.
    adx_env.worker.inject(Outcome.NEVER_ANSWER)
    chunk = metric_chunk()
    sink = make_sink(adx_env, max_attempts=2, final_status_timeout_s=2.0, status_poll_interval_s=0.2)
    try:
        sink.deliver(chunk)
        sink.deliver(chunk)
    finally:
        sink.close()

    assert [i.status for i in adx_env.worker.ingestions] == ["Unanswered", "Succeeded", "Skipped"]
    assert len(adx_env.worker.rows) == chunk.event_count


def test_empty_chunk_is_acknowledged_without_ingesting(adx_env: AdxEnv) -> None:
    sink = make_sink(adx_env)
    try:
        sink.deliver(Chunk(1, "history", hashlib.sha256(b"").hexdigest(), b"", 0))
    finally:
        sink.close()

    assert sink.last_ack is not None and sink.last_ack.final_status == "Empty"
    assert adx_env.worker.ingestions == [] and adx_env.mgmt.requests == []


def test_event_count_mismatch_is_fatal_before_anything_is_sent(adx_env: AdxEnv) -> None:
    good = metric_chunk()
    lying = Chunk(good.sequence, good.kind, good.chunk_digest, good.ndjson, good.event_count + 1)
    sink = make_sink(adx_env)
    try:
        with pytest.raises(SinkError, match="event count mismatch: manifest says 6, NDJSON holds 5") as raised:
            sink.deliver(lying)
    finally:
        sink.close()

    assert raised.value.retryable is False
    assert adx_env.mgmt.requests == []


@pytest.mark.parametrize(("status", "retryable"), [(401, False), (403, False), (404, False), (503, True)])
def test_management_endpoint_errors_are_classified_like_taugrid(
    adx_env: AdxEnv, status: int, retryable: bool
) -> None:
    adx_env.mgmt.fail_with_status = status
    sleep = RecordingSleep()
    sink = make_sink(adx_env, max_attempts=2, retry_backoff_s=0.1, sleep=sleep)
    try:
        with pytest.raises(SinkError, match="discover ingestion resources") as raised:
            sink.deliver(metric_chunk())
    finally:
        sink.close()

    assert raised.value.retryable is retryable
    assert sleep.calls == ([0.1] if retryable else [])


def test_storage_down_during_deliver_is_retryable_and_the_same_chunk_delivers_after_it_returns(
    adx_env: AdxEnv,
) -> None:
    chunk = metric_chunk()
    sink = make_sink(adx_env, max_attempts=2, retry_backoff_s=0.1)
    try:
        # Resources are discovered (and cached by the client) while storage is up.
        sink.deliver(metric_chunk(1, range(100, 101)))
        adx_env.azurite.stop()
        try:
            with pytest.raises(SinkError, match="upload the chunk blob") as raised:
                sink.deliver(chunk)
            assert raised.value.retryable is True
        finally:
            adx_env.azurite.start()
        sink.deliver(chunk)
    finally:
        sink.close()

    assert sink.last_ack is not None and sink.last_ack.final_status == "Succeeded"
    assert {e.step for e in adx_env.worker.events.values()} == {0, 1, 2, 3, 4, 100}
    assert len(adx_env.worker.rows) == 6


def test_storage_down_for_a_while_mid_deliver_is_ridden_out_by_the_retries(adx_env: AdxEnv) -> None:
    chunk = metric_chunk()
    sink = make_sink(adx_env, max_attempts=10, retry_backoff_s=0.2)
    sink.deliver(metric_chunk(1, range(100, 101)))
    adx_env.azurite.stop()
    failed_attempt = threading.Event()

    def restart_after_a_failure(seconds: float) -> None:
        failed_attempt.set()
        threading.Event().wait(seconds)

    sink._sleep = restart_after_a_failure
    restarter = threading.Thread(target=lambda: (failed_attempt.wait(60), adx_env.azurite.start()))
    restarter.start()
    try:
        sink.deliver(chunk)
    finally:
        restarter.join()
        sink.close()

    assert failed_attempt.is_set()
    assert sink.last_ack is not None and sink.last_ack.attempts >= 2
    assert len(adx_env.worker.rows) == 6
