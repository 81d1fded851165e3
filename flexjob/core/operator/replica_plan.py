"""Which replicas a job should have, and how each one is rendered.

Desired counts come from (first match wins) the current ScalePlan (folded into
``status.replicas``), ``status.replicas``, then the spec; the master always follows the spec.
Rendering merges the flexjob environment (``api.names``) and labels into the replica type's
pod template.
Not here: phases and restart decisions (``core.operator.phases``). No I/O.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from flexjob.api import (
    Container,
    ElasticJob,
    ElasticJobStatus,
    EnvVar,
    PodTemplateSpec,
    ReplicaSpec,
    ReplicaType,
    ResourceSpec,
    ScalePlan,
    names,
)
from flexjob.api.bounds import declared_clamp, replica_bounds
from flexjob.api.di_tasks import task_name, task_template
from flexjob.api.errors import InvalidSpecError
from flexjob.api.roles import (
    PS_TYPE,
    ROLE_TRAITS,
    creation_order,
    driving_type,
    on_request_types,
    runs_di_tasks,
    world_types,
)
from flexjob.core.operator.di_task_env import Peers, di_task_env
from flexjob.core.operator.job_metrics import PORT_NAME as METRICS_PORT_NAME
from flexjob.core.operator.job_pod_fields import apply_job_fields, elastic_policy_env
from flexjob.core.operator.replica_resources import apply_resources
from flexjob.core.operator.tf_cluster import Addresses, in_cluster, tf_env, tf_labels
from flexjob.core.operator.torch_world import torch_env, world_leader
from flexjob.core.replicas import (
    Replica,
    ReplicaRequest,
    ServiceRequest,
    replica_name,
    service_name,
)

NODE_SELECTOR_KEY = "kubernetes.io/hostname"


def replica_types(job: ElasticJob) -> list[ReplicaType]:
    """The job's replica types, the controlling one (master) first, then in spec order."""
    return creation_order(job.spec.replica_specs)


def desired_count(job: ElasticJob, status: ElasticJobStatus, rtype: ReplicaType) -> int:
    """How many ``rtype`` replicas ``job`` should have: ``status.replicas`` (scaled), else the
    spec's count (0 for a type created only on request); a type that is not scalable always
    follows the spec; 0 if the job has none."""
    spec = job.spec.replica_specs.get(rtype)
    if spec is None:
        return 0
    if rtype in on_request_types(job.spec.replica_specs):
        return status.replicas.get(rtype, 0)
    from_spec = replica_bounds(spec).replicas
    if not ROLE_TRAITS[rtype].scalable:
        return from_spec
    return status.replicas.get(rtype, from_spec)


def desired_counts(job: ElasticJob, status: ElasticJobStatus) -> dict[ReplicaType, int]:
    return {rtype: desired_count(job, status, rtype) for rtype in job.spec.replica_specs}


@dataclass(frozen=True, slots=True)
class SpecFollowed:
    """``status.replicas`` and ``status.specReplicas`` after ``follow_spec``."""

    replicas: dict[ReplicaType, int]
    spec_replicas: dict[ReplicaType, int]


def follow_spec(job: ElasticJob, status: ElasticJobStatus) -> SpecFollowed:
    """The newest intent wins: a scalable type whose spec count differs from the one the
    operator saw last (``status.specReplicas``: the spec changed since, e.g. ``kubectl scale``
    after a ScalePlan) drops its ``status.replicas`` entry, so the spec's count rules again;
    a count set in ``status.replicas`` after the spec last changed stays. Returns both maps,
    the second holding the spec counts seen now."""
    replicas = dict(status.replicas)
    seen: dict[ReplicaType, int] = {}
    on_request = on_request_types(job.spec.replica_specs)
    for rtype, spec in job.spec.replica_specs.items():
        if not ROLE_TRAITS[rtype].scalable or rtype in on_request:
            continue
        seen[rtype] = replica_bounds(spec).replicas
        before = status.spec_replicas.get(rtype)
        if before is not None and before != seen[rtype]:
            replicas.pop(rtype, None)
    return SpecFollowed(replicas, seen)


