"""How the Allocator sees an ``ElasticJob``: its elastic replica type, bounds and resources.

For: building ``core.policies.JobInfo`` from a stored job (``job_info``). The policy sizes one
replica type per job (``api.roles.scaling_target``); masters and other helpers are not
placed. Not for writing status.
"""

from datetime import datetime

from flexjob.api import ElasticJob, ElasticJobStatus, JobPriority, ReplicaType, replica_bounds
from flexjob.api.quantity import cpu_cores, memory_mib
from flexjob.api.roles import scaling_target
from flexjob.core.policies import JobInfo, Resources
from flexjob.core.replica_plan import desired_count
from flexjob.scheduler.profilings import goodput_model

GPU_RESOURCE = "nvidia.com/gpu"


def job_key(job: ElasticJob) -> str:
    return f"{job.namespace}/{job.name}"


def replica_resources(job: ElasticJob, rtype: ReplicaType) -> Resources:
    """What one replica asks for: requests, else limits, of its main container."""
    containers = job.spec.replica_specs[rtype].template.spec.containers
    if not containers:
        return Resources()
    res = containers[0].resources
    merged = {**res.limits, **res.requests}
    try:
        return Resources(
            gpu=int(cpu_cores(merged.get(GPU_RESOURCE, 0))),
            cpu=cpu_cores(merged.get("cpu", 0)),
            memory=memory_mib(merged.get("memory", 0)),
        )
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


def job_info(
    job: ElasticJob, now: datetime, restarts: int = 0, attained: float = 0.0
) -> JobInfo | None:
    """The policy's view of ``job``, or None when it has nothing to place; ``restarts`` and
    ``attained`` (service so far) are what the driver tracked for it."""
    rtype = scaling_target(job.spec.replica_specs)
    if rtype is None:
        return None
    bounds = replica_bounds(job.spec.replica_specs[rtype])
    replicas = max(desired_count(job, job.status or ElasticJobStatus(), rtype), 0)
    preemptible = bool(job.spec.preemptible)
    lo, hi = bounds.min, max(bounds.max, 1)
    born = created_at(job)
    profilings = job.status.profilings if job.status else {}
    return JobInfo(
        id=job_key(job),
        replicas=min(max(replicas, lo), hi) if preemptible else replicas,
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
