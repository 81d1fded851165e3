"""Job traces for the cluster simulator: the CSV format, its reader and writer, and a generator.

For: ``flexjob simulate`` and ``benchmarks/scheduler.py``. Not for: running the simulation
(``simulator``) or live jobs.

CSV format (one header row, one job per row; columns after ``work`` are optional)::

    id                      unique job name
    submit_time             seconds from the start of the trace when the job arrives (>= 0)
    work                    seconds the job needs on one replica (its size, in 1-replica time)
    replicas                replicas the user asks for (what ``static`` and ``pack`` give); 1
    min_replicas            least replicas it can run with; 1
    max_replicas            most replicas it may get; = replicas
    gpus_per_replica        GPUs per replica; 1
    preemptible             true/false: may the Allocator resize and move it; true
    local_batch             samples per replica per step; 32
    noise_scale             gradient noise scale in samples (empty: efficiency 1); empty
    max_batch               global batch bound for adaptive batch size (empty: the local batch
                            stays fixed on every shape); empty
    max_local_batch         most samples one replica holds (adaptive only); = local_batch
    alpha, beta, sync_local, sync_local_per_replica, sync_remote, sync_remote_per_replica
                            step-time model terms in seconds (see core.training.goodput_model);
                            ThroughputParams defaults
    gamma                   how far compute and all-reduce overlap in the job's *true* step
                            time (Pollux's gamma: (compute**g + sync**g)**(1/g)); 1 (none, the
                            step time the columns above give). Above 1 the job reports the
                            fit of the columns' form to its true step times (``sim_jobs``)
    noise_growth            the gradient noise scale at the end of training over
                            ``noise_scale`` at its start (grows geometrically with progress); 1
    restart_delay           seconds a restart of this job costs (empty: the cluster's)
    restart_per_node        seconds a restart costs per node of its new allocation; 0
    learned                 true/false: the job reports the model fitted to the shapes it has
                            run so far, not its true one (``sim_jobs``); false

A job's progress per second is ``speedup(num_nodes, num_replicas)`` of its goodput model; it
finishes when progress reaches ``work``.
"""

import csv
import random
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from flexjob.api.errors import AllocatorError, InvalidSpecError
from flexjob.core.allocator import GoodputModel, ThroughputParams

MODEL_COLUMNS = (
    "alpha",
    "beta",
    "sync_local",
    "sync_local_per_replica",
    "sync_remote",
    "sync_remote_per_replica",
)
COLUMNS = (
    "id",
    "submit_time",
    "work",
    "replicas",
    "min_replicas",
    "max_replicas",
    "gpus_per_replica",
    "preemptible",
    "local_batch",
    "noise_scale",
    "max_batch",
    "max_local_batch",
    *MODEL_COLUMNS,
    "gamma",
    "noise_growth",
    "restart_delay",
    "restart_per_node",
    "learned",
)
_DEFAULTS = ThroughputParams()


class TraceError(AllocatorError, InvalidSpecError):
    """A trace file that cannot be read; the message names the row and the column."""


class TraceJob(BaseModel):
    """One row of a trace."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1)
    submit_time: float = Field(ge=0)
    work: float = Field(gt=0)
    replicas: int = Field(1, ge=1)
    min_replicas: int = Field(1, ge=1)
    max_replicas: int | None = Field(None, ge=1)
    gpus_per_replica: int = Field(1, ge=0)
    preemptible: bool = True
    local_batch: float = Field(32.0, gt=0)
    noise_scale: float | None = Field(None, ge=0)
    max_batch: float | None = Field(None, gt=0)
    max_local_batch: float | None = Field(None, gt=0)
    alpha: float = Field(_DEFAULTS.alpha, ge=0)
    beta: float = Field(_DEFAULTS.beta, ge=0)
    sync_local: float = Field(_DEFAULTS.sync_local, ge=0)
    sync_local_per_replica: float = Field(_DEFAULTS.sync_local_per_replica, ge=0)
    sync_remote: float = Field(_DEFAULTS.sync_remote, ge=0)
    sync_remote_per_replica: float = Field(_DEFAULTS.sync_remote_per_replica, ge=0)
    gamma: float = Field(1.0, ge=1, le=10)
    noise_growth: float = Field(1.0, gt=0)
    restart_delay: float | None = Field(None, ge=0)
    restart_per_node: float = Field(0.0, ge=0)
    learned: bool = False

    @model_validator(mode="after")
    def _bounds(self) -> "TraceJob":
        top = self.max_replicas if self.max_replicas is not None else self.replicas
        if not self.min_replicas <= self.replicas <= top:
            raise ValueError(
                f"replicas must be within [min_replicas, max_replicas] = "
                f"[{self.min_replicas}, {top}], got {self.replicas}"
            )
        if self.max_batch is not None and self.max_batch < self.local_batch:
            raise ValueError(
                f"max_batch must be >= local_batch ({self.local_batch}), got {self.max_batch}"
            )
        if self.alpha + self.beta * self.local_batch <= 0:
            raise ValueError("alpha + beta * local_batch must be > 0 (a step takes time)")
        return self

    @property
    def top(self) -> int:
        return self.max_replicas if self.max_replicas is not None else self.replicas

    def params(self) -> ThroughputParams:
        """The step-time terms of the columns (the true step time when ``gamma`` is 1)."""
        return ThroughputParams(*(getattr(self, name) for name in MODEL_COLUMNS))

    def model(self) -> GoodputModel:
        """The goodput model of the columns, at the noise scale training starts with."""
        return GoodputModel(
            self.params(), self.local_batch, self.noise_scale, self.max_batch, self.max_local_batch
        )


def _row_errors(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        field = ".".join(str(p) for p in err["loc"]) or "row"
        parts.append(f"{field}: {err['msg']}")
    return "; ".join(parts)


def read_trace(path: Path) -> list[TraceJob]:
    """Jobs of a CSV trace, by submit time. Raises ``TraceError`` naming the row and column."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise TraceError(f"cannot read trace {path}: {exc.strerror}") from exc
    reader = csv.DictReader(line for line in text.splitlines() if not line.startswith("#"))
    unknown = sorted(set(reader.fieldnames or ()) - set(COLUMNS))
    if unknown:
        raise TraceError(f"{path}: unknown columns {unknown}; allowed: {', '.join(COLUMNS)}")
    jobs: list[TraceJob] = []
    for line, row in enumerate(reader, start=2):
        values = {k: v for k, v in row.items() if k is not None and v not in (None, "")}
        try:
            jobs.append(TraceJob.model_validate(values))
        except ValidationError as exc:
            raise TraceError(f"{path} line {line}: {_row_errors(exc)}") from None
    ids = [job.id for job in jobs]
    if len(set(ids)) != len(ids):
        raise TraceError(f"{path}: job ids must be unique")
    return sorted(jobs, key=lambda j: (j.submit_time, j.id))