@dataclass(frozen=True, slots=True)
class PlanEffect:
    """What folding a ScalePlan changed: the new desired counts and the replicas to remove."""

    replicas: dict[ReplicaType, int]
    remove: tuple[Replica, ...]


def ps_hosts_count(job: ElasticJob, plan: ScalePlan) -> int | None:
    """The PS count ``plan``'s ``psHosts`` asks for (DLRover's meaning: the PS the job runs
    after the change), or ``None`` when it names none. Each entry is a PS replica of the job,
    ``<job>-ps-<i>`` or ``ps-<i>``, with or without ``:port``; a PS set is partitioned by index,
    so the entries must be PS ``0 .. N-1``. ``InvalidSpecError`` naming ``psHosts`` otherwise,
    or when ``replicaResourceSpecs`` asks for another PS count."""
    hosts = plan.spec.ps_hosts
    if not hosts:
        return None
    if PS_TYPE not in job.spec.replica_specs:
        raise InvalidSpecError(f"psHosts: job {job.name} has no ps replicas")
    prefix = f"{PS_TYPE.value}-"
    indexes = []
    for host in hosts:
        name = host.rsplit(":", 1)[0]
        short = name.removeprefix(f"{job.name}-")
        index = short.removeprefix(prefix)
        if not short.startswith(prefix) or not index.isdigit():
            raise InvalidSpecError(
                f"psHosts: {host!r} is not a ps replica of job {job.name} "
                f"(allowed: {replica_name(job.name, PS_TYPE, 0)}[:port] or "
                f"{prefix}0, {prefix}1, ...)"
            )
        indexes.append(int(index))
    n = len(hosts)
    if sorted(indexes) != list(range(n)):
        raise InvalidSpecError(
            f"psHosts: names ps {sorted(indexes)}; a PS set of {n} is ps 0 .. {n - 1} "
            "(its rows are partitioned by PS index)"
        )
    explicit = plan.spec.replica_resource_specs.get(PS_TYPE)
    if explicit is not None and explicit.replicas != n:
        raise InvalidSpecError(
            f"psHosts: names {n} ps, replicaResourceSpecs.ps.replicas asks for {explicit.replicas}"
        )
    return n


def fold_plan(
    job: ElasticJob, plan: ScalePlan, counts: Mapping[ReplicaType, int], live: Sequence[Replica]
) -> PlanEffect:
    """Apply ``plan`` to the desired ``counts`` given the job's ``live`` (owned, not deleting)
    replicas. Explicit ``replicaResourceSpecs`` counts win; otherwise a type's count drops by
    the replicas named in ``removePods`` and grows by the ``createPods`` entries. ``psHosts``
    (checked by ``ps_hosts_count``) sets the PS count and removes the live PS it does not
    name. Every count is kept within the bounds the type's spec declares
    (``api.bounds.declared_clamp``): a plan cannot set what the spec does not allow."""
    by_name = {r.name: r for r in live}
    by_slot = {(r.type, r.index): r for r in live}
    remove: dict[str, Replica] = {}
    for ref in plan.spec.remove_pods:
        found = by_name.get(ref.name) or by_name.get(f"{job.name}-{ref.name}")
        if found is None and ref.id is not None:
            found = by_slot.get((ref.type, ref.id))
        if found is not None and ROLE_TRAITS[found.type].scalable:
            remove[found.name] = found
    num_ps = ps_hosts_count(job, plan)
    if num_ps is not None:
        num_ps = declared_clamp(job.spec.replica_specs[PS_TYPE], num_ps)
        for r in live:
            if r.type is PS_TYPE and r.index >= num_ps:
                remove[r.name] = r
    new_counts: dict[ReplicaType, int] = {
        t: n for t, n in counts.items() if ROLE_TRAITS[t].scalable
    }
    if num_ps is not None and PS_TYPE in new_counts:
        new_counts[PS_TYPE] = num_ps
    for rtype in new_counts:
        explicit = plan.spec.replica_resource_specs.get(rtype)
        if rtype is PS_TYPE and num_ps is not None:
            continue
        if explicit is not None:
            new_counts[rtype] = max(0, explicit.replicas)
            continue
        removed = sum(1 for r in remove.values() if r.type is rtype)
        added = sum(1 for ref in plan.spec.create_pods if ref.type is rtype)
        new_counts[rtype] = max(0, new_counts[rtype] - removed + added)
    for rtype, count in new_counts.items():
        if (spec := job.spec.replica_specs.get(rtype)) is not None:
            new_counts[rtype] = declared_clamp(spec, count)
    return PlanEffect(replicas=new_counts, remove=tuple(remove.values()))


