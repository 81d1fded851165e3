"""Attained-service ordering (Tiresias-style discretised least-attained-service).

For: deciding which jobs run first when not all of them fit — the ``tiresias`` policy and the
admission step of ``goodput``. A job's *level* is how many thresholds its attained service
(GPU-seconds, ``JobInfo.attained``) has passed: level 0 first. Within a level, running jobs
come before waiting ones (so a job is not preempted by a peer of its own level: hysteresis),
then older before younger. Not for: sizing jobs.
"""

from collections.abc import Mapping, Sequence

from flexjob.api.errors import InvalidSpecError
from flexjob.core.allocator.contract import JobInfo

#: Default level thresholds in GPU-seconds: 1 GPU-hour, 10 GPU-hours.
DEFAULT_THRESHOLDS: tuple[float, ...] = (3600.0, 36000.0)


def check_thresholds(thresholds: Sequence[float]) -> tuple[float, ...]:
    """The thresholds as a tuple; they must be positive and increasing."""
    values = tuple(float(t) for t in thresholds)
    if any(t <= 0 for t in values) or list(values) != sorted(set(values)):
        raise InvalidSpecError(f"thresholds must be positive and increasing, got {list(values)}")
    return values


def service_level(attained: float, thresholds: Sequence[float] = DEFAULT_THRESHOLDS) -> int:
    """How many thresholds ``attained`` GPU-seconds have reached."""
    return sum(1 for t in thresholds if attained >= t)


def service_order(
    jobs: Sequence[JobInfo],
    previous: Mapping[str, Sequence[str]],
    thresholds: Sequence[float] = DEFAULT_THRESHOLDS,
) -> list[JobInfo]:
    """``jobs`` by (higher priority, level, waiting after running, older first, id)."""
    return sorted(
        jobs,
        key=lambda j: (
            -j.priority,
            service_level(j.attained, thresholds),
            not previous.get(j.id),
            -j.age,
            j.id,
        ),
    )
