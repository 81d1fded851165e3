"""The ``static`` policy: each job gets exactly the replicas it asks for, first fit, never moved.

The baseline the other policies are measured against. Not elastic: a job waits until its full
request fits.
"""

from flexjob.core.allocator.contract import Resources
from flexjob.core.allocator.placement import FreeMap, place_first_fit
from flexjob.core.allocator.requested import RequestedSizePolicy


class StaticPolicy(RequestedSizePolicy):
    """Requested size, nodes filled in order."""

    name = "static"

    def place(self, free: FreeMap, per_replica: Resources, count: int) -> list[str] | None:
        return place_first_fit(free, per_replica, count)
