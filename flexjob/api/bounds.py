"""``ReplicaBounds``: the (min, replicas, max) range of one replica type, resolved once.

For: every reader of a replica type's range — the defaults webhook, the master's rendezvous
bounds, the optimizer's limits, the server's scale checks and the allocator's job view. The
rule (after DLRover and Kubeflow): ``replicas`` defaults to ``minReplicas`` or 1;
``minReplicas`` to ``replicas`` (capped by ``maxReplicas``); ``maxReplicas`` to
``max(replicas, minReplicas)``. ``scale_limits`` is the one looser reading: a request to
resize a running job (the server's APIs) is checked against the bounds the spec declares, an
unset one not limiting it (a DI coordinator sizes a job that declares none). ``clamp`` is the
one rule that keeps a count within bounds: of a spec (``ReplicaBounds.clamp``), of what a
ScalePlan asks for when it is folded (``declared_clamp``,
``core.operator.replica_plan.fold_plan``), of
the planner's ``JobLimits`` and of the allocator's job view. Not for: the current count of a
running job (``core.operator.replica_plan.desired_count``).
"""

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the job models are not loaded for ``clamp`` (``flexjob run``'s start)
    from flexjob.api.job import ReplicaSpec

DEFAULT_REPLICAS = 1
#: The most replicas of one type a DI job may be scaled to (DI jobs declare no bounds): of an
#: on-request type (``api.roles``) a coordinator asks for, or of a task of a preemptible
#: DIJob v2, which keeps at least one replica.
DI_MAX_REPLICAS = 64


def clamp(count: int, low: int, high: int | None) -> int:
    """``count`` moved into ``[low, high]`` (``high`` None: no upper bound; ``high`` wins when
    ``high < low``)."""
    count = max(count, low)
    return count if high is None else min(count, high)


@dataclass(frozen=True, slots=True)
class ReplicaBounds:
    """The smallest, the asked-for and the largest replica count of one type."""

    min: int
    replicas: int
    max: int

    def clamp(self, count: int) -> int:
        """``count`` moved into ``[min, max]``."""
        return clamp(count, self.min, self.max)


def replica_bounds(spec: "ReplicaSpec") -> ReplicaBounds:
    """The bounds of ``spec`` with the defaults filled in (the same on a defaulted spec)."""
    low, high = spec.min_replicas, spec.max_replicas
    replicas = spec.replicas if spec.replicas is not None else (low if low is not None else 1)
    if low is None:
        low = replicas if high is None else min(replicas, high)
    if high is None:
        high = max(replicas, low)
    return ReplicaBounds(low, replicas, high)


def declared_clamp(spec: "ReplicaSpec", count: int) -> int:
    """``count`` moved into the bounds ``spec`` declares (an unset one does not limit it, as in
    ``scale_limits``), and never below 0: what a folded ScalePlan may set."""
    return clamp(count, max(spec.min_replicas or 0, 0), spec.max_replicas)


def scale_limits(spec: "ReplicaSpec", count: int) -> str | None:
    """Why a request may not resize ``spec``'s type to ``count`` (naming minReplicas or
    maxReplicas), or None; only the bounds the spec declares apply."""
    if spec.min_replicas is not None and count < spec.min_replicas:
        return f"below minReplicas {spec.min_replicas}"
    if count < 0:
        return "below 0"
    if spec.max_replicas is not None and count > spec.max_replicas:
        return f"above maxReplicas {spec.max_replicas}"
    return None