def _main_container(spec: ReplicaSpec, rtype: ReplicaType) -> Container:
    containers = spec.template.spec.containers
    return containers[0] if containers else Container(name=rtype.value)


def service_port(job: ElasticJob, rtype: ReplicaType, index: int) -> int | None:
    """The port of the service replica ``index`` of ``rtype`` needs, or None when it needs
    none: the port its main container declares (not its /metrics port); else every role of a
    DI-driven job has one (its DI default port), the master (the controlling type) always has
    one, and so has
    replica 0 of a plain torch world's leading type (``core.operator.torch_world``:
    ``MASTER_ADDR``) and every member of a TensorFlow cluster (``core.operator.tf_cluster``)."""
    main = _main_container(job.spec.replica_specs[rtype], rtype)
    ports = [p for p in main.ports if p.name != METRICS_PORT_NAME]  # scraped, not a service's
    if ports:
        return ports[0].container_port
    traits = ROLE_TRAITS[rtype]
    if runs_di_tasks(job.spec.replica_specs):
        return names.DI_TASK_PORT  # every replica of a DIJob v2 (``di_task_env``)
    if traits.default_port is not None and driving_type(job.spec.replica_specs) is not None:
        return traits.default_port
    if traits.controls_job:
        return names.DEFAULT_MASTER_PORT
    if in_cluster(job, rtype):
        return names.DEFAULT_TF_PORT
    leads = index == 0 and rtype is world_leader(job)
    return names.DEFAULT_TORCH_MASTER_PORT if leads else None


def service_request(job: ElasticJob, rtype: ReplicaType, index: int, port: int) -> ServiceRequest:
    return ServiceRequest(
        namespace=job.namespace,
        job=job.name,
        name=service_name(job.name, rtype, index),
        replica=replica_name(job.name, rtype, index),
        type=rtype,
        index=index,
        port=port,
        labels=flexjob_labels(job, rtype, index),
    )


def flexjob_labels(job: ElasticJob, rtype: ReplicaType, index: int) -> dict[str, str]:
    labels = {
        names.LABEL_JOB_NAME: job.name,
        names.LABEL_REPLICA_TYPE: rtype.value,
        names.LABEL_REPLICA_INDEX: str(index),
        names.LABEL_RANK: str(index),
    }
    task = task_name(job.spec.replica_specs[rtype], index)
    if task is not None:
        labels[names.LABEL_TASK_NAME] = task
    return labels


def current_count(job: ElasticJob, rtype: ReplicaType) -> int:
    """How many ``rtype`` replicas ``job`` has now: ``desired_count`` of its status, the
    spec's count before it has one."""
    if job.status is not None:
        return desired_count(job, job.status, rtype)
    return replica_bounds(job.spec.replica_specs[rtype]).replicas


def master_env(job: ElasticJob, rtype: ReplicaType, index: int, address: str) -> dict[str, str]:
    """How a replica finds the job's master at ``address``: ``FLEXJOB_MASTER``, or in a plain
    torch world (no master; ``address`` is its rank-0 service) torch's ``MASTER_ADDR``,
    ``RANK``... (``core.operator.torch_world``)."""
    if world_leader(job) is None:
        return {names.ENV_MASTER: address}
    counts = {t: current_count(job, t) for t in world_types(job.spec.replica_specs)}
    return torch_env(job, rtype, index, address, counts)


