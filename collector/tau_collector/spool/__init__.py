"""The spool: pending chunks (TauGrid's manifests and our column records), the checkpoint and its folding, file
fingerprints, chunk grouping and durable renames.
"""
