"""The job's speed from its nodes' reports: one sample per complete world, never a mixed one.

Each node reports its own samples/s and the world size it trains in. ``SpeedAggregator`` keeps
the newest report of each node and emits a job sample (the sum) once every node of the largest
reported world has reported at that size; reports from an older world (a node that left, or
one that has not re-joined yet) and reports older than ``stale_after`` seconds are dropped, so a
sample never mixes two world sizes. Pure: the caller passes the time.
"""

from dataclasses import dataclass

from flexjob.core.planner.stats import SpeedSample


@dataclass(frozen=True, slots=True)
class _Report:
    seen_at: float
    step: int
    samples_per_second: float
    world_size: int


class SpeedAggregator:
    def __init__(self, stale_after: float = 10.0) -> None:
        self.stale_after = stale_after
        self._reports: dict[str, _Report] = {}

    def observe(
        self, node: str, world_size: int, samples_per_second: float, step: int, now: float
    ) -> None:
        if world_size > 0:
            self._reports[node] = _Report(now, step, samples_per_second, world_size)

    def take(self, now: float) -> SpeedSample | None:
        """The job's sample if a whole world has reported since the last one, else ``None``."""
        fresh = {n: r for n, r in self._reports.items() if r.seen_at >= now - self.stale_after}
        if not fresh:
            self._reports = {}
            return None
        size = max(r.world_size for r in fresh.values())
        world = {n: r for n, r in fresh.items() if r.world_size == size}
        self._reports = world
        if len(world) < size:
            return None
        self._reports = {}
        return SpeedSample(
            now,
            max(r.step for r in world.values()),
            sum(r.samples_per_second for r in world.values()),
            size,
        )