def replica_env(
    job: ElasticJob,
    rtype: ReplicaType,
    index: int,
    master_address: str | None,
    own_address: str | None,
    server_url: str | None = None,
    di_peers: Peers | None = None,
    tf_addresses: Addresses | None = None,
) -> dict[str, str]:
    """The flexjob environment of one replica (``api.names``; docs/architecture.md
    "Environment"), torch's in a plain torch world (``master_env``), ``TF_CONFIG`` in a
    TensorFlow cluster whose members are at ``tf_addresses`` (``core.operator.tf_cluster``),
    and DI-engine's own for every role of a DI-driven job (``di_env``); it overrides the
    user's. ``master_address``: the service of the job's master, or of a plain torch world's
    rank-0 replica."""
    env = {
        names.ENV_JOB_NAME: job.name,
        names.ENV_REPLICA_TYPE: rtype.value,
        names.ENV_REPLICA_INDEX: str(index),
    }
    if master_address is not None:
        env.update(master_env(job, rtype, index, master_address))
    env.update(elastic_policy_env(job, rtype))
    task = task_name(job.spec.replica_specs[rtype], index)
    if task is not None:
        env[names.ENV_TASK_NAME] = task
    if PS_TYPE in job.spec.replica_specs:
        env[names.ENV_NUM_PS] = str(current_count(job, PS_TYPE))
    if own_address is not None and not ROLE_TRAITS[rtype].controls_job:
        env[names.ENV_REPLICA_ADDRESS] = own_address
    if driving_type(job.spec.replica_specs) is not None:
        env.update(di_env(job, rtype, index, own_address, server_url))
    if di_peers is not None:  # a DIJob v2's replica: DI Orchestrator v2's variables
        env.update(di_task_env(job, rtype, index, di_peers, server_url))
    env.update(tf_env(rtype, index, tf_addresses))
    return env


def di_env(
    job: ElasticJob,
    rtype: ReplicaType,
    index: int,
    own_address: str | None,
    server_url: str | None,
) -> dict[str, str]:
    """DI-engine's variables for one replica: its pod name and namespace, the server and its
    API version, and its port (the port of its service address: DI's default on Kubernetes,
    a free one on the local platform). DI's client keeps only the host and port of the URL, so
    a path on it (a server token's per-job key, ``rpc.auth.di_server_url``) also goes in front
    of the API version."""
    path = urlsplit(server_url).path.strip("/") if server_url else ""
    version = f"{path}/{names.DI_SERVER_API_VERSION}" if path else names.DI_SERVER_API_VERSION
    env = {
        names.ENV_DI_POD_NAMESPACE: job.namespace,
        names.ENV_DI_POD_NAME: replica_name(job.name, rtype, index),
        names.ENV_DI_SERVER_API_VERSION: version,
    }
    if server_url is not None:
        env[names.ENV_DI_SERVER_URL] = server_url
    port_env = ROLE_TRAITS[rtype].port_env
    if port_env is not None and own_address is not None:
        env[port_env] = own_address.rpartition(":")[2]
    return env


def _merge_env(container: Container, extra: Mapping[str, str]) -> None:
    kept = [e for e in container.env if e.name not in extra]
    container.env = kept + [EnvVar(name=k, value=v) for k, v in extra.items()]


class SharedTemplates:
    """``type_template`` once per (resources, task) of one replica type in one pass: a pass
    rendering many replicas of a type makes each shared template once (a deep copy is most of
    the cost), and hands it to ``render_replica(shared=...)``."""

    def __init__(self, job: ElasticJob, rtype: ReplicaType) -> None:
        self.job, self.rtype = job, rtype
        self._made: list[tuple[ResourceSpec | None, str | None, PodTemplateSpec]] = []

    def get(self, resources: ResourceSpec | None, task: str | None, index: int) -> PodTemplateSpec:
        """The template of replica ``index`` (with ``resources``, in ``task``)."""
        for made_resources, made_task, template in self._made:
            if made_resources == resources and made_task == task:
                return template
        template = type_template(self.job, self.rtype, resources, index)
        self._made.append((resources, task, template))
        return template


