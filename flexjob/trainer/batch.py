"""Fixed global batch: how many micro-batches each rank accumulates for the current world.

With ``global_batch_size = micro_batch_size * max_workers`` kept fixed, a world of ``n`` ranks
splits ``max_workers`` micro-batches among them (DLRover's rule: the first ``N % n`` ranks do
one more). Pure arithmetic; the master's ``GetBatchPlan`` answers the same question.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class BatchPlan:
    micro_batches: int
    micro_batch_size: int
    global_batch_size: int


def accumulation_steps(total_micro_batches: int, rank: int, world_size: int) -> int:
    """Micro-batches rank ``rank`` runs per step so the world runs ``total_micro_batches``."""
    if world_size < 1:
        raise ValueError(f"world_size must be >= 1, got {world_size}")
    if not 0 <= rank < world_size:
        raise ValueError(f"rank must be in [0, {world_size}), got {rank}")
    if total_micro_batches < 1:
        raise ValueError(f"total_micro_batches must be >= 1, got {total_micro_batches}")
    base, extra = divmod(total_micro_batches, world_size)
    return base + (1 if rank < extra else 0)


def fixed_batch_plan(
    global_batch_size: int, micro_batch_size: int, rank: int, world_size: int
) -> BatchPlan:
    """The plan for ``rank``: keeps the global batch at ``global_batch_size`` samples."""
    if micro_batch_size < 1:
        raise ValueError(f"micro_batch_size must be >= 1, got {micro_batch_size}")
    if global_batch_size < micro_batch_size or global_batch_size % micro_batch_size:
        raise ValueError(
            f"global_batch_size ({global_batch_size}) must be a multiple of "
            f"micro_batch_size ({micro_batch_size})"
        )
    total = global_batch_size // micro_batch_size
    return BatchPlan(
        micro_batches=accumulation_steps(total, rank, world_size),
        micro_batch_size=micro_batch_size,
        global_batch_size=global_batch_size,
    )
