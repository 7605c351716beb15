"""TauGrid's metric card and "standard metric" classification (``core/exptelemetry/mapping.go``)."""

from __future__ import annotations

from functools import lru_cache

__all__ = ["metric_card", "is_standard_metric"]

_STANDARD = frozenset(
    {
        "train/return", "eval/score",
        "wm/loss", "world_model/loss", "model/loss", "train/loss", "eval/loss",
        "train/lr", "train/learning_rate", "train/grad_norm", "train/gradient_norm",
        "train/step_time_s", "train/step_time", "train/examples_seen", "train/input_tokens", "train/tokens",
        "gpu/memory_allocated_gb", "gpu/memory_reserved_gb", "gpu/max_memory_allocated_gb",
        "checkpoint/file_count", "checkpoint/bytes", "inference/time_s",
        "wm/perplexity", "world_model/perplexity", "model/perplexity", "train/perplexity", "eval/perplexity",
        "wm/cross_entropy", "wm/cross-entropy", "world_model/cross_entropy", "world_model/cross-entropy",
        "model/cross_entropy", "model/cross-entropy",
        "model/kl", "policy/entropy", "system/gpu_util",
    }
)


@lru_cache(maxsize=8192)
def is_standard_metric(name: str) -> bool:
    lower = name.strip().lower()
    return lower in _STANDARD or lower.startswith("feature/")


@lru_cache(maxsize=8192)
def metric_card(name: str) -> str:
    """The Stellar card a metric belongs to; the first matching rule wins."""
    lower = name.strip().lower()
    if lower in ("train/return", "eval/score"):
        return "Outcome"
    if lower in ("train/loss", "eval/loss") or lower.startswith(("wm/", "world_model/", "model/")):
        return "World model"
    if lower.startswith(
        ("train/lr", "train/learning_rate", "train/grad_norm", "train/gradient_norm", "train/step_time")
    ):
        return "Optimization"
    if lower.startswith("train/examples") or "tokens" in lower or "throughput" in lower:
        return "Throughput"
    if lower.startswith(("gpu/", "system/")):
        return "Systems"
    if lower.startswith("checkpoint/"):
        return "Checkpoint"
    if lower.startswith(("feature/", "inference/", "eval/")):
        return "Model diagnostics"
    if lower.startswith("policy/"):
        return "Behavior"
    return "Other metrics"