def type_template(
    job: ElasticJob, rtype: ReplicaType, resources: ResourceSpec | None = None, index: int = 0
) -> PodTemplateSpec:
    """What every replica of ``rtype`` with ``resources`` in the task of replica ``index``
    shares (``api.di_tasks``; a type without tasks: every replica): a copy of its pod template
    (a container named for the type when it has none) with ``resources`` as the main
    container's requests and limits and the job-level pod fields (``apply_job_fields``)."""
    template = task_template(job.spec.replica_specs[rtype], index).model_copy(deep=True)
    if not template.spec.containers:
        template.spec.containers = [Container(name=rtype.value)]
    if resources is not None:
        apply_resources(template, resources)
    apply_job_fields(job, rtype, template)
    return template


def _own_copy(shared: PodTemplateSpec) -> PodTemplateSpec:
    """``shared`` with its own template, pod spec and containers, the parts ``render_replica``
    sets fields of; whatever is below them (volumes, resources, ...) stays shared, read only."""
    containers = [c.model_copy() for c in shared.spec.containers]
    spec = shared.spec.model_copy(update={"containers": containers})
    return shared.model_copy(update={"spec": spec})


def render_replica(
    job: ElasticJob,
    rtype: ReplicaType,
    index: int,
    *,
    master_address: str | None,
    own_address: str | None,
    node: str | None,
    resources: ResourceSpec | None = None,
    server_url: str | None = None,
    shared: PodTemplateSpec | None = None,
    di_peers: Peers | None = None,
    tf_addresses: Addresses | None = None,
) -> ReplicaRequest:
    """The full request for replica ``index`` of ``rtype``: template + env + labels, and
    ``resources`` (set by ScalePlans) as the main container's requests and limits;
    ``server_url``: the flexjob server DI coordinators ask (``KUBERNETES_SERVER_URL``);
    ``shared``: ``type_template(job, rtype, resources, index)`` when the caller made it
    already (a pass rendering many replicas of a type makes it once per task; a deep copy is
    most of the cost). A replica of a DI v2 task carries its name (``api.di_tasks``) and,
    with ``di_peers``, DI Orchestrator v2's variables (``di_task_env``); ``tf_addresses``: the
    members of the job's TensorFlow cluster (its ``TF_CONFIG``)."""
    shared = shared if shared is not None else type_template(job, rtype, resources, index)
    template = _own_copy(shared)
    ours = replica_env(
        job,
        rtype,
        index,
        master_address,
        own_address,
        server_url,
        di_peers=di_peers,
        tf_addresses=tf_addresses,
    )
    for container in template.spec.containers:
        _merge_env(container, {**job.spec.envs, **ours})
    labels = {
        **job.metadata.labels,
        **dict(template.metadata.get("labels") or {}),
        **flexjob_labels(job, rtype, index),
        **tf_labels(rtype, tf_addresses),
    }
    template.metadata = {**template.metadata, "labels": labels}
    template.spec.restart_policy = "Never"
    if node is not None:
        template.spec.node_selector = {**template.spec.node_selector, NODE_SELECTOR_KEY: node}
    main = template.spec.containers[0]
    env = {e.name: e.value for e in main.env if e.value is not None}
    name = replica_name(job.name, rtype, index)
    return ReplicaRequest(
        namespace=job.namespace,
        job=job.name,
        type=rtype,
        index=index,
        name=name,
        command=tuple(main.command),
        args=tuple(main.args),
        env=env,
        labels=labels,
        resources={k: str(v) for k, v in main.resources.requests.items()},
        template=template,
        image=main.image,
        working_dir=main.working_dir,
        node=node,
        service=name if own_address is not None else None,
    )
