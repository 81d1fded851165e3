"""The ``pack`` policy: requested size on the fewest nodes (less cross-node traffic).

Like ``static`` it never resizes or moves a running job; unlike it, it picks the tightest nodes
that hold the whole job, leaving large holes for large jobs.
"""

from flexjob.core.allocator.contract import Resources
from flexjob.core.allocator.placement import FreeMap, place_packed
from flexjob.core.allocator.requested import RequestedSizePolicy


class PackPolicy(RequestedSizePolicy):
    """Requested size, fewest nodes."""

    name = "pack"

    def place(self, free: FreeMap, per_replica: Resources, count: int) -> list[str] | None:
        return place_packed(free, per_replica, count)
