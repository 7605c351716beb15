"""What the collector process loads: pyarrow only for the expstore sink, and never pandas."""

from __future__ import annotations

import subprocess
import sys

_DELIVER = """
import contextlib, hashlib, sys, tempfile
from tau_collector.cli.collect import pandas_kept_out
from tau_collector.metric_event import encode_ndjson_many, new_metric_event
from tau_collector.sinks.base import Chunk
from tau_collector.sinks.expstore import ExpstoreSink
e = new_metric_event(project="p", experiment_id="e", run_group_id="g", run_id="r", metric_name="loss", step=0,
                     wall_time=1_760_000_000_000_000_000, value=1.0, exported_at=1_760_000_000_000_000_000, source="s")
nd = encode_ndjson_many([e])
with pandas_kept_out() if sys.argv[1] == "keep-out" else contextlib.nullcontext():
    with tempfile.TemporaryDirectory() as tmp:
        ExpstoreSink(tmp + "/store").deliver(Chunk(1, "history", hashlib.sha256(nd).hexdigest(), nd, 1))
    print("pandas" in sys.modules)
import pandas  # afterwards the process imports as before
print(pandas.__name__)
"""


def _loads_pandas(mode: str) -> bool:
    out = subprocess.run([sys.executable, "-c", _DELIVER, mode], capture_output=True, text=True, check=True)
    loaded, after = out.stdout.split()
    assert after == "pandas"
    return loaded == "True"


def test_the_collector_keeps_pandas_out_of_the_process_pyarrow_would_load_it_into():
    assert _loads_pandas("as-is")  # pyarrow imports the installed pandas when it builds the first array
    assert not _loads_pandas("keep-out")


def test_the_collect_command_loads_no_pyarrow_until_an_expstore_sink_is_used():
    probe = ("import sys; import tau_collector.cli, tau_collector.cli.collect, tau_collector.expstore.store, "
             "tau_collector.sinks.adx_queued; print(sorted(m for m in ('pyarrow', 'pandas') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
