"""Shared shape of the simple policies: every job gets the replica count it asks for.

For: ``static`` and ``pack``, which differ only in where replicas go. A running job keeps its
nodes; a waiting job starts when its full request fits (oldest first, with backfill). Not for
policies that resize jobs (see ``goodput``).
"""

from collections.abc import Callable, Sequence

from flexjob.api.bounds import clamp
from flexjob.core.allocator.contract import Allocations, JobInfo, NodeInfo, Previous, Resources
from flexjob.core.allocator.placement import FreeMap, FreeMapPolicy

#: Places ``count`` replicas of one size, taking resources from the map; ``None`` if no fit.
Placer = Callable[[FreeMap, Resources, int], list[str] | None]


def requested_count(job: JobInfo) -> int:
    """The replica count a fixed-size policy gives: the request, kept within the bounds."""
    if not job.preemptible:
        return job.replicas
    return clamp(job.replicas, max(job.min_replicas, 1), job.max_replicas)


class RequestedSizePolicy(FreeMapPolicy):
    """Gives each job its requested size with ``place``; never moves a running job."""

    name = "requested"

    def place(self, free: FreeMap, per_replica: Resources, count: int) -> list[str] | None:
        raise NotImplementedError

    def allocate(self, job: JobInfo, nodes: Sequence[NodeInfo]) -> list[str]:
        return self.place(FreeMap(nodes), job.resources, requested_count(job)) or []

    def plan(self, jobs: Sequence[JobInfo], free: FreeMap, previous: Previous) -> Allocations:
        result: Allocations = {}
        waiting: list[JobInfo] = []
        for job in jobs:
            kept = list(previous.get(job.id, ()))
            if kept and free.fits(kept, job.resources):
                free.take(kept, job.resources)
                result[job.id] = kept
            else:
                waiting.append(job)
        for job in sorted(waiting, key=lambda j: (-j.priority, -j.age, j.id)):
            result[job.id] = self.place(free, job.resources, requested_count(job)) or []
        return result
