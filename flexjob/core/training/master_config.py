"""``MasterConfig``: everything a job master needs to run, typed, built in one place.

``MasterConfig.from_job`` is the one function that reads an ElasticJob (defaults applied; the
main training type's bounds → rendezvous bounds, ``spec.dataset`` → sharding, ``spec.batch`` →
batch plan, ``optimizeMode`` / ``brainService`` / the requested resources → the optimizer);
``flexjob run`` builds one directly. The operator hands the implicit master its config as
``to_json`` in ``FLEXJOB_MASTER_CONFIG`` (``core.operator.job_master``); ``from_json`` reads it
back.
No I/O: builds core objects (splitter, batch plan, rendezvous config) but runs nothing.
"""

import socket
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import TypeAdapter

from flexjob.api import OptimizeMode, ReplicaType
from flexjob.api.brain_service import brain_url
from flexjob.api.enums import StragglerPolicy
from flexjob.api.quantity import cpu_cores, memory_mib
from flexjob.api.roles import PS_TYPE, ROLE_TRAITS, main_training_type
from flexjob.core.planner.stats import JobLimits, JobProfile, PlannedJob, ReplicaResources
from flexjob.core.training.batch import BatchPlan, batch_plan_from_spec
from flexjob.core.training.dataset import Dataset, dataset_from_spec
from flexjob.core.training.rendezvous import RendezvousConfig
from flexjob.core.training.stragglers import (
    DEFAULT_RATIO,
    DEFAULT_WINDOW_S,
    StragglerConfig,
)

if TYPE_CHECKING:  # the job models load only when a job is read (processes start faster)
    from flexjob.api import ElasticJob


#: ``MasterConfig.rpc_server``'s values.
RPC_SERVERS = ("aio", "threads")
#: Hosts that mean "every address of this machine".
WILDCARD_HOSTS = ("", "0.0.0.0", "::", "[::]")


