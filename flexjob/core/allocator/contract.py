"""The allocation policy interface: plain data in, node lists out. Any driver can call it.

What this is for: the contract between a *driver* (the live ``flexjob.scheduler.Allocator``, the
cluster simulator ``flexjob.scheduler.simulator``, or another team's simulator) and a *policy*
(``static``, ``pack``, ``goodput`` or your own). Not for: reading jobs from a platform, writing
``status.allocation``, or deciding when to run — drivers do that.

Inputs
------
``JobInfo`` — one elastic job, as the policy sees it:

- ``id``: any unique string (the live Allocator uses ``namespace.name``);
- ``replicas``: the replica count the job asks for now (``status.replicas`` or the spec); a
  non-preemptible job always gets exactly this many;
- ``min_replicas`` / ``max_replicas``: the bounds a preemptible job may be resized within;
- ``preemptible``: whether the Allocator may resize and move it;
- ``age``: seconds since the job was submitted; ``restarts``: how many times it was re-allocated;
- ``priority``: the job's ``spec.priority`` as a number (low -1, normal 0, high 1): jobs
  placed in a round are placed highest priority first, then oldest first;
- ``attained``: service the job has had so far, in GPU-seconds (0 when the driver does not
  track it: ordering by attained service then falls back to age);
- ``resources``: what one replica needs (``Resources``: GPUs, CPU cores, memory MiB);
- ``speedup(num_nodes, num_replicas) -> float``: how much faster than one replica on one node
  the job trains with that many replicas spread over that many nodes (``speedup(1, 1) == 1``).
  Built from the goodput model fitted to the job's profilings (``goodput_model.GoodputModel``),
  or any callable you give.

``NodeInfo`` — one node: ``name`` and ``free`` resources. For ``optimize``, "free" means free
of everything *except* the jobs passed in (their previous allocations are not subtracted: the
policy may move them). For ``allocate``, it is what is free right now.

Outputs
-------
An allocation is a list of node names, one entry per replica, index-aligned with the replica
index (replica ``i`` runs on ``allocation[i]``); its length is the job's new replica count.
An empty list means "not running now" (pending, or preempted).

- ``Policy.allocate(job, nodes) -> list[str]`` places a newly submitted job.
- ``Policy.optimize(jobs, nodes, previous) -> dict[job_id, list[str]]`` re-plans all preemptible
  jobs each period; ``previous`` maps job ids to their current allocation. Jobs missing from the
  result get ``[]``.

Drivers check results with ``placement.check_allocations`` (capacity, replica bounds); a policy
that overcommits a node is a bug, reported as ``PolicyError``. Policies load by name through
``flexjob.scheduler.registry.load_policy`` (built-ins, then the ``flexjob.policies`` entry-point
group, then ``module:Class``).
"""

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from flexjob.api.errors import AllocatorError

#: speedup(num_nodes, num_replicas) relative to one replica on one node.
SpeedupFn = Callable[[int, int], float]


class PolicyError(AllocatorError):
    """A policy returned an allocation that breaks the contract (overcommit, bad count)."""


def linear_speedup(num_nodes: int, num_replicas: int) -> float:
    """Perfect scaling: the default when nothing is known about a job."""
    del num_nodes
    return float(num_replicas)


@dataclass(frozen=True, slots=True)
class Resources:
    """An amount of GPUs, CPU cores and memory (MiB)."""

    gpu: int = 0
    cpu: float = 0.0
    memory: int = 0

    def __add__(self, other: "Resources") -> "Resources":
        return Resources(self.gpu + other.gpu, self.cpu + other.cpu, self.memory + other.memory)

    def __sub__(self, other: "Resources") -> "Resources":
        return Resources(self.gpu - other.gpu, self.cpu - other.cpu, self.memory - other.memory)

    def times(self, count: int) -> "Resources":
        return Resources(self.gpu * count, self.cpu * count, self.memory * count)

    def fits_in(self, other: "Resources") -> bool:
        """Whether this amount fits within ``other`` in every dimension."""
        return (
            self.gpu <= other.gpu and self.cpu <= other.cpu + 1e-9 and self.memory <= other.memory
        )

    def count_in(self, other: "Resources") -> int:
        """How many of this amount fit in ``other`` (a large number for an empty request)."""
        counts = [
            int(have // need) if need > 0 else 1 << 30
            for need, have in (
                (self.gpu, other.gpu),
                (self.cpu, other.cpu + 1e-9),
                (self.memory, other.memory),
            )
        ]
        return max(0, min(counts))

    @property
    def is_empty(self) -> bool:
        return self.gpu <= 0 and self.cpu <= 0 and self.memory <= 0


@dataclass(frozen=True, slots=True)
class NodeInfo:
    """A node and its free resources (see the module docstring for what "free" means)."""

    name: str
    free: Resources


@dataclass(frozen=True, slots=True)
class JobInfo:
    """One job as a policy sees it. See the module docstring for each field."""

    id: str
    replicas: int
    min_replicas: int
    max_replicas: int
    preemptible: bool
    resources: Resources
    age: float = 0.0
    restarts: int = 0
    attained: float = 0.0
    priority: int = 0
    speedup: SpeedupFn = field(default=linear_speedup, compare=False)

    def __post_init__(self) -> None:
        if self.min_replicas < 0:
            raise ValueError(f"minReplicas must be >= 0, got {self.min_replicas}")
        if self.max_replicas < max(self.min_replicas, 1):
            raise ValueError(
                f"maxReplicas must be >= max(minReplicas, 1), got {self.max_replicas} "
                f"with minReplicas {self.min_replicas}"
            )
        if self.replicas < 0:
            raise ValueError(f"replicas must be >= 0, got {self.replicas}")


#: Job id -> node names, one per replica.
Allocations = dict[str, list[str]]
#: The allocations of the previous round, read only.
Previous = Mapping[str, Sequence[str]]


@runtime_checkable
class Policy(Protocol):
    """An allocation policy. Implementations must not mutate their inputs."""

    name: str

    def allocate(self, job: JobInfo, nodes: Sequence[NodeInfo]) -> list[str]:
        """Place a newly submitted job; ``[]`` when it cannot run now."""
        ...

    def optimize(
        self, jobs: Sequence[JobInfo], nodes: Sequence[NodeInfo], previous: Previous
    ) -> Allocations:
        """Re-plan every preemptible job in ``jobs`` from their ``previous`` allocations."""
        ...
