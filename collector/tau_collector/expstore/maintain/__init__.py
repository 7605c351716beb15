"""Maintaining a store in place: compaction of small files, clustering by metric, and the child process they run in."""
