"""DI Orchestrator v2's variables on the replicas of a DIJob v2: ``DI_JOB_ID``, ``DI_RANK``,
``DI_NODES``, ``DI_<TASK>_NODES`` and ``DI_SERVER_URL`` (``api.names``), which DI-engine's
``ditask`` reads on Kubernetes (its ``k8s_parser``: ``DI_NODES[DI_RANK]`` is the replica's own
address, the others are whom it attaches to).

The job's replicas are ranked as DI ranks its pods: type by type in the order of the job's
replica specs (the reader keeps the order of each type's first task), index by index within a
type, over the counts the job should have now. A replica's host is its Service's (each replica
of a DIJob v2 has one on ``DI_TASK_PORT``: ``replica_plan.service_port``): ``peer_hosts`` says
None until every replica's Service is known, and the pass creates no replica of the job before
(``DI_NODES`` is set at creation; a replica added later is not in the older replicas' lists,
as with DI Orchestrator, which recreates a preemptible job's pods when its size changes). No I/O.
"""

from collections.abc import Mapping
from typing import Protocol

from flexjob.api import ElasticJob, ReplicaType, names
from flexjob.api.di_tasks import task_name
from flexjob.api.roles import runs_di_tasks
from flexjob.core.replicas import service_name

#: Each ranked replica: its type, index and host.
Peers = list[tuple[ReplicaType, int, str]]


def peer_hosts(
    job: ElasticJob, counts: Mapping[ReplicaType, int], services: Mapping[str, str]
) -> Peers | None:
    """Every replica ``job`` should have (``counts``), in rank order, with the host of its
    Service (``services``: Service name → ``host:port``); None while one is not known."""
    peers: Peers = []
    for rtype in job.spec.replica_specs:
        for index in range(counts.get(rtype, 0)):
            address = services.get(service_name(job.name, rtype, index))
            if address is None:
                return None
            peers.append((rtype, index, address.rpartition(":")[0].strip("[]")))
    return peers


class _Addressed(Protocol):
    @property
    def address(self) -> str | None: ...


def job_peers(
    job: ElasticJob, counts: Mapping[ReplicaType, int], services: Mapping[str, _Addressed]
) -> Peers | bool:
    """For a reconcile pass: a DIJob v2's ``peer_hosts`` (its replicas may be created with
    them); False while a Service is not known yet (none may); True for a job of another kind
    (its replicas take no peers)."""
    if not runs_di_tasks(job.spec.replica_specs):
        return True
    hosts = {name: s.address for name, s in services.items() if s.address}
    return peer_hosts(job, counts, hosts) or False


def task_nodes_name(task: str) -> str:
    """``DI_<TASK>_NODES`` for the task named ``task`` (DI: upper case, '-' as '_')."""
    return names.ENV_DI_TASK_NODES.format(task=task.upper().replace("-", "_"))


def di_task_env(
    job: ElasticJob, rtype: ReplicaType, index: int, peers: Peers, server_url: str | None
) -> dict[str, str]:
    """The variables of replica ``index`` of ``rtype`` among ``peers`` (``peer_hosts``)."""
    ranks = [(t, i) for t, i, _ in peers]
    env = {
        names.ENV_DI_JOB_ID: f"{job.namespace}/{job.name}",
        names.ENV_DI_NODES: ",".join(host for _, _, host in peers),
    }
    if (rtype, index) in ranks:
        env[names.ENV_DI_RANK] = str(ranks.index((rtype, index)))
    task = task_name(job.spec.replica_specs[rtype], index) or rtype.value
    env[task_nodes_name(task)] = ",".join(host for t, _, host in peers if t is rtype)
    if server_url is not None:
        env[names.ENV_DI_V2_SERVER_URL] = server_url
    return env
