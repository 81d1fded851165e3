"""Fixed global batch for a training script: how many micro-batches each rank accumulates.

With ``global_batch_size = micro_batch_size * max_workers`` kept fixed, a world of ``n`` ranks
splits ``max_workers`` micro-batches among them (DLRover's rule: the first ``N % n`` ranks do
one more). The arithmetic is ``core.training.batch.BatchPlan``'s (the master's ``GetBatchPlan``
uses the same); these are the trainer-facing shortcuts, and how ``ElasticTrainer`` applies the
master's plan: ``fetch_plan`` asks the master (``GetBatchPlan``) on every re-formed world and
``MicroSteps`` runs a step's micro-batches with DDP ``no_sync`` for all but the last.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from typing import Any

from flexjob.api.errors import NotFoundError
from flexjob.core.training.batch import BatchPlan, RankBatch


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


def fetch_plan(source: Any, rank: int, world_size: int, sampler_batch: int) -> RankBatch | None:
    """This rank's share of the job's fixed global batch, from the master's ``GetBatchPlan``;
    None when the job has none (no ``spec.batch``) or ``source`` cannot plan. The sampler's
    batches are the micro-batches, so their sizes must match."""
    ask = getattr(source, "get_batch_plan", None)
    if ask is None:
        return None
    try:
        plan: RankBatch = ask(rank, world_size)
    except NotFoundError:
        return None
    if plan.micro_batch_size != sampler_batch:
        raise ValueError(
            f"ElasticSampler batch_size is {sampler_batch} but the job's spec.batch."
            f"microBatchSize is {plan.micro_batch_size}: make them equal"
        )
    return plan


def micro_batches_of(plan: RankBatch | None) -> int:
    """How many sampler batches one step takes: the plan's micro-batches, else 1."""
    return 1 if plan is None else plan.micro_batches


@dataclasses.dataclass(frozen=True, slots=True)
class Step:
    """One training step for this rank: its indices and how to scale a summed loss."""

    number: int
    indices: list[int]
    epoch: int
    global_samples: int
    world_size: int
    #: With a fixed global batch: this rank's micro-batches (their indices make up
    #: ``indices``); run them with ``ElasticTrainer.micro_steps``.
    micro: tuple[list[int], ...] = ()

    @property
    def loss_scale(self) -> float:
        """Multiply a per-sample *summed* loss by this: DDP's averaging then yields the mean."""
        return self.world_size / self.global_samples


@dataclasses.dataclass(frozen=True, slots=True)
class MicroSteps:
    """A step's micro-batches as steps of their own, all but the last under ``no_sync``."""

    step: Step
    model: Any

    def steps(self) -> Iterator[Step]:
        parts = self.step.micro
        if len(parts) <= 1:
            yield self.step  # one micro-batch, or none planned for this rank (still all-reduces)
            return
        no_sync = getattr(self.model, "no_sync", contextlib.nullcontext)
        for i, indices in enumerate(parts):
            part = dataclasses.replace(self.step, indices=indices, micro=())
            if i < len(parts) - 1:
                with no_sync():
                    yield part
            else:
                yield part
