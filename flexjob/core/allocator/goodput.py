"""The ``goodput-v1`` policy (the first Pollux-style one): maximise the cluster's total speedup.

Kept selectable to compare against ``goodput`` (``fair_goodput``), which replaced it.

For: re-planning preemptible jobs every period from their ``speedup(num_nodes, num_replicas)``
(built from the goodput model fitted to profilings), with a penalty for restarting a job that is
already running. Not for: fitting the model (``goodput_model``) or writing results (drivers).

Algorithm (greedy, far cheaper than Pollux's genetic search, same objective):

1. *Sizing.* Oldest first, every job gets the least it can run with (``minReplicas``, at
   least 1) while the cluster has room — like Pollux's fairness term, nobody starves because
   another job scales better. The value of ``n`` replicas is ``speedup(k(n), n)``
   (``k(n)``: fewest nodes that hold ``n``), times ``1 - penalty`` when ``n`` differs from the
   job's previous count, and 0 below ``minReplicas``. Repeatedly grant the step ``n -> m`` with
   the best value gained per unit of dominant resource among all jobs (a lookahead over ``m``
   handles the jump to ``minReplicas`` and the penalty), while the cluster's total free
   resources allow.
2. *Placement.* Jobs keeping their count keep their nodes; the others are packed onto the
   fewest nodes, biggest first. A job that no longer fits (fragmentation) shrinks until it fits
   or drops below ``minReplicas`` (then it waits).

The penalty estimates the fraction of remaining work a restart costs:
``restart_delay * (1 + restarts) / (age + restart_delay)``, capped at ``max_penalty``. A
young job restarts freely; an old or often-restarted one is kept as it is unless the gain is
large.
"""

import heapq
from collections.abc import Mapping, Sequence

from flexjob.core.allocator.contract import Allocations, JobInfo, NodeInfo, Previous, Resources
from flexjob.core.allocator.placement import (
    FreeMap,
    FreeMapPolicy,
    min_nodes_for,
    place_counts,
    place_packed,
)


class GoodputPolicy(FreeMapPolicy):
    """Maximise total speedup; see the module docstring."""

    name = "goodput-v1"

    def __init__(self, restart_delay: float = 30.0, max_penalty: float = 0.9) -> None:
        if restart_delay < 0:
            raise ValueError(f"restart_delay must be >= 0, got {restart_delay}")
        if not 0.0 <= max_penalty < 1.0:
            raise ValueError(f"max_penalty must be in [0, 1), got {max_penalty}")
        self.restart_delay = restart_delay
        self.max_penalty = max_penalty

    def penalty(self, job: JobInfo) -> float:
        raw = self.restart_delay * (1 + job.restarts) / (job.age + self.restart_delay + 1e-9)
        return min(raw, self.max_penalty)

    def allocate(self, job: JobInfo, nodes: Sequence[NodeInfo]) -> list[str]:
        if not job.preemptible:  # fixed size: only where it goes is ours to choose
            return place_packed(FreeMap(nodes), job.resources, job.replicas) or []
        return self.optimize([job], nodes, {}).get(job.id, [])

    def plan(self, jobs: Sequence[JobInfo], free: FreeMap, previous: Previous) -> Allocations:
        counts = _Sizer(self, jobs, free, previous).run()
        return place_counts(jobs, free, previous, counts)


class _Sizer:
    """Step 1 of the algorithm: replica counts by greedy value-per-resource with lookahead."""

    def __init__(
        self,
        policy: GoodputPolicy,
        jobs: Sequence[JobInfo],
        free: FreeMap,
        previous: Mapping[str, Sequence[str]],
    ) -> None:
        self.jobs = list(jobs)
        self.total = free.total()
        self.left = self.total
        self.counts = [0] * len(self.jobs)
        self.prev = [len(previous.get(job.id, ())) for job in self.jobs]
        self.penalties = [policy.penalty(job) for job in self.jobs]
        self.per_node = [
            max(free.capacity_for(job.resources).values(), default=0) for job in self.jobs
        ]
        self.cost = [self._cost(job.resources) for job in self.jobs]
        self._values: list[dict[int, float]] = [{} for _ in self.jobs]

    def _cost(self, per_replica: Resources) -> float:
        shares = [
            need / have
            for need, have in (
                (per_replica.gpu, self.total.gpu),
                (per_replica.cpu, self.total.cpu),
                (per_replica.memory, self.total.memory),
            )
            if need > 0 and have > 0
        ]
        return max(shares, default=1e-6)

    def value(self, i: int, n: int) -> float:
        cached = self._values[i].get(n)
        if cached is not None:
            return cached
        job = self.jobs[i]
        if n <= 0 or n < job.min_replicas or (not job.preemptible and n != job.replicas):
            v = 0.0
        else:
            v = max(job.speedup(min_nodes_for(n, self.per_node[i]), n), 0.0)
            if self.prev[i] and n != self.prev[i]:
                v *= 1.0 - self.penalties[i]
        self._values[i][n] = v
        return v

    def best_step(self, i: int) -> tuple[float, int] | None:
        """The best (value per cost, target count) from the current count, or None."""
        job = self.jobs[i]
        n = self.counts[i]
        top = job.max_replicas if job.preemptible else job.replicas
        room = min(top, n + job.resources.count_in(self.left))
        base = self.value(i, n)
        best: tuple[float, int] | None = None
        for m in range(n + 1, room + 1):
            gain = (self.value(i, m) - base) / (self.cost[i] * (m - n))
            if gain > 1e-12 and (best is None or gain > best[0] + 1e-12):
                best = (gain, m)
        return best

    def _floor(self) -> None:
        """Highest priority, then oldest first, give every job the least it can run with, while
        it fits."""
        jobs = self.jobs
        for i in sorted(range(len(jobs)), key=lambda i: (-jobs[i].priority, -jobs[i].age, i)):
            job = self.jobs[i]
            least = max(job.min_replicas, 1) if job.preemptible else job.replicas
            need = job.resources.times(least)
            if least and self.per_node[i] > 0 and need.fits_in(self.left):
                self.left = self.left - need
                self.counts[i] = least

    def run(self) -> dict[str, int]:
        self._floor()
        heap: list[tuple[float, float, int, int]] = []
        for i, job in enumerate(self.jobs):
            if self.per_node[i] <= 0 and not job.resources.is_empty:
                continue
            step = self.best_step(i)
            if step is not None:
                heap.append((-step[0], -job.age, i, step[1]))
        heapq.heapify(heap)
        while heap:
            _, neg_age, i, target = heapq.heappop(heap)
            job = self.jobs[i]
            grow = job.resources.times(target - self.counts[i])
            if grow.fits_in(self.left):
                self.left = self.left - grow
                self.counts[i] = target
            step = self.best_step(i)
            if step is not None:
                heapq.heappush(heap, (-step[0], neg_age, i, step[1]))
        return {job.id: self.counts[i] for i, job in enumerate(self.jobs)}
