"""How the Allocator sees an ``ElasticJob``: one task per replica type it places, each with its
bounds and resources.

For: building ``core.allocator.JobInfo`` from a stored job (``job_infos``). Every scalable
replica type of a job is a task of its own (``placed_types``: the scaling target first, then
the others — a DIJob v2's learner, collector and evaluator all get nodes), keyed by
``namespace/name/type`` (``task_key``); masters and coordinators are not placed. Not for
writing status.
"""

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from flexjob.api import ElasticJob, ElasticJobStatus, JobPriority, ReplicaType, replica_bounds
from flexjob.api.bounds import clamp
from flexjob.api.quantity import cpu_cores, memory_mib
from flexjob.api.roles import scalable_types, scaling_target
from flexjob.core.allocator import JobInfo, Resources
from flexjob.core.operator.replica_plan import desired_count
from flexjob.core.operator.replica_resources import GPU_RESOURCE, replica_asks
from flexjob.scheduler.profilings import goodput_model


def job_key(job: ElasticJob) -> str:
    return f"{job.namespace}/{job.name}"


def task_key(job: ElasticJob, rtype: ReplicaType) -> str:
    """The policy's id of one placed type of ``job``: ``namespace/name/type``."""
    return f"{job_key(job)}/{rtype.value}"


def placed_types(job: ElasticJob) -> list[ReplicaType]:
    """The replica types of ``job`` the Allocator places: the scaling target first, then every
    other scalable type in spec order."""
    target = scaling_target(job.spec.replica_specs)
    if target is None:
        return []
    return [target, *(t for t in scalable_types(job.spec.replica_specs) if t is not target)]


def resources_of(quantities: Mapping[str, Any]) -> Resources:
    """The GPUs (``nvidia.com/gpu``), CPU cores and memory (MiB) among Kubernetes resource
    quantities; ``ValueError`` for one that is not a quantity."""
    return Resources(
        gpu=int(cpu_cores(quantities.get(GPU_RESOURCE, 0))),
        cpu=cpu_cores(quantities.get("cpu", 0)),
        memory=memory_mib(quantities.get("memory", 0)),
    )


def replica_resources(job: ElasticJob, rtype: ReplicaType) -> Resources:
    """What one replica asks for (``core.operator.replica_resources.replica_asks``); none when a
    quantity is bad."""
    try:
        return resources_of(replica_asks(job.spec.replica_specs[rtype].template))
    except ValueError:
        return Resources()


def created_at(job: ElasticJob) -> datetime | None:
    stamp = job.metadata.creation_timestamp
    if not stamp:
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None


def job_infos(
    job: ElasticJob, now: datetime, restarts: dict[str, int], attained: float = 0.0
) -> list[tuple[ReplicaType, JobInfo]]:
    """The policy's view of each placed type of ``job`` (none when it has nothing to place);
    ``restarts`` (by task key) and ``attained`` (the whole job's service so far, shared by its
    tasks) are what the driver tracked."""
    return [
        (rtype, task_info(job, rtype, now, restarts.get(task_key(job, rtype), 0), attained))
        for rtype in placed_types(job)
    ]


def task_info(
    job: ElasticJob, rtype: ReplicaType, now: datetime, restarts: int, attained: float
) -> JobInfo:
    bounds = replica_bounds(job.spec.replica_specs[rtype])
    replicas = max(desired_count(job, job.status or ElasticJobStatus(), rtype), 0)
    preemptible = bool(job.spec.preemptible)
    lo, hi = bounds.min, max(bounds.max, 1)
    born = created_at(job)
    profilings = job.status.profilings if job.status else {}
    return JobInfo(
        id=task_key(job, rtype),
        replicas=clamp(replicas, lo, hi) if preemptible else replicas,
        min_replicas=lo,
        max_replicas=hi,
        preemptible=preemptible,
        resources=replica_resources(job, rtype),
        age=max((now - born).total_seconds(), 0.0) if born else 0.0,
        restarts=restarts,
        attained=attained,
        priority=JobPriority.rank_of(job.spec.priority),
        speedup=goodput_model(profilings).speedup,
    )
