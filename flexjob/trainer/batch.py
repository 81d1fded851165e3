"""Fixed global batch for a training script: how many micro-batches each rank accumulates.

With ``global_batch_size = micro_batch_size * max_workers`` kept fixed, a world of ``n`` ranks
splits ``max_workers`` micro-batches among them (DLRover's rule: the first ``N % n`` ranks do
one more). The arithmetic is ``core.batch.BatchPlan``'s (the master's ``GetBatchPlan`` uses the
same); these are the trainer-facing shortcuts.
"""

from __future__ import annotations

from flexjob.core.batch import BatchPlan, RankBatch


def accumulation_steps(total_micro_batches: int, rank: int, world_size: int) -> int:
    """Micro-batches rank ``rank`` runs per step so the world runs ``total_micro_batches``."""
    return BatchPlan(1, total_micro_batches).micro_batches(rank, world_size)


def fixed_batch_plan(
    global_batch_size: int, micro_batch_size: int, rank: int, world_size: int
) -> RankBatch:
    """The share of ``rank``: keeps the global batch at ``global_batch_size`` samples."""
    return BatchPlan.for_global_batch(global_batch_size, micro_batch_size).for_rank(
        rank, world_size
    )
