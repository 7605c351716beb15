"""Sinks: where spooled chunks of canonical MetricEvents are delivered (expstore, ADX)."""

from tau_collector.sinks.base import Chunk, Sink, SinkError

__all__ = ["Chunk", "Sink", "SinkError"]
