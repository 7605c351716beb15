"""Spool file formats: the checkpoint's fast encoding equals Go's MarshalIndent of the same struct."""

from tau_collector.spool.checkpoint import CHECKPOINT_SCHEMA_V1, Checkpoint, SourceCheckpoint
from tau_collector.taugrid.gojson import GoMap, marshal


def reference_bytes(checkpoint: Checkpoint) -> bytes:
    return marshal({
        "schema_version": CHECKPOINT_SCHEMA_V1,
        "config_identity": checkpoint.config_identity,
        "next_sequence": checkpoint.next_sequence,
        "sources": GoMap({path: source.to_go() for path, source in checkpoint.sources.items()}),
        "terminals": GoMap({k: {"sequence": s, "chunk_digest": d} for k, (s, d) in checkpoint.terminals.items()}),
        "updated_at": checkpoint.updated_at,
    }, indent="  ") + b"\n"


def test_checkpoint_encoding_matches_marshal_indent_empty_and_full():
    empty = Checkpoint("c" * 64, updated_at="2026-09-18T19:00:00Z")
    assert empty.to_bytes() == reference_bytes(empty)
    assert empty.to_bytes().endswith(b'"sources": {},\n  "terminals": {},\n  "updated_at": "2026-09-18T19:00:00Z"\n}\n')
    full = Checkpoint("c" * 64, 7, updated_at="2026-09-18T19:00:00.5Z")
    for index in range(3):
        path = f"/data/run/<h&{index}>/chunk-{index}.jsonl"
        full.sources[path] = SourceCheckpoint(path, "1:2", 10 * index, "a" * 64 if index else "", index,
                                              "b" * 64 if index else "", index, "2026-09-18T19:00:00Z")
    full.terminals["d" * 64] = (6, "e" * 64)
    assert full.to_bytes() == reference_bytes(full)
    assert b"\\u003ch\\u00260\\u003e" in full.to_bytes()  # Go's Marshal escapes HTML in paths


def test_a_checkpoint_rewritten_after_every_chunk_keeps_one_fragment_per_entry():
    # An appending job moves one entry's offset on every chunk: the encoded entries kept for the next rewrite
    # must not pile up with the job's age (they did, to 4,096 stale ones: the appending soak's RSS crept up).
    checkpoint = Checkpoint("c" * 64, updated_at="2026-09-18T19:00:00Z")
    steady = "/data/run/history.jsonl"
    for chunk in range(5_000):
        following = checkpoint.copy()
        following.sources[steady] = SourceCheckpoint(steady, "1:2", 100 * chunk, "a" * 64, chunk, "b" * 64, chunk,
                                                     "2026-09-18T19:00:00Z")
        if chunk % 100 == 0:  # a closed file comes and is folded away later
            following.sources.pop(f"/data/run/chunk-{chunk - 300}.jsonl", None)
            following.sources[f"/data/run/chunk-{chunk}.jsonl"] = SourceCheckpoint(
                f"/data/run/chunk-{chunk}.jsonl", "1:3", 10, "", chunk, "", 1, "2026-09-18T19:00:00Z")
        assert following.to_bytes() == reference_bytes(following)
        checkpoint.adopt(following)
    assert len(checkpoint.sources) == 4
    assert len(checkpoint._fragments) <= 2 * len(checkpoint.sources) + 64
