"""Adaptive batch size inside ``ElasticTrainer``: what ``spec.batch.adaptive: true`` does.

For: a job whose master's batch plan carries an adaptive bound (``RankBatch.
max_global_batch_size``, from ``spec.batch.maxGlobalBatchSize``). ``ElasticTrainer`` then
measures its own goodput (a ``GoodputReporter`` on its steps, publishing the profilings the
Allocator reads, and a DDP comm hook estimating the gradient noise scale) and, through this
class, re-plans the global batch:

- rank 0 proposes a global batch (``AdaptiveBatch.plan``: the goodput-maximising batch for
  the world's nodes and replicas) at the first step of every world, at the first step where
  the gradient noise scale is known, and every ``replan_every()`` seconds after; the
  proposal rides on the step's control all-reduce (only rank 0 adds to those slots), so
  every rank applies the same batch from the same step on;
- each rank then takes its share of the new batch (``BatchPlan.for_rank``) and sets its
  optimizer's learning rates to their base times AdaScale's gain (``scale_lr``);
- a re-formed world starts again from the job's base batch (``globalBatchSize``) and gain 1.

The base learning rates are kept in the optimizer's parameter groups (``BASE_LR_KEY``), so they
travel with its checkpoint: a restarted trainer scales from the user's rates, never from rates
already scaled. Off (a fixed plan): nothing here runs and the global batch stays
``globalBatchSize`` exactly. Not for: the arithmetic (``trainer.adaptive``,
``core.training.batch``).
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from flexjob.api import names
from flexjob.core.training.batch import BatchPlan, RankBatch
from flexjob.trainer.adaptive import AdaptiveBatch, scale_lr
from flexjob.trainer.goodput import GoodputReporter, StepSource, noise_hook
from flexjob.trainer.settings import TrainerSettings, current_or

if TYPE_CHECKING:
    import torch

log = logging.getLogger(__name__)

#: Seconds between rank 0's re-plans in a steady world (``$FLEXJOB_BATCH_REPLAN_S``).
REPLAN_EVERY_S = 30.0


def replan_every(settings: TrainerSettings | None = None) -> float:
    """``$FLEXJOB_BATCH_REPLAN_S`` (a number of seconds > 0), else ``REPLAN_EVERY_S``."""
    raw = (current_or(settings).batch_replan_s or "").strip()
    if not raw:
        return REPLAN_EVERY_S
    try:
        seconds = float(raw)
    except ValueError:
        seconds = 0.0
    if not 0 < seconds < math.inf:
        raise ValueError(f"{names.ENV_BATCH_REPLAN_S} must be a number of seconds > 0, got {raw!r}")
    return seconds


#: Where each parameter group keeps the user's learning rate (saved with the optimizer).
BASE_LR_KEY = "flexjob_base_lr"
#: The gain crosses the control all-reduce as an integer in millionths.
GAIN_UNIT = 1_000_000


class BatchAdapter:
    """One trainer's adaptive batch: its bounds, goodput meters and learning-rate gain."""

    def __init__(
        self,
        bounds: AdaptiveBatch,
        optimizer: torch.optim.Optimizer,
        reporter: GoodputReporter,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.bounds = bounds
        self.optimizer = optimizer
        self.reporter = reporter
        self._clock = clock
        self.every = replan_every()
        self.base_lrs = [g.setdefault(BASE_LR_KEY, g["lr"]) for g in optimizer.param_groups]
        self.global_batch = bounds.base
        self.gain = 1.0
        self._shape = (1, 1)
        self._due = 0.0
        self._knew_noise = False
        scale_lr(optimizer, self.base_lrs, 1.0)

    @classmethod
    def start(
        cls, trainer: StepSource, optimizer: torch.optim.Optimizer, plan: RankBatch
    ) -> BatchAdapter:
        """The adapter of ``trainer`` (scaling ``optimizer``'s learning rates) for the adaptive
        ``plan``, its reporter on the trainer's steps (publishing the job's profilings through
        its master link)."""
        bounds = AdaptiveBatch(
            plan.global_batch_size, plan.max_global_batch_size, plan.micro_batch_size
        )
        adapter = cls(bounds, optimizer, GoodputReporter(float(plan.micro_batch_size)))
        adapter.reporter.attach(trainer)
        return adapter

    def formed(self, nodes: int, replicas: int, model: torch.nn.Module, plan: RankBatch) -> None:
        """A new world: back to the base batch and gain; re-plan at its first step; estimate
        the noise scale from ``model``'s (the DDP wrapper's) all-reduces."""
        self._shape = (max(nodes, 1), max(replicas, 1))
        self.global_batch = plan.global_batch_size
        self.gain = 1.0
        scale_lr(self.optimizer, self.base_lrs, 1.0)
        self._due = 0.0
        if replicas > 1:
            model.register_comm_hook(  # type: ignore[operator]
                None, noise_hook(self.reporter.noise, lambda: self.global_batch / replicas)
            )

    def proposal(self, rank: int) -> tuple[int, int]:
        """What rank ``rank`` adds to the control all-reduce: (global batch, gain in
        millionths) when it is rank 0 and a re-plan is due and changes something, else 0s."""
        now = self._clock()
        noise = self.reporter.noise.noise_scale
        first = noise is not None and not self._knew_noise  # the noise scale just became known
        if rank != 0 or (now < self._due and not first):
            return 0, 0
        self._due = now + self.every
        self._knew_noise = noise is not None
        choice = self.bounds.plan(*self._shape, self.reporter.meter.fitted(), noise)
        gain = max(1, round(choice.lr_gain * GAIN_UNIT))
        if choice.global_batch_size == self.global_batch and gain == round(self.gain * GAIN_UNIT):
            return 0, 0
        return choice.global_batch_size, gain

    def apply(self, global_batch: int, gain: int, rank: int, world_size: int) -> RankBatch:
        """Every rank: take the batch rank 0 proposed, and its learning-rate gain."""
        self.global_batch = global_batch
        self.gain = gain / GAIN_UNIT
        scale_lr(self.optimizer, self.base_lrs, self.gain)
        plan = BatchPlan.for_global_batch(global_batch, self.bounds.micro)
        plan = dataclasses.replace(plan, max_global_batch_size=self.bounds.limit)
        log.info(
            "event=batch_adapted global_batch=%d lr_gain=%.4f noise_scale=%s",
            global_batch,
            self.gain,
            self.reporter.noise.noise_scale,
        )
        return plan.for_rank(rank, world_size)
