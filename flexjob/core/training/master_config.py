"""``MasterConfig``: everything a job master needs to run, typed, built in one place — a tree
of frozen settings groups (``rendezvous``, ``node_health``, ``shards``, ``slow_nodes``,
``persistence``, ``rpc``, ``optimizer``, ``ps``) under the master's identity and data.

Each default is written once, in its group (docs/architecture.md#settings);
``with_overrides`` changes any setting by its path (``node_health__heartbeat_timeout``).
``MasterConfig.from_job`` is the one function that reads an ElasticJob (defaults applied; the
main training type's bounds → rendezvous bounds, ``spec.dataset`` → sharding, ``spec.batch`` →
batch plan, ``optimizeMode`` / ``brainService`` / the requested resources → the optimizer,
``spec.stragglers`` → the slow nodes, ``spec.masterSettings`` → any group);
``flexjob run`` builds one from ``runner.config.RUN_MASTER``. The operator hands the implicit
master its config as ``to_json`` in ``FLEXJOB_MASTER_CONFIG`` (``core.operator.job_master``);
``from_json`` reads it back. No I/O: builds core objects (splitter, batch plan, rendezvous
config) but runs nothing.
"""

import functools
import socket
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flexjob.api import OptimizeMode, ReplicaType
from flexjob.api.brain_service import brain_url
from flexjob.api.enums import RpcServer
from flexjob.api.errors import InvalidSpecError
from flexjob.api.quantity import cpu_cores, memory_mib
from flexjob.api.roles import PS_TYPE, ROLE_TRAITS, main_training_type
from flexjob.core.planner.stats import JobLimits, JobProfile, PlannedJob, ReplicaResources
from flexjob.core.training.batch import BatchPlan, batch_plan_from_spec
from flexjob.core.training.dataset import Dataset, dataset_from_spec
from flexjob.core.training.rendezvous import RendezvousConfig
from flexjob.core.training.stragglers import StragglerConfig

if TYPE_CHECKING:  # the job models load only when a job is read (processes start faster)
    from pydantic import TypeAdapter

    from flexjob.api import ElasticJob
    from flexjob.api.master_settings import MasterSettingsSpec


#: ``RpcConfig.server``'s values.
RPC_SERVERS = tuple(str(s) for s in RpcServer)
#: Hosts that mean "every address of this machine".
WILDCARD_HOSTS = ("", "0.0.0.0", "::", "[::]")


@dataclass(frozen=True, slots=True)
class NodeHealthConfig:
    """When the master gives up on a node, and on a replica that does not start."""

    #: The node-death timeout: seconds of silence (no call, no heartbeat) before a node is
    #: dead (every master's, ``flexjob run``'s too: ``runner.config.RUN_MASTER``).
    heartbeat_timeout: float = 30.0
    #: Seconds a replica of the job may stay Pending before the master's node watcher
    #: reports it (``core.training.node_watch``; a Warning event on the job); None: never.
    replica_pending_timeout: float | None = 300.0

    def __post_init__(self) -> None:
        if self.heartbeat_timeout <= 0:
            raise ValueError(f"heartbeat_timeout must be > 0, got {self.heartbeat_timeout}")
        if self.replica_pending_timeout is not None and self.replica_pending_timeout <= 0:
            raise ValueError(
                f"replica_pending_timeout must be > 0 or None, got {self.replica_pending_timeout}"
            )


@dataclass(frozen=True, slots=True)
class ShardConfig:
    """Slow shards (slow *nodes* are ``slow_nodes``,
    ``core.training.stragglers.StragglerConfig``)."""

    #: Seconds a shard may stay in progress before it is handed out again
    # (``core.training.shards``);
    #: None: never (its node's death still hands it out).
    slow_shard_timeout: float | None = None

    def __post_init__(self) -> None:
        if self.slow_shard_timeout is not None and self.slow_shard_timeout <= 0:
            raise ValueError(
                f"slow_shard_timeout must be > 0 seconds, got {self.slow_shard_timeout}"
            )


