"""Cluster-aware plans: a plan never asks for more than the cluster has free, and jobs asking
at the same time share what is free by Dominant Resource Fairness (DRF).

``free_capacity`` sums what the Cluster Monitor's nodes have left (capacity minus use, never
below zero). ``share`` hands out replicas to ``Ask``s one at a time, each to the job whose
dominant share (its largest fraction of any cluster resource, counting what it holds and what
it was granted so far) is lowest and whose next replica still fits; ties go by job name. So
no grant exceeds what is free, no job gets more than it asked, and a job is only left short
while another with a lower dominant share could use the room. ``plan_asks`` reads what a plan
asks for beyond what the job runs now; ``fit_plan`` cuts the plan to the grants.

Only growth is bounded: fewer replicas, or a replica's own new resources after an OOM
(``node_resources``), never wait for capacity. Pure: the Brain's processor feeds it the
monitor's nodes and the asks it saw recently.
"""

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from flexjob.api import ReplicaType
from flexjob.api.scaleplan import ReplicaResourceSpec, ResourcePlan
from flexjob.core.allocator.contract import Resources
from flexjob.core.planner.stats import ReplicaResources


@dataclass(frozen=True, slots=True)
class Ask:
    """``count`` more replicas of ``replica_type``, ``each`` needing ``each``, for ``job``,
    which holds ``held`` now (all its replicas together)."""

    job: str
    replica_type: ReplicaType
    each: Resources
    count: int
    held: Resources = field(default_factory=Resources)


def free_capacity(nodes: Iterable[tuple[Resources, Resources]]) -> Resources:
    """What is left over ``(capacity, used)`` per node, each dimension at least zero."""
    total = Resources()
    for capacity, used in nodes:
        left = capacity - used
        total += Resources(max(left.gpu, 0), max(left.cpu, 0.0), max(left.memory, 0))
    return total


def dominant_share(amount: Resources, total: Resources) -> float:
    """The largest fraction of ``total`` that ``amount`` takes in any dimension."""
    shares = [
        have / whole
        for have, whole in (
            (amount.gpu, total.gpu),
            (amount.cpu, total.cpu),
            (amount.memory, total.memory),
        )
        if whole > 0
    ]
    return max(shares, default=0.0)


def share(asks: Sequence[Ask], free: Resources, total: Resources | None = None) -> dict[Ask, int]:
    """Replicas granted per ask (DRF progressive filling, see the module doc). ``total``: the
    cluster's size for dominant shares (default: ``free`` plus what the askers hold)."""
    if total is None:
        total = free
        for held in {a.job: a.held for a in asks}.values():
            total += held
    granted = {a: 0 for a in asks}
    holding: dict[str, Resources] = {}
    for a in asks:
        holding.setdefault(a.job, a.held)
    left = free
    open_asks = [a for a in asks if a.count > 0]
    while open_asks:
        a = min(
            open_asks,
            key=lambda x: (dominant_share(holding[x.job], total), x.job, x.replica_type.value),
        )
        if not a.each.fits_in(left):
            open_asks.remove(a)
            continue
        granted[a] += 1
        left -= a.each
        holding[a.job] += a.each
        if granted[a] >= a.count:
            open_asks.remove(a)
    return granted


def _resources(spec: ReplicaResources) -> Resources:
    return Resources(0, spec.cpu or 0.0, int(spec.memory_mb or 0))


def held(job: str, current: Mapping[ReplicaType, ReplicaResources]) -> Resources:
    """What ``job`` runs with now, all replica types together."""
    total = Resources()
    for spec in current.values():
        total += _resources(spec).times(spec.replicas)
    return total


def plan_asks(
    job: str, plan: ResourcePlan, current: Mapping[ReplicaType, ReplicaResources]
) -> list[Ask]:
    """What ``plan`` asks for beyond ``current``: one ``Ask`` per replica type it grows."""
    holding = held(job, current)
    asks = []
    for rtype, spec in plan.replica_resources.items():
        old = current.get(rtype, ReplicaResources(0))
        cpu = spec.resource.cpu if spec.resource.cpu is not None else old.cpu
        memory = spec.resource.memory if spec.resource.memory is not None else old.memory_mb
        each = _resources(ReplicaResources(1, cpu, float(memory) if memory else None))
        more = spec.replicas - old.replicas
        if more > 0:
            asks.append(Ask(job, rtype, each, more, holding))
    return asks


def fit_plan(
    plan: ResourcePlan,
    current: Mapping[ReplicaType, ReplicaResources],
    granted: Mapping[ReplicaType, int],
    free: Resources,
) -> ResourcePlan:
    """``plan`` with each growing type cut to ``current`` + its grant (a type left with no
    change is dropped); the reason says what was cut and what was free."""
    kept: dict[ReplicaType, ReplicaResourceSpec] = {}
    notes = []
    for rtype, spec in plan.replica_resources.items():
        now = current.get(rtype, ReplicaResources(0))
        old = now.replicas
        if spec.replicas <= old or rtype not in granted:
            kept[rtype] = spec
            continue
        count = old + min(granted[rtype], spec.replicas - old)
        if count < spec.replicas:
            notes.append(
                f"{rtype.value} {spec.replicas} -> {count}: cluster capacity "
                f"(free cpu {free.cpu:g}, memory {free.memory} MiB)"
            )
        cpu, memory = spec.resource.cpu, spec.resource.memory
        same_resources = cpu in (None, now.cpu) and (
            memory is None or float(memory) == now.memory_mb
        )
        if count == old and same_resources:
            continue
        kept[rtype] = spec.model_copy(update={"replicas": count})
    if not notes:
        return plan
    reason = "; ".join([r for r in (plan.reason, *notes) if r])
    return plan.model_copy(update={"replica_resources": kept, "reason": reason})
