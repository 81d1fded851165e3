"""Replica resources decided by ScalePlans: folding them into the job status and rendering them
into a replica's pod template.

Two status fields hold them, both written by the operator only:

* ``replicaResources`` (per replica type): a plan's ``replicaResourceSpecs[type].resource``.
  Replicas of that type created from then on get these resources; running replicas keep theirs
  until they are relaunched for another reason (a failure, a ``migratePods`` entry). Unset fields
  of a plan keep the value from before (a plan that only raises memory keeps the CPU). Running
  replicas are deliberately not rolled: the operator does not observe a replica's resources, and
  relaunching every worker for a type-level change would interrupt training for no gain a
  planner asked for; planners name the replicas to relaunch in ``migratePods`` (the master's
  optimizer does, after an OOM or for a hot PS).
* ``migratedReplicas`` (per replica, by short name such as ``worker-1``): a plan's
  ``migratePods`` entry. That replica is deleted and created again, same index, with these
  resources on top of its type's. A later plan that *changes* the type's resources clears the
  type's per-replica entries (the newer decision wins); one restating them keeps them.

A DI coordinator's create request with ``cpus`` / ``memory`` / ``gpus`` (``server.v1alpha2``)
gives the replicas it creates those resources as their own, in ``migratedReplicas`` too
(``set_replica_resources``, written by the server with the new count, in one patch): such a
replica is created, and recreated after a failure, with what its request asked, as di-server
creates its pods; removing it removes the entry.

A replica the platform reports ``OOMKilled`` (over its memory limit) is relaunched by the
operator with more memory (``oom_memory``: the planner's one rule, ``core.planner.oom``, bounded
by ``max_growth`` times the memory its spec declares), recorded in ``migratedReplicas`` like a
plan's relaunch. A ``migratePods`` entry asking for resources the replica already has (a
master's plan for the same OOM) relaunches nothing.

Rendering sets the main container's requests *and* limits: ``cpu`` in cores (``"1.5"``),
``memory`` as ``"<MiB>Mi"``, ``gpu`` as ``nvidia.com/gpu``; other open fields of a
``ResourceSpec`` pass through by their own name. Keys a plan never set stay as the template has
them. What a replica asks for (``replica_asks``: its main container's requests, and its
limits where it requests nothing, ``asked``) is read here for everyone who counts it: the
Allocator (``scheduler.jobview``, ``scheduler.nodes``) and the DI logic-learner rule
(``core.operator.logic_learners``). Not here: when replicas are deleted or created
(``core.operator.reconcile``).
No I/O.
"""

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from flexjob.api import (
    ElasticJob,
    ElasticJobStatus,
    PodRef,
    PodTemplateSpec,
    ReplicaPhase,
    ReplicaType,
    ResourceSpec,
    ScalePlan,
)
from flexjob.api.errors import InvalidSpecError
from flexjob.api.quantity import memory_mib
from flexjob.api.roles import MASTER_TYPE, ROLE_TRAITS
from flexjob.core.planner.oom import OomConfig, plan_oom_memory
from flexjob.core.replicas import OOM_KILLED, Replica, short_replica_name

GPU_RESOURCE = "nvidia.com/gpu"


def asked(requests: Mapping[str, Any], limits: Mapping[str, Any]) -> dict[str, Any]:
    """What a container asks for, by resource name: its requests, and its limits where it
    requests nothing (Kubernetes defaults a missing request to the limit)."""
    return {**limits, **requests}


def replica_asks(template: PodTemplateSpec) -> dict[str, Any]:
    """What a replica made from ``template`` asks for: its main (first) container's ``asked``
    quantities (none without a container)."""
    if not template.spec.containers:
        return {}
    res = template.spec.containers[0].resources
    return asked(res.requests, res.limits)


def merge_resources(old: ResourceSpec | None, new: ResourceSpec) -> ResourceSpec:
    """``new`` on top of ``old``: fields ``new`` leaves unset keep ``old``'s value."""
    base = old.model_dump(exclude_none=True) if old is not None else {}
    return ResourceSpec.model_validate({**base, **new.model_dump(exclude_none=True)})


def is_empty(res: ResourceSpec) -> bool:
    return not res.model_dump(exclude_none=True)


def _cores(cpu: float) -> str:
    return f"{cpu:g}"


def requirements(res: ResourceSpec) -> dict[str, str]:
    """Kubernetes resource names and quantities of ``res`` (only the fields that are set)."""
    out: dict[str, str] = {}
    for key, value in res.model_dump(exclude_none=True).items():
        if key == "cpu":
            out["cpu"] = _cores(float(value))
        elif key == "memory":
            out["memory"] = f"{int(value)}Mi"
        elif key == "gpu":
            out[GPU_RESOURCE] = str(int(value))
        else:
            out[key] = str(value)
    return out


def replica_resources(
    status: ElasticJobStatus, rtype: ReplicaType, index: int
) -> ResourceSpec | None:
    """The resources plans set for replica ``index`` of ``rtype``; None when none did."""
    by_type = status.replica_resources.get(rtype)
    own = status.migrated_replicas.get(short_replica_name(rtype, index))
    if own is None:
        return by_type
    return merge_resources(by_type, own)


def apply_resources(template: PodTemplateSpec, res: ResourceSpec) -> None:
    """Set ``res`` as requests and limits of ``template``'s main (first) container."""
    wanted = requirements(res)
    if not wanted or not template.spec.containers:
        return
    main = template.spec.containers[0].resources
    main.requests = {**main.requests, **wanted}
    main.limits = {**main.limits, **wanted}


@dataclass(frozen=True, slots=True)
class Migration:
    """One ``migratePods`` entry resolved: the replica slot, its new resources, and the replica
    to delete now (None when none of that slot is live)."""

    type: ReplicaType
    index: int
    resource: ResourceSpec
    replica: Replica | None

    @property
    def short_name(self) -> str:
        return short_replica_name(self.type, self.index)


