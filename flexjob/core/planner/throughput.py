"""Worker count from the measured throughput curve.

Samples are grouped by world size into a curve of mean samples/s. Workers are added one step at a
time while each added worker still brings at least ``min_marginal_ratio`` of the per-worker
throughput measured at the smallest size; at the first step that does not, the job goes back to
the knee. Pure: no I/O, no clock. Not for PS jobs' PS count (see ``hot_ps``).
"""

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from statistics import fmean

from flexjob.core.planner.stats import JobLimits, SpeedSample


@dataclass(frozen=True, slots=True)
class ThroughputConfig:
    #: Workers added per step.
    step: int = 1
    #: An added worker must bring this fraction of the base per-worker speed to be kept.
    min_marginal_ratio: float = 0.5
    #: Absolute floor in samples/s per added worker; used instead of the ratio when set.
    min_marginal_speed: float | None = None
    #: Samples needed at a world size before it counts as measured.
    min_samples: int = 3
    #: Samples dropped at the start of each world size (warm-up after a re-rendezvous).
    warmup_samples: int = 1


@dataclass(frozen=True, slots=True)
class CurvePoint:
    world_size: int
    samples_per_second: float


def throughput_curve(samples: Sequence[SpeedSample], config: ThroughputConfig) -> list[CurvePoint]:
    """Mean speed per world size, sorted by size, for sizes with enough samples after warm-up."""
    runs: dict[int, list[float]] = {}
    for s in sorted(samples, key=lambda s: s.timestamp):
        if s.world_size > 0:
            runs.setdefault(s.world_size, []).append(s.samples_per_second)
    points = []
    for size, speeds in sorted(runs.items()):
        kept = speeds[config.warmup_samples :]
        if len(kept) >= config.min_samples:
            points.append(CurvePoint(size, fmean(kept)))
    return points


def marginal_threshold(curve: Sequence[CurvePoint], config: ThroughputConfig) -> float:
    """Samples/s an added worker must bring."""
    if config.min_marginal_speed is not None:
        return config.min_marginal_speed
    base = curve[0]
    return config.min_marginal_ratio * base.samples_per_second / base.world_size


def find_knee(curve: Sequence[CurvePoint], config: ThroughputConfig) -> tuple[int, bool]:
    """The largest size reached with every step worth it, and whether a step past it was not."""
    threshold = marginal_threshold(curve, config)
    for prev, cur in pairwise(curve):
        gain = (cur.samples_per_second - prev.samples_per_second) / (
            cur.world_size - prev.world_size
        )
        if gain < threshold:
            return prev.world_size, True
    return curve[-1].world_size, False


def plan_worker_count(
    samples: Sequence[SpeedSample],
    current_workers: int,
    limits: JobLimits,
    config: ThroughputConfig | None = None,
) -> int | None:
    """The worker count to run next, or ``None`` to wait (the current size is not measured yet)."""
    config = config or ThroughputConfig()
    curve = throughput_curve(samples, config)
    if not any(p.world_size == current_workers for p in curve):
        return None
    knee, saturated = find_knee(curve, config)
    target = knee if saturated or knee != current_workers else knee + config.step
    target = limits.clamp_replicas(target)
    return None if target == current_workers else target
