"""tau-collector: TauGrid-compatible metric sources, projection, spool and sinks."""

__version__ = "0.1.0"
