"""Goodput, measured by the job itself: step times per shape and the gradient noise scale.

For: turning what a training process sees into the profilings the Allocator reads
(``flexjob.scheduler.profilings``: ``steps``, ``localBatch``, ``gradNoiseScale``), so a job's
speedup curve comes from the job, not a guess. Not for: choosing allocations (the Allocator)
or the batch size (``trainer.adaptive``).

- ``ThroughputMeter`` keeps the mean seconds per step for every (nodes, replicas, local batch)
  shape the job has run on; ``fitted()`` fits ``core.training.goodput_model.ThroughputParams``.
- ``NoiseScaleMeter`` estimates the gradient noise scale ``B = tr(Sigma) / |G|^2`` from the
  squared norms of the same step's gradient at two batch sizes — a replica's local gradient
  (``b`` samples) and the all-reduced one (``B = n * b``) — with the unbiased estimators of
  McCandlish et al. (2018): ``|G|^2 ~ (B|g_B|^2 - b|g_b|^2) / (B - b)`` and
  ``tr(Sigma) ~ (|g_b|^2 - |g_B|^2) / (1/b - 1/B)``, each smoothed (EMA) before the ratio.
- ``GoodputReporter`` ties them to ``ElasticTrainer`` (``on_step``/``on_reform``; a DDP comm
  hook from ``noise_hook`` feeds the norms) and publishes the profilings to the master's KV
  store (``names.KV_PROFILINGS``) every ``publish_every_s``.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from flexjob.api import names
from flexjob.core.training.goodput_model import StepSample, ThroughputParams, fit_throughput

if TYPE_CHECKING:
    import torch

    from flexjob.trainer.batch import Step
    from flexjob.trainer.world import WorldInfo


class StepSource(Protocol):
    """What a reporter listens to: an ``ElasticTrainer`` (named by its calls, not imported,
    so that the trainer's modules form no import circle)."""

    def publish(self, key: str, value: str) -> None: ...

    def on_reform(self, callback: Callable[[WorldInfo], None]) -> None: ...

    def on_step(self, callback: Callable[[Step], None]) -> None: ...


#: Shape of a step: (nodes, replicas, local batch).
Shape = tuple[int, int, float]


@dataclass(slots=True)
class _Mean:
    total: float = 0.0
    count: int = 0

    def add(self, value: float) -> None:
        self.total += value
        self.count += 1

    @property
    def mean(self) -> float:
        return self.total / self.count if self.count else math.nan


@dataclass(slots=True)
class ThroughputMeter:
    """Mean step time per shape; the first ``warmup`` steps of each shape are not counted."""

    warmup: int = 2
    _seen: dict[Shape, int] = field(default_factory=dict)
    _times: dict[Shape, _Mean] = field(default_factory=dict)

    def record(self, nodes: int, replicas: int, local_batch: float, seconds: float) -> None:
        if nodes < 1 or replicas < 1 or local_batch <= 0 or not seconds > 0:
            return
        shape = (nodes, replicas, float(local_batch))
        seen = self._seen.get(shape, 0)
        self._seen[shape] = seen + 1
        if seen >= self.warmup:
            self._times.setdefault(shape, _Mean()).add(seconds)

    def samples(self) -> list[StepSample]:
        return [
            StepSample(k, n, b, mean.mean)
            for (k, n, b), mean in sorted(self._times.items())
            if mean.count
        ]

    def fitted(self, prior: ThroughputParams | None = None) -> ThroughputParams:
        """The step-time model fitted to what was measured (prior terms where data lacks)."""
        return fit_throughput(self.samples(), prior)


@dataclass(slots=True)
class NoiseScaleMeter:
    """Gradient noise scale from gradient norms at two batch sizes (see the module docstring)."""

    smoothing: float = 0.9
    _grad_sq: float | None = None
    _trace: float | None = None

    def observe(
        self, small_batch: float, small_sqnorm: float, big_batch: float, big_sqnorm: float
    ) -> None:
        """One step: ``|g|^2`` of a ``small_batch``-sample gradient and of a ``big_batch`` one."""
        if not 0 < small_batch < big_batch or small_sqnorm < 0 or big_sqnorm < 0:
            return
        grad_sq = (big_batch * big_sqnorm - small_batch * small_sqnorm) / (big_batch - small_batch)
        trace = (small_sqnorm - big_sqnorm) / (1.0 / small_batch - 1.0 / big_batch)
        self._grad_sq = self._ema(self._grad_sq, grad_sq)
        self._trace = self._ema(self._trace, trace)

    def _ema(self, old: float | None, new: float) -> float:
        return new if old is None else self.smoothing * old + (1.0 - self.smoothing) * new

    @property
    def noise_scale(self) -> float | None:
        """``tr(Sigma) / |G|^2`` in samples, or None until both estimates are positive."""
        if self._grad_sq is None or self._trace is None or self._grad_sq <= 0 or self._trace <= 0:
            return None
        return self._trace / self._grad_sq


def profilings(
    meter: ThroughputMeter, noise: NoiseScaleMeter, local_batch: float
) -> dict[str, Any]:
    """The ``status.profilings`` document the Allocator reads (``scheduler.profilings``)."""
    doc: dict[str, Any] = {
        "localBatch": local_batch,
        "steps": [
            {"nodes": s.num_nodes, "replicas": s.num_replicas, "localBatch": s.local_batch,
             "stepTime": s.step_time}
            for s in meter.samples()
        ],
    }  # fmt: skip
    if noise.noise_scale is not None:
        doc["gradNoiseScale"] = noise.noise_scale
    return doc


class GoodputReporter:
    """Measures an ``ElasticTrainer``'s steps and publishes profilings to its master."""

    def __init__(
        self,
        local_batch: float,
        publish: Callable[[str, str], None] | None = None,
        *,
        publish_every_s: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.local_batch = local_batch
        self.meter = ThroughputMeter()
        self.noise = NoiseScaleMeter()
        self._publish = publish
        self._every = publish_every_s
        self._clock = clock
        self._last_step: float | None = None
        self._last_publish = -math.inf
        self._shape: tuple[int, int] = (1, 1)

    def attach(self, trainer: StepSource) -> GoodputReporter:
        """Listen to ``trainer``'s steps and re-forms; publish through its master link."""
        if self._publish is None:
            self._publish = trainer.publish
        trainer.on_reform(self.reformed)
        trainer.on_step(self.stepped)
        return self

    def reformed(self, info: WorldInfo) -> None:
        self._shape = (max(info.num_nodes, 1), max(info.world_size, 1))
        self._last_step = None  # the first step of a new world includes forming it

    def stepped(self, step: Step) -> None:
        now = self._clock()
        if self._last_step is not None:
            nodes, replicas = self._shape
            local = step.global_samples / max(step.world_size, 1)
            self.meter.record(nodes, replicas, local or self.local_batch, now - self._last_step)
        self._last_step = now
        if self._publish is not None and now - self._last_publish >= self._every:
            self._last_publish = now
            self._publish(names.KV_PROFILINGS, json.dumps(self.profilings()))

    def profilings(self) -> dict[str, Any]:
        return profilings(self.meter, self.noise, self.local_batch)


def noise_hook(
    meter: NoiseScaleMeter, local_batch: Callable[[], float]
) -> Callable[[Any, Any], Any]:
    """A DDP comm hook (``ddp.register_comm_hook(None, hook)``) that all-reduces like the
    default and feeds ``meter`` with the bucket's local and averaged gradient norms."""
    import torch.distributed as dist

    # No annotations: DDP rejects string ones (this module postpones them) and accepts none.
    def hook(state, bucket):  # type: ignore[no-untyped-def]
        del state
        world = dist.get_world_size()
        tensor = bucket.buffer()
        local_sq = float(tensor.pow(2).sum())
        tensor.div_(world)
        fut = dist.all_reduce(tensor, async_op=True).get_future()

        def done(f: torch.futures.Future[list[torch.Tensor]]) -> torch.Tensor:
            reduced: torch.Tensor = f.value()[0]
            if world > 1:
                b = local_batch()
                meter.observe(b, local_sq, b * world, float(reduced.pow(2).sum()))
            return reduced

        chained: torch.futures.Future[torch.Tensor] = fut.then(done)
        return chained

    return hook
