"""BatchPlan: keep the global batch fixed while the world size changes.

With ``total_micro_batches`` M per step and N0 live workers, worker i runs
``M // N0 + 1`` micro-batches when ``i < M % N0``, else ``M // N0``, then all-reduces. The
DLRover form has M = max workers N (one micro-batch each at full size); the general form has
M = global batch size / micro-batch size. ``RankBatch`` is one rank's share of a plan: what the
master's ``GetBatchPlan`` answers and ``trainer.fixed_batch_plan`` returns. The one owner of
this arithmetic. Not for learning-rate scaling or data loading.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

from flexjob.api.errors import InvalidSpecError

if TYPE_CHECKING:  # the pydantic model: only its type here (processes start faster)
    from flexjob.api import BatchSpec


@dataclass(frozen=True, slots=True)
class RankBatch:
    """One rank's share of a ``BatchPlan``: its micro-batches per step, their size, and the
    global batch they add up to over the world."""

    micro_batches: int
    micro_batch_size: int
    global_batch_size: int
    #: The job's adaptive-batch bound (``spec.batch.maxGlobalBatchSize`` with ``adaptive``
    #: on): the trainer may grow the global batch up to it (``trainer.adaptive``); 0: fixed.
    max_global_batch_size: int = 0

    @property
    def adaptive(self) -> bool:
        """Whether the trainer may change the global batch (``trainer.batch_adapter``)."""
        return self.max_global_batch_size > self.global_batch_size


@dataclass(frozen=True, slots=True)
class BatchPlan:
    """``total_micro_batches`` micro-batches of ``micro_batch_size`` samples per global step."""

    micro_batch_size: int
    total_micro_batches: int
    #: Adaptive batch size on: the largest global batch the trainer may pick; 0: fixed.
    max_global_batch_size: int = 0

    def __post_init__(self) -> None:
        if self.micro_batch_size < 1:
            raise ValueError(f"micro_batch_size must be >= 1, got {self.micro_batch_size}")
        if self.total_micro_batches < 1:
            raise ValueError(f"total_micro_batches must be >= 1, got {self.total_micro_batches}")

    @classmethod
    def for_max_workers(cls, max_workers: int, micro_batch_size: int) -> BatchPlan:
        """The global batch of ``max_workers`` workers doing one micro-batch each."""
        if max_workers < 1:
            raise ValueError(f"max_workers must be >= 1, got {max_workers}")
        return cls(micro_batch_size, max_workers)

    @classmethod
    def for_global_batch(cls, global_batch_size: int, micro_batch_size: int) -> BatchPlan:
        """``global_batch_size`` must be a multiple of ``micro_batch_size``."""
        if micro_batch_size < 1:
            raise ValueError(f"micro_batch_size must be >= 1, got {micro_batch_size}")
        if global_batch_size < micro_batch_size or global_batch_size % micro_batch_size:
            raise ValueError(
                f"global_batch_size must be a positive multiple of micro_batch_size "
                f"({micro_batch_size}), got {global_batch_size}"
            )
        return cls(micro_batch_size, global_batch_size // micro_batch_size)

    @property
    def global_batch_size(self) -> int:
        return self.micro_batch_size * self.total_micro_batches

    def micro_batches(self, rank: int, world_size: int) -> int:
        """Micro-batches worker ``rank`` runs before each all-reduce (0 when the world is
        bigger than the number of micro-batches and this rank has none)."""
        if world_size < 1:
            raise ValueError(f"world_size must be >= 1, got {world_size}")
        if not 0 <= rank < world_size:
            raise ValueError(f"rank must be in [0, {world_size}), got {rank}")
        base, extra = divmod(self.total_micro_batches, world_size)
        return base + 1 if rank < extra else base

    def for_rank(self, rank: int, world_size: int) -> RankBatch:
        """Worker ``rank``'s share of the plan in a world of ``world_size``."""
        return RankBatch(
            self.micro_batches(rank, world_size),
            self.micro_batch_size,
            self.global_batch_size,
            self.max_global_batch_size,
        )

    def assignment(self, world_size: int) -> tuple[int, ...]:
        """Micro-batches of every rank, in rank order; they sum to ``total_micro_batches``."""
        return tuple(self.micro_batches(r, world_size) for r in range(world_size))


def micro_batch_size_of(spec: BatchSpec) -> int:
    """A job's micro-batch: ``spec.batch.microBatchSize``, else ``globalBatchSize / maxWorkers``
    (the master's plan and the trainer's adaptive bounds both take it from here)."""
    micro = spec.micro_batch_size
    if micro is None and spec.global_batch_size and spec.max_workers:
        micro = spec.global_batch_size // spec.max_workers
    if micro is None:
        raise InvalidSpecError("spec.batch.microBatchSize is required")
    return micro


def batch_plan_from_spec(spec: BatchSpec) -> BatchPlan:
    """The plan of a job's ``spec.batch``: ``microBatchSize`` (else global / max workers:
    ``micro_batch_size_of``) with ``globalBatchSize`` or ``maxWorkers``."""
    micro = micro_batch_size_of(spec)
    if spec.global_batch_size is not None:
        plan = BatchPlan.for_global_batch(spec.global_batch_size, micro)
        if spec.adaptive and spec.max_global_batch_size:
            plan = dataclasses.replace(plan, max_global_batch_size=spec.max_global_batch_size)
        return plan
    if spec.max_workers is not None:
        return BatchPlan.for_max_workers(spec.max_workers, micro)
    raise InvalidSpecError("spec.batch: give globalBatchSize or maxWorkers with microBatchSize")