@dataclass(frozen=True, slots=True)
class PersistenceConfig:
    """How the master's state file is written (``master.persistence``)."""

    #: Every acknowledged change on disk before its reply: the journal's group commit ends
    #: with one ``fsync`` for all the calls it writes, and the directory is synced after a
    #: rename (``master.state_file``). Off: a killed master loses nothing (the page cache
    #: survives it), a crashed machine may lose what was acknowledged last.
    fsync: bool = True
    #: Journal entries (shard hand-outs and reports, KV changes) between two snapshots. A
    #: snapshot renders the whole state holding the master's lock (~1-2.5 ms, every call
    #: waits) and writes a file (~5 ms for the call that takes it); a restart replays at most
    #: this many lines (~7 us each). At 5,000 shard requests/s, 1,000 meant 5 snapshots a
    #: second (``benchmarks/master_load.py``: ~4% of the master's CPU); 10,000 one in 2 s.
    snapshot_every: int = 10_000

    def __post_init__(self) -> None:
        if self.snapshot_every < 1:
            raise ValueError(f"snapshot_every must be >= 1, got {self.snapshot_every}")


@dataclass(frozen=True, slots=True)
class StoreConfig:
    """The job's TCPStore server (``master.tcp_store``)."""

    #: Seconds a new connection may take to send its first whole request (torch's clients
    #: send theirs, ``VALIDATE``, as they connect); one that sends nothing, or part of one, is
    #: closed then and frees its slot. Only the first: a client may idle between requests.
    first_request_timeout: float = 10.0

    def __post_init__(self) -> None:
        if self.first_request_timeout <= 0:
            raise ValueError(
                f"store first_request_timeout must be > 0 seconds, got {self.first_request_timeout}"
            )


@dataclass(frozen=True, slots=True)
class RpcConfig:
    """The master's gRPC server."""

    #: "threads" (a pool of ``workers`` threads plus one per node for its ``Attach``
    #: stream, ``rpc.server``) or "aio" (one event-loop thread, ``rpc.aio_server``; not
    #: ahead of the thread pool in ``benchmarks/master_load.py``, so not the default).
    server: str = "threads"
    workers: int = 32
    #: Training processes that may each hold a shard stream (``LeaseShardsStream``: a message
    #: on an open stream costs the master ~0.6x the CPU of a ``LeaseShards`` call, per
    #: ``benchmarks/master_load.py``); the thread pool holds one thread for each. A process
    #: beyond them is refused one and uses ``LeaseShards``; 0: no streams.
    shard_streams: int = 64

    def __post_init__(self) -> None:
        if self.server not in RPC_SERVERS:
            raise ValueError(f"rpc server must be one of {RPC_SERVERS}, got {self.server!r}")
        if self.workers < 1:
            raise ValueError(f"rpc workers must be >= 1, got {self.workers}")
        if self.shard_streams < 0:
            raise ValueError(f"shard_streams must be >= 0, got {self.shard_streams}")


@dataclass(frozen=True, slots=True)
class OptimizerConfig:
    """Resource optimization (``master.optimizer_loop``): the mode, the brain's URL, seconds
    between plans, and the job as a planner sees it (from the node bounds when None)."""

    mode: OptimizeMode = OptimizeMode.MANUAL
    brain_url: str = ""
    interval: float = 30.0
    job: PlannedJob | None = None

    def __post_init__(self) -> None:
        if self.interval <= 0:
            raise ValueError(f"optimizer interval must be > 0 seconds, got {self.interval}")


@dataclass(frozen=True, slots=True)
class PsSetConfig:
    """Parameter-server jobs (``master.ps_sets``): the size of the first PS set (0: the PS
    replicas that register), and seconds between the checkpoints the master asks of every PS
    (0: only each PS's own ``--checkpoint-interval``)."""

    num_ps: int = 0
    checkpoint_interval: float = 0.0

    def __post_init__(self) -> None:
        if self.num_ps < 0 or self.checkpoint_interval < 0:
            raise ValueError(
                f"num_ps and ps checkpoint_interval must be >= 0, got {self.num_ps} and "
                f"{self.checkpoint_interval}"
            )


