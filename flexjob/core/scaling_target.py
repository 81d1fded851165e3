"""Which replica type of a job scaling applies to: one elastic type per job.

For: the Allocator (sizes that type), the server's v2alpha1 replica API (scales it by
default). The order is worker, learner, collector, ps; else the job's first non-master type.
Not for: deciding counts (policies and planners do that).
"""

from flexjob.api import ElasticJob, ReplicaType

SCALABLE_ORDER = (ReplicaType.WORKER, ReplicaType.LEARNER, ReplicaType.COLLECTOR, ReplicaType.PS)


def elastic_type(job: ElasticJob) -> ReplicaType | None:
    """The replica type allocation and scaling apply to, or None for a master-only job."""
    types = [t for t in job.spec.replica_specs if t is not ReplicaType.MASTER]
    for rtype in SCALABLE_ORDER:
        if rtype in types:
            return rtype
    return types[0] if types else None
