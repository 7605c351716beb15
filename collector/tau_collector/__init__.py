"""tau-collector: TauGrid-compatible metric sources, projection, spool and sinks.

Training code logs rows with :func:`log` (``from tau_collector import log; log(step=3, loss=0.5)``).
"""

from tau_collector.job.history_writer import log

__all__ = ["__version__", "log"]
__version__ = "0.1.0"
