"""Batch limits: flags, then the environment, then the defaults of the command (import reads bigger batches)."""

from __future__ import annotations

import argparse

import pytest

from tau_collector.sources import read_limits as limits


def _parse(argv, defaults=limits.DEFAULT_LIMITS):
    parser = argparse.ArgumentParser()
    limits.add_arguments(parser, defaults)
    return parser, parser.parse_args(argv)


def test_import_defaults_hold_wide_rows_and_flags_and_environment_win():
    parser, args = _parse([], limits.IMPORT_LIMITS)
    assert limits.from_args(args, {}, defaults=limits.IMPORT_LIMITS).batch_bytes == 4 * 1024 * 1024
    assert "default 4194304" in parser.format_help()
    assert limits.from_args(args, {}).batch_bytes == 512 * 1024  # the sidecar's default stays
    env = {"TAU_COLLECTOR_BATCH_BYTES": "65536"}
    assert limits.from_args(args, env, defaults=limits.IMPORT_LIMITS).batch_bytes == 65536
    _, args = _parse(["--batch-bytes", "1000", "--batch-records", "7"], limits.IMPORT_LIMITS)
    chosen = limits.from_args(args, env, defaults=limits.IMPORT_LIMITS)
    assert (chosen.batch_bytes, chosen.batch_records) == (1000, 7)
    assert chosen.max_line_bytes == limits.IMPORT_LIMITS.max_line_bytes


def test_a_bad_environment_limit_names_the_variable():
    _, args = _parse([])
    with pytest.raises(limits.LimitsError, match=r"\$TAU_COLLECTOR_BATCH_RECORDS: must be positive"):
        limits.from_args(args, {"TAU_COLLECTOR_BATCH_RECORDS": "0"}, defaults=limits.IMPORT_LIMITS)
