"""Whether a job may be resized by hand to a replica count: its phase and the type's bounds.

One rule for everyone who asks for a size (``flexjob scale``, the HTTP server): a finished job
cannot be scaled, and a count outside the bounds the spec declares is refused naming the bound
(``api.bounds.scale_limits``). Each function returns the problem as a sentence, or None. No I/O.
"""

from flexjob.api import ElasticJob, ReplicaType
from flexjob.api.bounds import scale_limits


def finished_problem(job: ElasticJob) -> str | None:
    """Why ``job`` cannot change size any more (it has finished), or None."""
    phase = job.status.phase if job.status else None
    if phase is not None and phase.finished:
        return f"job {job.namespace}/{job.name} has finished ({phase.value})"
    return None


def bound_problem(job: ElasticJob, rtype: ReplicaType, wanted: int) -> str | None:
    """Why ``wanted`` replicas of ``rtype`` are not allowed for ``job``, or None."""
    spec = job.spec.replica_specs.get(rtype)
    if spec is None:
        types = ", ".join(t.value for t in job.spec.replica_specs) or "none"
        return f"job {job.namespace}/{job.name} has no {rtype.value} replicas (it has: {types})"
    why = scale_limits(spec, wanted)
    if why is None:
        return None
    return f"job {job.namespace}/{job.name}: {rtype.value} replicas would be {wanted}, {why}"
