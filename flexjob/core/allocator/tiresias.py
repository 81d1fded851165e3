"""The ``tiresias`` policy: requested size, least attained service first, with preemption.

A baseline after Tiresias (NSDI'19, discretised 2D-LAS): every job gets exactly its requested
replica count (like ``static``), but jobs run in ``service.service_order`` — a job that has had
little service goes before one that has had much, preempting it at the next period if both do
not fit. Jobs that stay admitted keep their nodes; a job whose request does not fit is skipped
(backfill). Not for: resizing jobs (``goodput``).
"""

from collections.abc import Sequence

from flexjob.core.allocator.attained_service import (
    DEFAULT_THRESHOLDS,
    check_thresholds,
    service_order,
)
from flexjob.core.allocator.contract import Allocations, JobInfo, NodeInfo, Previous
from flexjob.core.allocator.placement import FreeMap, FreeMapPolicy, place_packed
from flexjob.core.allocator.requested import requested_count


class TiresiasPolicy(FreeMapPolicy):
    """Requested size, least-attained-service order; see the module docstring."""

    name = "tiresias"

    def __init__(self, thresholds: Sequence[float] = DEFAULT_THRESHOLDS) -> None:
        self.thresholds = check_thresholds(thresholds)

    def allocate(self, job: JobInfo, nodes: Sequence[NodeInfo]) -> list[str]:
        return place_packed(FreeMap(nodes), job.resources, requested_count(job)) or []

    def plan(self, jobs: Sequence[JobInfo], free: FreeMap, previous: Previous) -> Allocations:
        budget = free.copy()
        admitted: list[JobInfo] = []
        for job in service_order(jobs, previous, self.thresholds):
            if place_packed(budget, job.resources, requested_count(job)) is not None:
                admitted.append(job)
        result: Allocations = {job.id: [] for job in jobs}
        moving: list[JobInfo] = []
        for job in admitted:
            kept = list(previous.get(job.id, ()))
            if len(kept) == requested_count(job) and free.fits(kept, job.resources):
                free.take(kept, job.resources)
                result[job.id] = kept
            else:
                moving.append(job)
        for job in moving:  # fragmentation may leave one out until the next period
            result[job.id] = place_packed(free, job.resources, requested_count(job)) or []
        return result
