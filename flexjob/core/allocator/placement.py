"""Placement helpers shared by policies: a mutable free-resource map and ways to fill it.

For: putting N replicas of one size onto nodes (first fit, or fewest nodes), and checking that a
set of allocations respects node capacity and replica bounds. Not for: choosing how many
replicas a job gets — that is each policy's business.
"""

from collections.abc import Callable, Iterable, Mapping, Sequence

from flexjob.core.allocator.contract import (
    Allocations,
    JobInfo,
    NodeInfo,
    PolicyError,
    Previous,
    Resources,
)


class FreeMapPolicy:
    """Base of the built-in policies: ``optimize`` is ``plan`` on a fresh ``FreeMap`` of the
    nodes, which ``plan`` may fill as it places replicas."""

    name: str

    def optimize(
        self, jobs: Sequence[JobInfo], nodes: Sequence[NodeInfo], previous: Previous
    ) -> Allocations:
        return self.plan(jobs, FreeMap(nodes), previous)

    def plan(self, jobs: Sequence[JobInfo], free: "FreeMap", previous: Previous) -> Allocations:
        raise NotImplementedError


class FreeMap:
    """Free resources per node, updated as replicas are placed. Node order is kept."""

    __slots__ = ("_free",)

    def __init__(self, nodes: Iterable[NodeInfo]) -> None:
        self._free: dict[str, Resources] = {node.name: node.free for node in nodes}

    def copy(self) -> "FreeMap":
        clone = FreeMap(())
        clone._free = dict(self._free)
        return clone

    @property
    def names(self) -> list[str]:
        return list(self._free)

    def free(self, name: str) -> Resources:
        return self._free[name]

    def total(self) -> Resources:
        total = Resources()
        for free in self._free.values():
            total = total + free
        return total

    def fits(self, allocation: Sequence[str], per_replica: Resources) -> bool:
        """Whether every replica of ``allocation`` fits on its node right now."""
        need: dict[str, int] = {}
        for name in allocation:
            if name not in self._free:
                return False
            need[name] = need.get(name, 0) + 1
        return all(per_replica.times(n).fits_in(self._free[name]) for name, n in need.items())

    def take(self, allocation: Sequence[str], per_replica: Resources) -> None:
        for name in allocation:
            self._free[name] = self._free[name] - per_replica

    def give(self, allocation: Sequence[str], per_replica: Resources) -> None:
        for name in allocation:
            self._free[name] = self._free[name] + per_replica

    def capacity_for(self, per_replica: Resources) -> dict[str, int]:
        """How many replicas of this size each node can still hold."""
        return {name: per_replica.count_in(free) for name, free in self._free.items()}


def place_first_fit(free: FreeMap, per_replica: Resources, count: int) -> list[str] | None:
    """Fill nodes in order; take the resources and return the allocation, or ``None``."""
    allocation: list[str] = []
    for name, room in free.capacity_for(per_replica).items():
        take = min(room, count - len(allocation))
        allocation.extend([name] * take)
        if len(allocation) == count:
            free.take(allocation, per_replica)
            return allocation
    return None if count > 0 else []


def place_packed(free: FreeMap, per_replica: Resources, count: int) -> list[str] | None:
    """Use as few nodes as possible (best fit for the last chunk); ``None`` if it cannot fit."""
    if count <= 0:
        return []
    room = {name: n for name, n in free.capacity_for(per_replica).items() if n > 0}
    if sum(min(n, count) for n in room.values()) < count:
        return None
    allocation: list[str] = []
    left = count
    while left > 0:
        # Best fit: the tightest node that holds all that is left; else the roomiest node.
        holding = [name for name, n in room.items() if n >= left]
        if holding:
            name = min(holding, key=lambda nm: room[nm])
        else:
            name = max(room, key=lambda nm: room[nm])
        take = min(room.pop(name), left)
        allocation.extend([name] * take)
        left -= take
    free.take(allocation, per_replica)
    return allocation


def place_counts(
    jobs: Sequence[JobInfo],
    free: FreeMap,
    previous: Mapping[str, Sequence[str]],
    counts: Mapping[str, int],
    keep_previous: Callable[[JobInfo, Sequence[str]], bool] | None = None,
) -> dict[str, list[str]]:
    """Put each job's chosen replica count on nodes, taking resources from ``free``.

    Jobs keeping their count keep their nodes (no restart); the others are packed onto the
    fewest nodes, biggest first. A preemptible job that no longer fits (fragmentation) shrinks
    until it fits or would drop below ``minReplicas`` (then it gets ``[]``). When
    ``keep_previous(job, placed)`` says a job is better off where it was and its previous
    nodes still have room, it keeps its previous allocation instead.
    """
    result: dict[str, list[str]] = {job.id: [] for job in jobs}
    moving: list[JobInfo] = []
    for job in jobs:
        kept = list(previous.get(job.id, ()))
        count = counts.get(job.id, 0)
        if count and len(kept) == count and free.fits(kept, job.resources):
            free.take(kept, job.resources)
            result[job.id] = kept
        elif count:
            moving.append(job)
    moving.sort(key=lambda j: (-counts[j.id] * _cost_weight(j.resources), -j.age, j.id))
    for job in moving:
        count = counts[job.id]
        lowest = max(job.min_replicas, 1) if job.preemptible else count
        while count >= lowest:
            placed = place_packed(free, job.resources, count)
            if placed is not None:
                result[job.id] = placed
                break
            count -= 1
        kept = list(previous.get(job.id, ()))
        if keep_previous is not None and kept and keep_previous(job, result[job.id]):
            free.give(result[job.id], job.resources)
            if free.fits(kept, job.resources):
                result[job.id] = kept
            free.take(result[job.id], job.resources)
    return result


def _cost_weight(resources: Resources) -> float:
    return resources.gpu + resources.cpu / 1000.0 + resources.memory / 1e7 + 1e-6


def num_nodes(allocation: Sequence[str]) -> int:
    return len(set(allocation))


def min_nodes_for(count: int, per_node: int) -> int:
    """The fewest nodes ``count`` replicas need when at most ``per_node`` fit on one."""
    if count <= 0:
        return 0
    per_node = max(per_node, 1)
    return -(-count // per_node)


def check_allocations(
    jobs: Sequence[JobInfo], nodes: Sequence[NodeInfo], allocations: Mapping[str, Sequence[str]]
) -> None:
    """Raise ``PolicyError`` when allocations overcommit a node or break a job's bounds."""
    by_id = {job.id: job for job in jobs}
    free = FreeMap(nodes)
    for job_id, allocation in allocations.items():
        job = by_id.get(job_id)
        if job is None:
            raise PolicyError(f"allocation for unknown job {job_id!r}")
        count = len(allocation)
        if count and not job.preemptible and count != job.replicas:
            raise PolicyError(
                f"job {job_id!r} is not preemptible: it needs exactly {job.replicas} replicas, "
                f"got {count}"
            )
        if count and job.preemptible and not job.min_replicas <= count <= job.max_replicas:
            raise PolicyError(
                f"job {job_id!r}: {count} replicas is outside "
                f"[{job.min_replicas}, {job.max_replicas}]"
            )
        unknown = sorted(set(allocation) - set(free.names))
        if unknown:
            raise PolicyError(f"job {job_id!r} is placed on unknown nodes {unknown}")
        if not free.fits(allocation, job.resources):
            raise PolicyError(f"job {job_id!r} overcommits its nodes")
        free.take(allocation, job.resources)
