"""A TensorFlow cluster: ``TF_CONFIG`` for the replicas of a TensorFlow parameter-server job, as
Kubeflow's TFJob operator and DLRover's give it.

A job forms one when its ``ps`` replicas run a command of their own (``tensorflow_cluster``:
TensorFlow's servers, as in DLRover's ElasticJob and Kubeflow's TFJob; ps replicas that name no
command run flexjob's own PS and get none of this) and it runs no master of its own (an
ElasticDL master that brings its image manages its cluster itself). Every replica of a type
with a TensorFlow task (``api.roles.tf_types``: chief, worker, ps, evaluator) gets a service
(its stable address: ``<name>.<namespace>.svc:2222`` on Kubernetes, a ``127.0.0.1`` port on the
local platform) and is created only once the services of the whole cluster exist, with
``TF_CONFIG``::

    {"cluster": {"worker": [...], "ps": [...], "chief": [...]},
     "task": {"type": "worker", "index": 1}}

The cluster lists the chief, worker and ps replicas the job has now, each type's by index; the
evaluator gets its task but is not listed (TensorFlow's and Kubeflow's rule). The label
``LABEL_TF_CLUSTER`` on each replica names the cluster its ``TF_CONFIG`` lists
(``cluster_key``): when the cluster changes (a ScalePlan's ``psHosts`` or a replica count), every
replica whose ``TF_CONFIG`` lists another one is restarted (``stale_members``), so the new hosts
are told as DLRover tells them for TensorFlow: a ``tf.distribute.Server``'s cluster is fixed when
it starts. A replica that fails and is replaced keeps its service, so the others' ``TF_CONFIG``
holds. The job succeeds when its chief (else worker 0) succeeds (``api.roles.tf_lead_type``,
Kubeflow's default success policy): the ps and workers serve until they are stopped. No I/O.
"""

import hashlib
import json
from collections.abc import Mapping, Sequence

from flexjob.api import ElasticJob, ReplicaType, names
from flexjob.api.job import ReplicaSpec
from flexjob.api.master_rule import has_own_command
from flexjob.api.roles import (
    MASTER_TYPE,
    PS_TYPE,
    ROLE_TRAITS,
    command_of,
    tf_lead_type,
    tf_types,
)
from flexjob.core.replicas import Replica, Service, service_name

#: Each cluster member's address: (type, index) → ``host:port``.
Addresses = Mapping[tuple[ReplicaType, int], str]


def _runs_flexjob(spec: ReplicaSpec, rtype: ReplicaType) -> bool:
    """The replica runs flexjob's own command for its role (what ``core.operator.job_master``
    gives a command-less master or ps: arguments that start with that subcommand)."""
    containers = spec.template.spec.containers
    return bool(containers) and containers[0].args[:1] == [command_of(rtype)]


def tensorflow_cluster(job: ElasticJob) -> bool:
    """True when ``job``'s ps replicas run a command of their own (TensorFlow's servers), not
    ``flexjob ps``, and the job runs no master of its own (an ElasticDL master manages its
    cluster itself)."""
    specs = job.spec.replica_specs
    ps, master = specs.get(PS_TYPE), specs.get(MASTER_TYPE)
    if ps is None or not has_own_command(ps) or _runs_flexjob(ps, PS_TYPE):
        return False
    return master is None or not has_own_command(master) or _runs_flexjob(master, MASTER_TYPE)


def in_cluster(job: ElasticJob, rtype: ReplicaType) -> bool:
    """True when replicas of ``rtype`` in ``job`` get ``TF_CONFIG`` (and so a service)."""
    return ROLE_TRAITS[rtype].tf_task is not None and tensorflow_cluster(job)


def lead_type(job: ElasticJob) -> ReplicaType | None:
    """The type whose replica 0 decides ``job``'s success; None when ``job`` is no TensorFlow
    cluster."""
    return tf_lead_type(job.spec.replica_specs) if tensorflow_cluster(job) else None


def cluster_addresses(
    job: ElasticJob, counts: Mapping[ReplicaType, int], services: Mapping[str, Service]
) -> Addresses | None:
    """The address of every member of ``job``'s cluster of ``counts`` replicas per type, from
    the ``services`` observed (by name); None while one of them has none yet, and for a job that
    is no TensorFlow cluster."""
    if not tensorflow_cluster(job):
        return None
    out: dict[tuple[ReplicaType, int], str] = {}
    for rtype in tf_types(job.spec.replica_specs):
        for index in range(counts.get(rtype, 0)):
            svc = services.get(service_name(job.name, rtype, index))
            if svc is None:
                return None
            out[(rtype, index)] = svc.address
    return out


def cluster(addresses: Addresses) -> dict[str, list[str]]:
    """``TF_CONFIG``'s ``cluster``: each listed task type's addresses by index."""
    out: dict[str, list[str]] = {}
    for rtype in tf_types({t for t, _ in addresses}):
        traits = ROLE_TRAITS[rtype]
        if traits.tf_outside_cluster or traits.tf_task is None:
            continue
        indexes = sorted(i for t, i in addresses if t is rtype)
        out[traits.tf_task] = [addresses[(rtype, i)] for i in indexes]
    return out


def cluster_key(addresses: Addresses) -> str:
    """A label value naming the cluster ``addresses`` lists (equal clusters, equal keys)."""
    text = json.dumps(cluster(addresses), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def tf_config(rtype: ReplicaType, index: int, addresses: Addresses) -> str:
    """The ``TF_CONFIG`` of replica ``index`` of ``rtype`` in the cluster of ``addresses``."""
    task = {"type": ROLE_TRAITS[rtype].tf_task, "index": index}
    return json.dumps({"cluster": cluster(addresses), "task": task}, separators=(",", ":"))


def tf_env(rtype: ReplicaType, index: int, addresses: Addresses | None) -> dict[str, str]:
    """``TF_CONFIG`` of one replica; ``{}`` for a type with no TensorFlow task or no cluster."""
    if addresses is None or ROLE_TRAITS[rtype].tf_task is None:
        return {}
    return {names.ENV_TF_CONFIG: tf_config(rtype, index, addresses)}


def tf_labels(rtype: ReplicaType, addresses: Addresses | None) -> dict[str, str]:
    if addresses is None or ROLE_TRAITS[rtype].tf_task is None:
        return {}
    return {names.LABEL_TF_CLUSTER: cluster_key(addresses)}


def stale_members(live: Sequence[Replica], addresses: Addresses) -> list[Replica]:
    """The ``live`` replicas with a TensorFlow task whose ``TF_CONFIG`` lists another cluster
    than ``addresses`` (they must restart to be told the new hosts)."""
    key = cluster_key(addresses)
    return [
        r
        for r in live
        if ROLE_TRAITS[r.type].tf_task is not None
        and r.labels.get(names.LABEL_TF_CLUSTER, key) != key
    ]