def write_trace(jobs: Iterable[TraceJob], path: Path) -> None:
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        for job in jobs:
            row = job.model_dump()
            writer.writerow({k: "" if row[k] is None else _fmt(row[k]) for k in COLUMNS})


def _fmt(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


#: The sync terms of the throughput model, in the order workload tables give them.
SYNC_TERMS = ("sync_local", "sync_local_per_replica", "sync_remote", "sync_remote_per_replica")


def check_workload(num_jobs: int, hours: float) -> None:
    """Refuse a generated workload of no jobs or no time, naming the field."""
    if num_jobs < 1:
        raise InvalidSpecError(f"num_jobs must be >= 1, got {num_jobs}")
    if hours <= 0:
        raise InvalidSpecError(f"hours must be > 0, got {hours}")


def synthetic_job(
    name: str,
    index: int,
    submit: float,
    work: float,
    asked: int,
    max_replicas: int,
    sync: tuple[float, float, float, float],
    **model: float | bool | None,
) -> TraceJob:
    """Job ``index`` of a synthetic workload of model ``name``: times rounded to 0.1 s, asking
    ``asked`` replicas, elastic from 1 to ``max_replicas``; ``sync``: the ``SYNC_TERMS``;
    ``model``: the model's other ``TraceJob`` fields (``local_batch``, ``noise_scale``, ...)."""
    return TraceJob(
        id=f"{name}-{index:03d}",
        submit_time=round(submit, 1),
        work=round(work, 1),
        replicas=asked,
        min_replicas=1,
        max_replicas=max_replicas,
        **dict(zip(SYNC_TERMS, sync, strict=True)),
        **model,
    )


# Workload classes of the synthetic generator, loosely after Pollux's: (name, share, median
# 1-replica hours, noise scale, sync terms (local, per replica, remote, per replica)).
_CLASSES = (
    ("small", 0.55, 0.4, 300.0, (0.01, 0.002, 0.04, 0.006)),
    ("medium", 0.3, 2.0, 2000.0, (0.01, 0.001, 0.03, 0.004)),
    ("large", 0.1, 8.0, 20000.0, (0.005, 0.0005, 0.02, 0.002)),
    ("chatty", 0.05, 1.5, 500.0, (0.05, 0.01, 0.2, 0.03)),
)


def generate_trace(
    num_jobs: int = 60,
    *,
    seed: int = 0,
    mean_interarrival: float = 120.0,
    max_replicas: int = 16,
) -> list[TraceJob]:
    """A synthetic trace: Poisson arrivals, lognormal sizes, users asking powers of two."""
    if num_jobs < 1:
        raise ValueError(f"num_jobs must be >= 1, got {num_jobs}")
    rng = random.Random(seed)
    jobs: list[TraceJob] = []
    t = 0.0
    weights = [c[1] for c in _CLASSES]
    for i in range(num_jobs):
        name, _, hours, noise, sync = rng.choices(_CLASSES, weights)[0]
        work = 3600.0 * hours * rng.lognormvariate(0.0, 0.6)
        asked = min(rng.choice([1, 1, 2, 2, 4, 4, 8, 16]), max_replicas)
        local_batch = rng.choice([32.0, 64.0, 128.0])
        noise_scale = round(noise * rng.uniform(0.5, 2.0), 1)
        jobs.append(
            synthetic_job(
                name,
                i,
                t,
                work,
                asked,
                max_replicas,
                sync,
                local_batch=local_batch,
                noise_scale=noise_scale,
                alpha=0.05,
                beta=0.002,
            )
        )
        t += rng.expovariate(1.0 / mean_interarrival)
    return jobs
