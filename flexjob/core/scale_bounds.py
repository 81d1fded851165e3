"""Whether a job may be resized to a replica count: its phase and each type's bounds.

One rule for everyone who asks for a size by hand (``flexjob scale``, the HTTP server): a
finished job cannot be scaled, and a type's count must stay within its ``minReplicas`` and
``maxReplicas``. Each function returns the problem as a sentence, or None. No I/O.
"""

from flexjob.api import ElasticJob, ReplicaType


def finished_problem(job: ElasticJob) -> str | None:
    """Why ``job`` cannot change size any more (it has finished), or None."""
    phase = job.status.phase if job.status else None
    if phase is not None and phase.finished:
        return f"job {job.namespace}/{job.name} has finished ({phase.value})"
    return None


def bound_problem(job: ElasticJob, rtype: ReplicaType, wanted: int) -> str | None:
    """Why ``wanted`` replicas of ``rtype`` are outside the type's bounds, or None."""
    spec = job.spec.replica_specs.get(rtype)
    if spec is None:
        types = ", ".join(t.value for t in job.spec.replica_specs) or "none"
        return f"job {job.namespace}/{job.name} has no {rtype.value} replicas (it has: {types})"
    lowest = spec.min_replicas if spec.min_replicas is not None else 0
    if wanted < lowest:
        return (
            f"job {job.namespace}/{job.name}: {rtype.value} replicas would drop to {wanted}, "
            f"below minReplicas {lowest}"
        )
    if spec.max_replicas is not None and wanted > spec.max_replicas:
        return (
            f"job {job.namespace}/{job.name}: {rtype.value} replicas would grow to {wanted}, "
            f"above maxReplicas {spec.max_replicas}"
        )
    return None