@dataclass(frozen=True, slots=True)
class MasterConfig:
    """The master's settings: who and where it is (the top-level fields), the job's data, and
    one group per concern, each a frozen dataclass that the helper using it takes whole."""

    job_name: str = "job"
    #: The job's namespace on its platform (where ``scale_plan_platform`` writes).
    namespace: str = "default"
    host: str = "127.0.0.1"
    port: int = 0
    job_dir: str | None = None
    #: The host others use to reach this master and its store; default: ``host``, or this
    #: machine's name when ``host`` is a wildcard (0.0.0.0, ::).
    advertise_host: str | None = None
    #: The one CPU that ``flexjob master`` confines its process to (None: any CPU it may use).
    #: Its Python threads share one interpreter lock; on one CPU they hand it over without
    #: waking each other across CPUs (``benchmarks/master_load.py --pin off,master``: less CPU
    #: per shard and more shard requests/s on a shared 2-core machine).
    cpu: int | None = None
    host_store: bool = True
    #: Where accepted plans go as ScalePlans, and the platform the node watcher and the
    #: profilings sync use: "" = JSON files in ``<job-dir>/scaleplans`` (no platform);
    #: "local" / "kubernetes" = that platform's store, for its operator to carry out.
    scale_plan_platform: str = ""
    datasets: tuple[Dataset, ...] = ()
    batch: BatchPlan | None = None
    rendezvous: RendezvousConfig = field(default_factory=RendezvousConfig)
    node_health: NodeHealthConfig = field(default_factory=NodeHealthConfig)
    shards: ShardConfig = field(default_factory=ShardConfig)
    slow_nodes: StragglerConfig = field(default_factory=StragglerConfig)
    persistence: PersistenceConfig = field(default_factory=PersistenceConfig)
    rpc: RpcConfig = field(default_factory=RpcConfig)
    store: StoreConfig = field(default_factory=StoreConfig)
    optimizer: OptimizerConfig = field(default_factory=OptimizerConfig)
    ps: PsSetConfig = field(default_factory=PsSetConfig)

    def __post_init__(self) -> None:
        if self.cpu is not None and self.cpu < 0:
            raise ValueError(f"cpu must be a CPU number (>= 0) or None, got {self.cpu}")
        if not 0 <= self.port <= 65535:
            raise ValueError(f"port must be in [0, 65535], got {self.port}")
        names = [d.name for d in self.datasets]
        if len(set(names)) != len(names):
            raise ValueError(f"datasets: names must be unique, got {names}")

    @property
    def public_host(self) -> str:
        if self.advertise_host:
            return self.advertise_host
        return socket.getfqdn() if self.host in WILDCARD_HOSTS else self.host

    @property
    def health_interval(self) -> float:
        """How often the master looks for dead nodes, stragglers and due rounds."""
        last_call = self.rendezvous.last_call_timeout
        return max(0.02, min(1.0, self.node_health.heartbeat_timeout / 4, last_call / 2 or 1.0))

    @property
    def state_path(self) -> Path | None:
        return Path(self.job_dir) / "master_state.json" if self.job_dir else None

    @property
    def addr_path(self) -> Path | None:
        return Path(self.job_dir) / "master.addr" if self.job_dir else None

    def with_overrides(self, **changes: Any) -> "MasterConfig":
        """A copy with the given settings changed; ``None`` values are ignored. A key is a
        top-level field (``port``) or ``GROUP__FIELD`` (``node_health__heartbeat_timeout``)."""
        top: dict[str, Any] = {}
        groups: dict[str, dict[str, Any]] = {}
        for key, value in changes.items():
            if value is None:
                continue
            group, sep, name = key.partition(GROUP_SEP)
            if sep:
                groups.setdefault(group, {})[name] = value
            else:
                top[key] = value
        for group, fields in groups.items():  # each group built again: its own checks run
            top[group] = replace(getattr(self, group), **fields)
        return replace(self, **top)

    @classmethod
    def from_job(cls, job: "ElasticJob", **overrides: Any) -> "MasterConfig":
        """The config of ``job``'s master (defaults applied first), then ``overrides``."""
        from flexjob.api.bounds import replica_bounds
        from flexjob.api.defaults import apply_defaults

        job = apply_defaults(job)
        spec = job.spec
        lo = hi = 1
        if (trainer := main_training_type(spec.replica_specs)) is not None:
            bounds = replica_bounds(spec.replica_specs[trainer])
            lo, hi = bounds.min, bounds.max
        ps = spec.replica_specs.get(PS_TYPE)
        base = cls(
            job_name=job.name or "job",
            namespace=job.namespace or "default",
            datasets=(dataset_from_spec(spec.dataset),) if spec.dataset is not None else (),
            batch=batch_plan_from_spec(spec.batch) if spec.batch is not None else None,
            rendezvous=RendezvousConfig(min_nodes=lo, max_nodes=hi),
            optimizer=OptimizerConfig(
                mode=spec.optimize_mode or OptimizeMode.SINGLE_JOB,
                brain_url=brain_url(spec.brain_service) if spec.brain_service else "",
                job=planned_job(job),
            ),
            ps=PsSetConfig(num_ps=replica_bounds(ps).replicas if ps is not None else 0),
        )
        if (lag := spec.stragglers) is not None:
            base = base.with_overrides(
                slow_nodes__policy=lag.policy,
                slow_nodes__ratio=lag.ratio,
                slow_nodes__window_s=lag.window_seconds,
            )
        if spec.master_settings is not None:
            try:
                base = base.with_overrides(**settings_overrides(spec.master_settings))
            except ValueError as exc:  # a check across fields (a node unit over the bounds)
                raise InvalidSpecError(f"spec.masterSettings: {exc}") from None
        return base.with_overrides(**overrides)

    def to_json(self) -> str:
        return _adapter().dump_json(self).decode()

    @classmethod
    def from_json(cls, text: str) -> "MasterConfig":
        return _adapter().validate_json(text)


