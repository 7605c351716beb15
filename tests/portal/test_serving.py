"""How handlers run: cached answers on the event loop, reads that would block in a worker thread, failures as 500."""

from __future__ import annotations

import logging

import anyio.to_thread
import httpx
import pytest

from fixtures.portal import TOKEN, build_store, event, serve
from tau_collector.expstore import open_store
from tau_collector.expstore.write.writer import MetricWriter
from tau_collector.reads import QUICK_FILE_ROWS
from taunotebook.portal import serving

SERIES = "/api/v2/stellar/runs/run-a/series"


@pytest.fixture
def counted_threads(monkeypatch):
    calls = []
    real = anyio.to_thread.run_sync

    async def run_sync(fn, *args, **kw):
        calls.append(fn)
        return await real(fn, *args, **kw)

    monkeypatch.setattr(serving.anyio.to_thread, "run_sync", run_sync)
    return calls


def test_a_large_cold_read_goes_to_a_thread_and_the_same_poll_then_stays_on_the_event_loop(tmp_path,
                                                                                           counted_threads):
    store = open_store(tmp_path / "store", create=True)
    writer = MetricWriter(store)
    big = QUICK_FILE_ROWS + 5000
    writer.write_chunk("big", [event("run-a", "train/loss", s, 1.0) for s in range(big)], [], request_hash="h")
    with serve(tmp_path / "store") as server, httpx.Client(base_url=f"http://127.0.0.1:{server.port}",
                                                           headers={"Authorization": f"Bearer {TOKEN}"}) as http:
        params = {"target": "run-a", "metric": "train/loss", "start_step": big - 500}
        first = http.get(SERIES, params=params)
        assert first.status_code == 200 and len(counted_threads) == 1  # it had to read a large Parquet file
        for _ in range(5):
            again = http.get(SERIES, params=params)
            assert again.json()["points"] == first.json()["points"]
        assert len(counted_threads) == 1
        # A live run's next chunk is small: read where it is asked for, on the event loop.
        writer.write_chunk("next", [event("run-a", "train/loss", s, 2.0) for s in range(big, big + 100)], [],
                           request_hash="h")
        tail = http.get(SERIES, params={**params, "start_step": big - 10}).json()
        assert [p["step"] for p in tail["points"]] == list(range(big - 10, big + 100))
        assert len(counted_threads) == 1
        listing = http.get("/api/v2/stellar/experiments/exp-1/runs")
        assert listing.status_code == 200 and len(counted_threads) == 2  # listings always go to a thread


def test_an_unexpected_failure_is_a_retryable_500_with_no_trace_on_the_wire(tmp_path, caplog):
    store = build_store(tmp_path / "store")
    for path in (store / "metrics").rglob("*.parquet"):
        path.unlink()  # the index still names them: reading the series fails
    with serve(store) as server, caplog.at_level(logging.ERROR, logger="taunotebook.portal"):
        response = httpx.get(f"http://127.0.0.1:{server.port}{SERIES}", params={"target": "run-a",
                             "metric": "train/loss"}, headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 500
    assert response.json() == {"error": {"code": "INTERNAL", "message": "experiment data request failed",
                                         "classification": "internal", "retryable": True}}
    assert "Traceback" not in response.text
    assert any(r.exc_info and r.exc_info[0] is FileNotFoundError for r in caplog.records)


def test_open_for_streaming_sends_a_file_in_blocks_and_a_gone_file_is_a_404_in_the_callers_words(tmp_path):
    from taunotebook.portal.errors import V2Error

    path = tmp_path / "blob"
    data = bytes(range(256)) * (serving.STREAM_BLOCK // 256 * 2 + 3)
    path.write_bytes(data)
    blocks, size = serving.open_for_streaming(path, "never said")
    assert size == len(data)
    chunks = list(blocks)
    assert len(chunks) == 3 and b"".join(chunks) == data
    with pytest.raises(V2Error) as caught:
        serving.open_for_streaming(tmp_path / "gone", "artifact x cannot be downloaded: its file was deleted")
    assert (caught.value.status, caught.value.code) == (404, "NOT_FOUND")
    assert caught.value.message == "artifact x cannot be downloaded: its file was deleted"


_OUT_OF_BOUNDS = "n must be an integer between 1 and 20"


@pytest.mark.parametrize(("raw", "answer"), [
    (None, 7), ("", 7), ("1", 1), ("20", 20), ("0", _OUT_OF_BOUNDS), ("21", _OUT_OF_BOUNDS),
    ("x", "n must be an integer"), ("9" * 30, "n must be an integer")])
def test_a_bounded_integer_parameter_is_its_default_a_value_in_bounds_or_a_400_naming_it(raw, answer):
    from taunotebook.portal.errors import V2Error
    from taunotebook.portal.params import Query, bounded_int_param

    query = Query([] if raw is None else [("n", raw)])
    if isinstance(answer, int):
        assert bounded_int_param(query, "n", 7, 1, 20) == answer
        return
    with pytest.raises(V2Error) as caught:
        bounded_int_param(query, "n", 7, 1, 20)
    assert (caught.value.status, caught.value.message) == (400, answer)
