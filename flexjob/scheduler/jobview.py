"""How the Allocator sees an ``ElasticJob``: its elastic replica type, bounds and resources.

For: building ``core.policies.JobInfo`` from a stored job (``job_info``). The policy sizes one
replica type per job — the first of worker, learner, collector, ps the job has (else its first
non-master type); masters and other helpers are not placed. Not for writing status.
"""

from datetime import datetime

from flexjob.api import ElasticJob, ReplicaType
from flexjob.api.quantity import cpu_cores, memory_mib
from flexjob.core.policies import JobInfo, Resources
from flexjob.core.scaling_target import elastic_type
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


def desired_replicas(job: ElasticJob, rtype: ReplicaType) -> int:
    spec = job.spec.replica_specs[rtype]
    if job.status is not None and rtype in job.status.replicas:
        return job.status.replicas[rtype]
    return spec.replicas if spec.replicas is not None else 1


def created_at(job: ElasticJob) -> datetime | None:
    stamp = job.metadata.creation_timestamp
    if not stamp:
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None


def job_info(job: ElasticJob, now: datetime, restarts: int = 0) -> JobInfo | None:
    """The policy's view of ``job``, or None when it has nothing to place."""
    rtype = elastic_type(job)
    if rtype is None:
        return None
    spec = job.spec.replica_specs[rtype]
    replicas = max(desired_replicas(job, rtype), 0)
    preemptible = bool(job.spec.preemptible)
    lo = spec.min_replicas if spec.min_replicas is not None else min(replicas, 1)
    hi = max(spec.max_replicas if spec.max_replicas is not None else replicas, lo, 1)
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
        speedup=goodput_model(profilings).speedup,
    )