class UnknownReplicaError(InvalidSpecError):
    """A ``migratePods`` entry names no replica of the job that may be relaunched."""


def _resolve(
    job: ElasticJob,
    ref: PodRef,
    own: Sequence[Replica],
    counts: Mapping[ReplicaType, int],
) -> tuple[ReplicaType, int]:
    for r in own:
        if ref.name and ref.name in (r.name, short_replica_name(r.type, r.index)):
            return r.type, r.index
    if not ref.name and ref.id is not None and 0 <= ref.id < counts.get(ref.type, 0):
        return ref.type, ref.id
    for rtype, wanted in counts.items():  # a desired replica that is absent right now
        for index in range(wanted):
            if ref.name in (short_replica_name(rtype, index), f"{job.name}-{rtype}-{index}"):
                return rtype, index
    label = ref.name or f"{ref.type.value} id {ref.id}"
    raise UnknownReplicaError(label)


def resolve_migrations(
    job: ElasticJob,
    plan: ScalePlan,
    own: Sequence[Replica],
    counts: Mapping[ReplicaType, int],
) -> list[Migration]:
    """The ``migratePods`` entries of ``plan`` as slots of ``job``. ``own`` are the job's
    observed replicas, ``counts`` the desired counts. Raises ``UnknownReplicaError`` naming every
    entry that matches no replica (or the master, which is never relaunched this way)."""
    unknown: list[str] = []
    out: list[Migration] = []
    for ref in plan.spec.migrate_pods:
        try:
            rtype, index = _resolve(job, ref, own, counts)
        except UnknownReplicaError as exc:
            unknown.append(str(exc))
            continue
        if ROLE_TRAITS[rtype].controls_job:
            unknown.append(f"{ref.name or MASTER_TYPE.value} (the master cannot be migrated)")
            continue
        live = [
            r
            for r in own
            if r.type is rtype
            and r.index == index
            and not r.deleting
            and r.phase is not ReplicaPhase.SUCCEEDED
        ]
        had = (job.status or ElasticJobStatus()).migrated_replicas.get(
            short_replica_name(rtype, index)
        )
        if had is not None and merge_resources(had, ref.resource) == had:
            live = []  # it already runs with these resources: nothing to relaunch
        out.append(Migration(rtype, index, ref.resource, live[0] if live else None))
    if unknown:
        raise UnknownReplicaError(", ".join(unknown))
    return out


def fold_resources(
    status: ElasticJobStatus, plan: ScalePlan, migrations: Sequence[Migration]
) -> None:
    """Record ``plan``'s per-type resources and ``migrations`` in ``status`` (in place)."""
    by_type = dict(status.replica_resources)
    migrated = dict(status.migrated_replicas)
    for rtype, spec in plan.spec.replica_resource_specs.items():
        if is_empty(spec.resource):
            continue
        merged = merge_resources(by_type.get(rtype), spec.resource)
        if merged == by_type.get(rtype):
            continue  # the same resources again (a plan restating them): nothing is newer
        by_type[rtype] = merged
        prefix = f"{rtype.value}-"
        migrated = {k: v for k, v in migrated.items() if not k.startswith(prefix)}
    for m in migrations:
        migrated[m.short_name] = merge_resources(migrated.get(m.short_name), m.resource)
    status.replica_resources = by_type
    status.migrated_replicas = migrated


def _declared_memory_mib(job: ElasticJob, rtype: ReplicaType) -> int | None:
    """The memory limit the spec declares for ``rtype``'s main container (MiB), if any."""
    spec = job.spec.replica_specs.get(rtype)
    if spec is None or not spec.template.spec.containers:
        return None
    value = spec.template.spec.containers[0].resources.limits.get("memory")
    try:
        return None if value is None else memory_mib(value)
    except ValueError:
        return None


def oom_memory(
    job: ElasticJob, status: ElasticJobStatus, replica: Replica, config: OomConfig | None = None
) -> int | None:
    """The memory (MiB) to relaunch ``replica`` with, when the platform reports it
    ``OOMKilled``: its limit x ``config.factor``, at most ``config.max_growth`` x the limit its
    spec declares. None when it was not OOMKilled, ran without a limit (more memory means
    nothing then), or already has the bound."""
    if replica.reason != OOM_KILLED:
        return None
    config = config or OomConfig()
    declared = _declared_memory_mib(job, replica.type)
    planned = replica_resources(status, replica.type, replica.index)
    current = planned.memory if planned is not None and planned.memory else declared
    if current is None:
        return None
    new = plan_oom_memory(float(current), float(declared or current) * config.max_growth, config)
    return None if new is None else int(new)


def record_oom_relaunch(status: ElasticJobStatus, replica: Replica, memory_mib: int) -> None:
    """Give ``replica``'s next incarnation ``memory_mib`` MiB (in place)."""
    name = short_replica_name(replica.type, replica.index)
    status.migrated_replicas = {
        **status.migrated_replicas,
        name: merge_resources(status.migrated_replicas.get(name), ResourceSpec(memory=memory_mib)),
    }


def set_replica_resources(
    status: ElasticJobStatus, rtype: ReplicaType, indexes: Iterable[int], res: ResourceSpec | None
) -> None:
    """Give replicas ``indexes`` of ``rtype`` ``res`` as their own resources, on top of their
    type's (in place); ``None`` or empty: they go back to their type's."""
    migrated = dict(status.migrated_replicas)
    for index in indexes:
        name = short_replica_name(rtype, index)
        if res is None or is_empty(res):
            migrated.pop(name, None)
        else:
            migrated[name] = res
    status.migrated_replicas = migrated