@dataclass(frozen=True, slots=True)
class MasterConfig:
    job_name: str = "job"
    #: The job's namespace on its platform (where ``scale_plan_platform`` writes).
    namespace: str = "default"
    host: str = "127.0.0.1"
    port: int = 0
    job_dir: str | None = None
    min_nodes: int = 1
    max_nodes: int = 1
    node_unit: int = 1
    last_call_timeout: float = 1.0
    heartbeat_timeout: float = 30.0
    straggler_timeout: float | None = None
    datasets: tuple[Dataset, ...] = ()
    batch: BatchPlan | None = None
    host_store: bool = True
    #: The gRPC server: "threads" (a pool of ``rpc_workers`` threads plus one per node for its
    #: ``Attach`` stream, ``rpc.server``) or "aio" (one event-loop thread, ``rpc.aio_server``;
    #: not ahead of the thread pool in ``benchmarks/master_load.py``, so not the default).
    rpc_server: str = "threads"
    rpc_workers: int = 32
    #: Training processes that may each hold a shard stream (``LeaseShardsStream``: a message
    #: on an open stream costs the master ~0.6x the CPU of a ``LeaseShards`` call, per
    #: ``benchmarks/master_load.py``); the thread pool holds one thread for each. A process
    #: beyond them is refused one and uses ``LeaseShards``; 0: no streams.
    shard_streams: int = 64
    #: The one CPU that ``flexjob master`` confines its process to (None: any CPU it may use).
    #: Its Python threads share one interpreter lock; on one CPU they hand it over without
    #: waking each other across CPUs (``benchmarks/master_load.py --pin off,master``: less CPU
    #: per shard and more shard requests/s on a shared 2-core machine).
    cpu: int | None = None
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
    #: The host others use to reach this master and its store; default: ``host``, or this
    #: machine's name when ``host`` is a wildcard (0.0.0.0, ::).
    advertise_host: str | None = None
    #: Resource optimization (``master.optimizer_loop``): the mode, the brain's URL, seconds
    #: between plans, and the job as a planner sees it (from the node bounds when None).
    optimize_mode: OptimizeMode = OptimizeMode.MANUAL
    brain_url: str = ""
    optimize_interval: float = 30.0
    optimizer_job: PlannedJob | None = None
    #: Where accepted plans go as ScalePlans: "" = JSON files in ``<job-dir>/scaleplans``;
    #: "local" / "kubernetes" = that platform's store, for its operator to carry out.
    scale_plan_platform: str = ""
    #: Seconds a replica of the job may stay Pending before the master's node watcher
    #: reports it (``core.training.node_watch``; a Warning event on the job); None: never.
    replica_pending_timeout: float | None = 300.0
    #: Parameter-server jobs: the size of the first PS set (0: the PS replicas that register),
    #: and seconds between the checkpoints the master asks of every PS (0: only each PS's own
    #: ``--checkpoint-interval``) (``master.ps_sets``).
    num_ps: int = 0
    ps_checkpoint_interval: float = 0.0
    #: Straggler nodes (``core.training.stragglers``): report them, also exclude them from the next
    #: world, or neither; a node is one when its own step time is over ``straggler_ratio``
    #: times the others' median for ``straggler_window`` seconds.
    stragglers: StragglerPolicy = StragglerPolicy.REPORT
    straggler_ratio: float = DEFAULT_RATIO
    straggler_window: float = DEFAULT_WINDOW_S

    def __post_init__(self) -> None:
        self.rendezvous()
        self.straggler_config()
        if self.heartbeat_timeout <= 0:
            raise ValueError(f"heartbeat_timeout must be > 0, got {self.heartbeat_timeout}")
        if self.replica_pending_timeout is not None and self.replica_pending_timeout <= 0:
            raise ValueError(
                f"replica_pending_timeout must be > 0 or None, got {self.replica_pending_timeout}"
            )
        if self.rpc_server not in RPC_SERVERS:
            raise ValueError(f"rpc_server must be one of {RPC_SERVERS}, got {self.rpc_server!r}")
        if self.cpu is not None and self.cpu < 0:
            raise ValueError(f"cpu must be a CPU number (>= 0) or None, got {self.cpu}")
        if self.shard_streams < 0:
            raise ValueError(f"shard_streams must be >= 0, got {self.shard_streams}")
        if self.snapshot_every < 1:
            raise ValueError(f"snapshot_every must be >= 1, got {self.snapshot_every}")
        if not 0 <= self.port <= 65535:
            raise ValueError(f"port must be in [0, 65535], got {self.port}")
        if self.num_ps < 0 or self.ps_checkpoint_interval < 0:
            raise ValueError(
                f"num_ps and ps_checkpoint_interval must be >= 0, got {self.num_ps} and "
                f"{self.ps_checkpoint_interval}"
            )
        names = [d.name for d in self.datasets]
        if len(set(names)) != len(names):
            raise ValueError(f"datasets: names must be unique, got {names}")

    def rendezvous(self) -> RendezvousConfig:
        return RendezvousConfig(
            self.min_nodes, self.max_nodes, self.node_unit, self.last_call_timeout
        )

    def straggler_config(self) -> StragglerConfig:
        return StragglerConfig(ratio=self.straggler_ratio, window_s=self.straggler_window)

    @property
    def public_host(self) -> str:
        if self.advertise_host:
            return self.advertise_host
        return socket.getfqdn() if self.host in WILDCARD_HOSTS else self.host

    @property
    def health_interval(self) -> float:
        """How often the master looks for dead nodes, stragglers and due rounds."""
        return max(0.02, min(1.0, self.heartbeat_timeout / 4, self.last_call_timeout / 2 or 1.0))

    @property
    def state_path(self) -> Path | None:
        return Path(self.job_dir) / "master_state.json" if self.job_dir else None

    @property
    def addr_path(self) -> Path | None:
        return Path(self.job_dir) / "master.addr" if self.job_dir else None

    def with_overrides(self, **changes: Any) -> "MasterConfig":
        """A copy with the given fields changed; ``None`` values are ignored."""
        return replace(self, **{k: v for k, v in changes.items() if v is not None})

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
        ps = spec.replica_specs.get(ReplicaType.PS)
        base = cls(
            job_name=job.name or "job",
            namespace=job.namespace or "default",
            min_nodes=lo,
            max_nodes=hi,
            datasets=(dataset_from_spec(spec.dataset),) if spec.dataset is not None else (),
            batch=batch_plan_from_spec(spec.batch) if spec.batch is not None else None,
            optimize_mode=spec.optimize_mode or OptimizeMode.SINGLE_JOB,
            brain_url=brain_url(spec.brain_service) if spec.brain_service else "",
            optimizer_job=planned_job(job),
            num_ps=replica_bounds(ps).replicas if ps is not None else 0,
        )
        if (lag := spec.stragglers) is not None:
            base = base.with_overrides(
                stragglers=lag.policy,
                straggler_ratio=lag.ratio,
                straggler_window=lag.window_seconds,
            )
        return base.with_overrides(**overrides)

    def to_json(self) -> str:
        return _ADAPTER.dump_json(self).decode()

    @classmethod
    def from_json(cls, text: str) -> "MasterConfig":
        return _ADAPTER.validate_json(text)


_ADAPTER: TypeAdapter[MasterConfig] = TypeAdapter(MasterConfig)


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
        min_workers=max(replica_bounds(worker).min, 1) if worker else 1,
        max_workers=replica_bounds(worker).max if worker else None,
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