@functools.cache
def _adapter() -> "TypeAdapter[MasterConfig]":
    """The JSON form's reader and writer (pydantic loads only where a config travels)."""
    from pydantic import TypeAdapter

    return TypeAdapter(MasterConfig)


#: What separates a group from its field in an override's key: ``node_health__heartbeat_timeout``.
GROUP_SEP = "__"


def settings_overrides(spec: "MasterSettingsSpec") -> dict[str, Any]:
    """The ``with_overrides`` keys of what ``spec.masterSettings`` sets (its groups and
    fields are ``MasterConfig``'s, in camelCase)."""
    return {
        f"{group}{GROUP_SEP}{name}": value
        for group, fields in spec.model_dump(exclude_none=True).items()
        for name, value in fields.items()
    }


def planned_job(job: "ElasticJob") -> PlannedJob:
    """What a planner needs to know of a job: profile keys, limits, requested resources.

    User and model come from the labels ``flexjob.dev/user`` and ``flexjob.dev/model``; the
    dataset from ``spec.dataset.name``; caps from replica bounds and container resource limits.
    """
    from flexjob.api.bounds import replica_bounds

    labels = job.metadata.labels
    resources: dict[ReplicaType, ReplicaResources] = {}
    max_cpu: float | None = None
    max_memory: float | None = None
    for rtype, spec in job.spec.replica_specs.items():
        if not ROLE_TRAITS[rtype].scalable:
            continue
        cpu = memory = None
        for container in spec.template.spec.containers[:1]:
            req = {**container.resources.limits, **container.resources.requests}
            lim = container.resources.limits
            cpu = cpu_cores(req["cpu"]) if "cpu" in req else None
            memory = float(memory_mib(req["memory"])) if "memory" in req else None
            if "cpu" in lim:
                max_cpu = max(max_cpu or 0.0, cpu_cores(lim["cpu"]))
            if "memory" in lim:
                max_memory = max(max_memory or 0.0, float(memory_mib(lim["memory"])))
        resources[rtype] = ReplicaResources(replica_bounds(spec).replicas, cpu, memory)
    trainer = main_training_type(job.spec.replica_specs)
    worker = job.spec.replica_specs.get(trainer) if trainer is not None else None
    ps = job.spec.replica_specs.get(PS_TYPE)
    limits = JobLimits(
        min_replicas=max(replica_bounds(worker).min, 1) if worker else 1,
        max_replicas=replica_bounds(worker).max if worker else None,
        max_ps=replica_bounds(ps).max if ps else None,
        max_cpu=max_cpu,
        max_memory_mb=max_memory,
    )
    profile = JobProfile(
        name=f"{job.namespace}.{job.name}",
        user=labels.get("flexjob.dev/user", ""),
        model=labels.get("flexjob.dev/model", ""),
        dataset=job.spec.dataset.name or "" if job.spec.dataset else "",
    )
    return PlannedJob(profile, limits, resources)
