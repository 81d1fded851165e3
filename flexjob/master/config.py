"""``MasterConfig``: everything a job master needs to run, from an ``ElasticJob`` or built by hand.

``MasterConfig.from_job`` reads an ElasticJob (``spec.replicaSpecs.worker`` min/max →
rendezvous bounds, ``spec.dataset`` → sharding, ``spec.batch`` → batch plan); ``flexjob run``
builds one directly. ``to_json`` / ``from_json`` carry it to a child master process. Builds
core objects (splitter, batch plan, rendezvous config) but runs nothing.
"""

import json
import socket
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from flexjob.api import ElasticJob, replica_bounds
from flexjob.api.roles import main_training_type
from flexjob.core.batch import BatchPlan
from flexjob.core.rendezvous import RendezvousConfig
from flexjob.core.splitters import FileSplitter, RangeSplitter, Splitter, parse_file_entry

DEFAULT_SHARD_SIZE = 64


@dataclass(frozen=True, slots=True)
class DatasetConfig:
    """A dataset to shard: ``size`` samples, or ``files`` (``NAME[:ROWS|:START-END]``)."""

    name: str = ""
    size: int | None = None
    files: tuple[str, ...] = ()
    shard_size: int = DEFAULT_SHARD_SIZE
    epochs: int = 1
    shuffle: bool = False
    seed: int = 0

    def __post_init__(self) -> None:
        if (self.size is None) == (not self.files):
            raise ValueError("dataset: give exactly one of size or files")
        if self.epochs < 1:
            raise ValueError(f"dataset.epochs must be >= 1, got {self.epochs}")
        self.splitter()  # validates size / shard_size / file entries

    def splitter(self) -> Splitter:
        if self.size is not None:
            return RangeSplitter(self.size, self.shard_size, self.shuffle, self.seed)
        entries = tuple(parse_file_entry(f) for f in self.files)
        return FileSplitter(entries, self.shard_size, self.shuffle, self.seed)


@dataclass(frozen=True, slots=True)
class BatchConfig:
    """A fixed global batch: ``micro_batch_size`` and either ``max_workers`` (one micro-batch
    per worker at full size) or ``global_batch_size``."""

    micro_batch_size: int
    max_workers: int | None = None
    global_batch_size: int | None = None

    def __post_init__(self) -> None:
        self.plan()

    def plan(self) -> BatchPlan:
        if self.global_batch_size is not None:
            return BatchPlan.for_global_batch(self.global_batch_size, self.micro_batch_size)
        if self.max_workers is not None:
            return BatchPlan.for_max_workers(self.max_workers, self.micro_batch_size)
        raise ValueError("batch: give globalBatchSize or maxWorkers with microBatchSize")


@dataclass(frozen=True, slots=True)
class MasterConfig:
    job_name: str = "job"
    host: str = "127.0.0.1"
    port: int = 0
    job_dir: str | None = None
    min_nodes: int = 1
    max_nodes: int = 1
    node_unit: int = 1
    last_call_timeout: float = 1.0
    heartbeat_timeout: float = 30.0
    straggler_timeout: float | None = None
    datasets: tuple[DatasetConfig, ...] = ()
    batch: BatchConfig | None = None
    host_store: bool = True
    rpc_workers: int = 32
    fsync: bool = False
    #: Shard reports journaled between two snapshots of the whole state.
    snapshot_every: int = 1000
    #: The host others use to reach this master and its store; default: ``host``, or this
    #: machine's name when ``host`` is a wildcard (0.0.0.0, ::).
    advertise_host: str | None = None
    #: Resource optimization (``master.optimizing``): the mode ("manual", "single-job",
    #: "cluster"), the brain's URL, seconds between plans, and the job as the brain sees it
    #: (``brain.schemas.JobInfo`` JSON; built from the node bounds when empty).
    optimize_mode: str = "manual"
    brain_url: str = ""
    optimize_interval: float = 30.0
    optimizer_job: dict[str, Any] = field(default_factory=dict)
    #: Where accepted plans go as ScalePlans: "" = JSON files in ``<job-dir>/scaleplans``;
    #: "local" / "kubernetes" = that platform's store, for its operator to carry out.
    scale_plan_platform: str = ""

    def __post_init__(self) -> None:
        self.rendezvous()
        if self.heartbeat_timeout <= 0:
            raise ValueError(f"heartbeat_timeout must be > 0, got {self.heartbeat_timeout}")
        if self.snapshot_every < 1:
            raise ValueError(f"snapshot_every must be >= 1, got {self.snapshot_every}")
        if not 0 <= self.port <= 65535:
            raise ValueError(f"port must be in [0, 65535], got {self.port}")
        names = [d.name for d in self.datasets]
        if len(set(names)) != len(names):
            raise ValueError(f"datasets: names must be unique, got {names}")

    def rendezvous(self) -> RendezvousConfig:
        return RendezvousConfig(
            self.min_nodes, self.max_nodes, self.node_unit, self.last_call_timeout
        )

    @property
    def public_host(self) -> str:
        if self.advertise_host:
            return self.advertise_host
        return socket.getfqdn() if self.host in ("", "0.0.0.0", "::", "[::]") else self.host

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
    def from_job(cls, job: ElasticJob, **overrides: Any) -> "MasterConfig":
        spec = job.spec
        lo = hi = 1
        if (trainer := main_training_type(spec.replica_specs)) is not None:
            bounds = replica_bounds(spec.replica_specs[trainer])
            lo, hi = bounds.min, bounds.max
        datasets: tuple[DatasetConfig, ...] = ()
        if (d := spec.dataset) is not None:
            datasets = (
                DatasetConfig(
                    name=d.name or "",
                    size=d.size,
                    files=tuple(d.files or ()),
                    shard_size=_or(d.shard_size, DEFAULT_SHARD_SIZE),
                    epochs=_or(d.epochs, 1),
                    shuffle=bool(d.shuffle),
                    seed=d.shuffle_seed or 0,
                ),
            )
        batch = None
        if (b := spec.batch) is not None:
            micro = b.micro_batch_size
            if micro is None and b.global_batch_size and b.max_workers:
                micro = b.global_batch_size // b.max_workers
            if micro is None:
                raise ValueError("spec.batch.microBatchSize is required")
            batch = BatchConfig(micro, b.max_workers, b.global_batch_size)
        from flexjob.master.optimizer import job_info_from_spec

        info = job_info_from_spec(job)
        base = cls(
            job_name=job.name or "job",
            min_nodes=lo,
            max_nodes=hi,
            datasets=datasets,
            batch=batch,
            optimize_mode=info.optimize_mode.value,
            brain_url=spec.brain_service or "",
            optimizer_job=info.model_dump(mode="json"),
        )
        return base.with_overrides(**overrides)

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> "MasterConfig":
        data = json.loads(text)
        data["datasets"] = tuple(
            DatasetConfig(**{**d, "files": tuple(d["files"])}) for d in data.get("datasets", ())
        )
        if data.get("batch") is not None:
            data["batch"] = BatchConfig(**data["batch"])
        return cls(**data)


def _or(value: int | None, default: int) -> int:
    return default if value is None else value
