"""Adaptive batch size (opt-in ``spec.batch.adaptive``): the global batch that maximises goodput
for the current world, and AdaScale's learning-rate gain for it.

For: a training loop that re-plans its batch after each re-formed world. With the job's
measured step-time model and gradient noise scale (``trainer.goodput``), ``AdaptiveBatch.plan``
picks the global batch ``M`` in ``[globalBatchSize, maxGlobalBatchSize]`` (a multiple of
``microBatchSize``) that maximises ``throughput(M) * efficiency(M)`` on ``nodes`` x
``replicas`` — the same search the Allocator's goodput model makes
(``core.training.goodput_model``) — and the learning-rate gain ``r = E(M) * M / M0`` (AdaScale:
``(phi + M0) / (phi + M) * M / M0``). Until a noise scale is known it keeps ``M0``. Adaptive off
(``from_spec`` returns None): the caller keeps the fixed global batch exactly
(``core.training.batch.BatchPlan``). Not for: measuring (``trainer.goodput``) or allocating.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from flexjob.api.errors import InvalidSpecError
from flexjob.core.training.batch import BatchPlan, micro_batch_size_of
from flexjob.core.training.goodput_model import GoodputModel, ThroughputParams

if TYPE_CHECKING:
    import torch

    from flexjob.api.job import BatchSpec


@dataclass(frozen=True, slots=True)
class BatchChoice:
    """The plan for the current world and the factor to scale the base learning rate by."""

    plan: BatchPlan
    lr_gain: float

    @property
    def global_batch_size(self) -> int:
        return self.plan.global_batch_size


@dataclass(frozen=True, slots=True)
class AdaptiveBatch:
    """User bounds of an adaptive batch: ``base`` (M0) .. ``limit`` samples, in ``micro`` steps."""

    base: int
    limit: int
    micro: int

    def __post_init__(self) -> None:
        if self.micro < 1:
            raise InvalidSpecError(f"microBatchSize must be >= 1, got {self.micro}")
        if self.base < self.micro or self.base % self.micro:
            raise InvalidSpecError(
                f"globalBatchSize must be a positive multiple of microBatchSize ({self.micro}), "
                f"got {self.base}"
            )
        if self.limit < self.base:
            raise InvalidSpecError(
                f"maxGlobalBatchSize must be >= globalBatchSize ({self.base}), got {self.limit}"
            )

    @classmethod
    def from_spec(cls, spec: BatchSpec | None) -> AdaptiveBatch | None:
        """The bounds of ``spec.batch`` when adaptive is on, else None (fixed global batch).
        The micro-batch is the master's (``core.training.batch.batch_plan_from_spec``:
        ``microBatchSize``,
        else global / ``maxWorkers``), so the bounds are those of the plan the trainer runs."""
        if spec is None or not spec.adaptive:
            return None
        if spec.global_batch_size is None or spec.max_global_batch_size is None:
            raise InvalidSpecError("adaptive batch needs globalBatchSize and maxGlobalBatchSize")
        micro = micro_batch_size_of(spec)
        return cls(spec.global_batch_size, spec.max_global_batch_size, micro)

    def gain(self, global_batch: float, noise_scale: float | None) -> float:
        """AdaScale's gain: how many base-batch steps one step of ``global_batch`` is worth."""
        if noise_scale is None:
            return 1.0
        phi = max(noise_scale, 0.0)
        return (phi + self.base) / (phi + global_batch) * global_batch / self.base

    def plan(
        self,
        nodes: int,
        replicas: int,
        params: ThroughputParams,
        noise_scale: float | None,
    ) -> BatchChoice:
        """The goodput-maximising batch for this world (``base`` while ``noise_scale`` is None)."""
        if replicas < 1 or nodes < 1:
            raise InvalidSpecError(f"need at least one node and replica, got {nodes} x {replicas}")
        best = self.base
        if noise_scale is not None:
            model = GoodputModel(params, float(self.base), noise_scale, self.limit, self.limit)
            local = model.local_batch_for(nodes, replicas)
            rounded = round(local * replicas / self.micro) * self.micro
            best = min(max(rounded, self.base), self.limit - self.limit % self.micro)
        plan = BatchPlan.for_global_batch(best, self.micro)
        return BatchChoice(plan, self.gain(plan.global_batch_size, noise_scale))


def scale_lr(optimizer: torch.optim.Optimizer, base_lrs: Sequence[float], gain: float) -> None:
    """Set every parameter group's learning rate to its base times ``gain``."""
    for group, base in zip(optimizer.param_groups, base_lrs, strict=True):
        group["lr"] = base * gain
