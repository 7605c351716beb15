"""The Azure Data Explorer sinks: queued ingestion (TauGrid's ``adx-queued-v1``), streaming ingestion (ours), and
what their errors mean.
"""
