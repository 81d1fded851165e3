"""A plain torch world: the environment of a job with no master, as Kubeflow's PyTorchJob gives.

A job with no master of any kind (``api.master_rule.plain_torch_world``: a PyTorchJob or an
ElasticJob whose pods run ``python train.py`` or ``torchrun``, ``rdzvBackend`` not ``flexjob``)
forms its world through torch's ``env://``. Its leading replica (the ``chief``, Kubeflow's
``Master``, else ``worker-0``; ``api.roles.world_types``; a DI job, whose learners and
collectors form no torch world, gets none of this) gets a service, and every training
replica gets ``MASTER_ADDR``/``MASTER_PORT`` (that service's host and port), ``WORLD_SIZE`` (the
training replicas the job has now) and ``RANK`` (the chief 0, then the workers by index). With
an ``elasticPolicy`` also the flags ``torchrun`` reads from ``PET_<FLAG>``: ``PET_NNODES``
(``min:max`` of the training replicas, one number when fixed), ``PET_RDZV_ENDPOINT`` (the same
service), ``PET_RDZV_BACKEND`` (``rdzvBackend``, default ``c10d``), and ``PET_NPROC_PER_NODE``
/ ``PET_MAX_RESTARTS`` when set. For: ``core.operator.replica_plan`` (the service port and
``replica_env``). No I/O.
"""

from collections.abc import Mapping

from flexjob.api import ElasticJob, ReplicaType, names
from flexjob.api.bounds import replica_bounds
from flexjob.api.master_rule import plain_torch_world
from flexjob.api.roles import world_types

#: torchrun's default rendezvous backend, Kubeflow's when ``rdzvBackend`` is unset.
DEFAULT_RDZV_BACKEND = "c10d"


def world_leader(job: ElasticJob) -> ReplicaType | None:
    """The type whose replica 0 is rank 0 of ``job``'s plain torch world; None when the job
    is no plain torch world."""
    if not plain_torch_world(job):
        return None
    types = world_types(job.spec.replica_specs)
    return types[0] if types else None


def world_rank(counts: Mapping[ReplicaType, int], rtype: ReplicaType, index: int) -> int:
    """The rank of replica ``index`` of ``rtype``: the replicas of the types before it in rank
    order (``counts``: each training type's current count), plus ``index``."""
    before = 0
    for t in world_types(counts):
        if t is rtype:
            return before + index
        before += counts[t]
    raise ValueError(f"{rtype.value} is not a training type of this world")


def _nnodes(job: ElasticJob) -> str:
    specs = job.spec.replica_specs
    bounds = [replica_bounds(specs[t]) for t in world_types(specs)]
    low, high = sum(b.min for b in bounds), sum(b.max for b in bounds)
    return str(low) if low == high else f"{low}:{high}"


def torch_env(
    job: ElasticJob,
    rtype: ReplicaType,
    index: int,
    leader_address: str,
    counts: Mapping[ReplicaType, int],
) -> dict[str, str]:
    """The torch variables of replica ``index`` of ``rtype`` in ``job``'s plain torch world
    whose rank-0 service is at ``leader_address`` (``host:port``); ``counts``: how many
    replicas each training type has now. ``{}`` for a replica that does not train."""
    if rtype not in world_types(counts):
        return {}
    host, _, port = leader_address.rpartition(":")
    env = {
        names.ENV_MASTER_ADDR: host,
        names.ENV_MASTER_PORT: port,
        names.ENV_WORLD_SIZE: str(sum(counts[t] for t in world_types(counts))),
        names.ENV_RANK: str(world_rank(counts, rtype, index)),
    }
    policy = job.spec.elastic_policy
    if policy is None:
        return env
    env[names.ENV_PET_NNODES] = _nnodes(job)
    env[names.ENV_PET_RDZV_ENDPOINT] = leader_address
    env[names.ENV_PET_RDZV_BACKEND] = policy.rdzv_backend or DEFAULT_RDZV_BACKEND
    if policy.n_proc_per_node is not None:
        env[names.ENV_PET_NPROC_PER_NODE] = str(policy.n_proc_per_node)
    if policy.max_restarts is not None:
        env[names.ENV_PET_MAX_RESTARTS] = str(policy.max_restarts)
    return env
