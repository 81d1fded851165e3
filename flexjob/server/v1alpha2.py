"""DI Orchestrator v1 API (``/v1alpha2``, and ``/v1alpha1`` as DI-engine's own client and its
``ding -m dist --add/--delete/--restart`` commands call it): a coordinator asks for collectors
and learners.

A job is named by ``namespace`` + ``coordinator`` (its coordinator replica, ``<job>-coordinator-0``,
``<job>-coordinator`` or the job name). ``POST`` / ``DELETE /v1alpha2/replicas`` add or remove
collectors and learners by changing ``status.replicas`` (the operator creates and deletes); a
learner asking for more than one GPU is a *logic learner* (``core.operator.logic_learners``): an
aggregator replica is added in front of it (aggregator ``i`` serves learner ``i``; its recipe
is the job's AggregatorConfig, else the cluster's), and the aggregator's address is what the
coordinator gets back. ``GET /v1alpha2/replicas`` lists replicas, filtered by ``namespace``,
``coordinator`` or ``aggregator`` (the addresses of the learner processes it serves: one per
GPU of its learner). ``POST /v1alpha2/replicas/failed`` recreates the named failed
replicas (their records are removed; the operator creates them again). Not for v2 clients.

A ``POST`` answers, as di-server does, with the new replicas' addresses (``host:port``): it
waits up to ``address_wait`` seconds (``DEFAULT_ADDRESS_WAIT``) for the operator to create
them and the platform to list their addresses; a replica without one by then is answered by
its name. A ``DELETE`` answers with the removed replicas' addresses as listed before.

A request's ``cpus``, ``memory`` and ``gpus`` are what each replica it creates gets as its
main container's requests and limits (``ResourceQuantity``; the aggregators keep their
template's), kept in ``status.migratedReplicas`` so a recreated replica gets them again.
"""

import time
from collections.abc import Sequence

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from flexjob.api import ElasticJob, ReplicaPhase, ReplicaType, ResourceSpec
from flexjob.api.errors import ConflictError, InvalidSpecError, NotFoundError
from flexjob.api.quantity import cpu_cores, memory_mib, parse_quantity
from flexjob.api.roles import DI_FIELDS, DRIVER_TYPE, FRONT_TYPE, FRONTED_TYPE, ROLE_TRAITS
from flexjob.core.operator.logic_learners import gpu_addresses, is_logic_learner, learner_gpus
from flexjob.core.replicas import Replica, replica_name
from flexjob.server.di_keys import DI_KEY, key_allows
from flexjob.server.envelope import Envelope, ok
from flexjob.server.jobs import JobService, scale_counts
from flexjob.server.metrics import ServerMetrics

#: Seconds a POST waits for its new replicas' addresses (module doc).
DEFAULT_ADDRESS_WAIT = 10.0
#: Seconds between two looks at the platform while waiting.
_ADDRESS_POLL = 0.2
#: The path versions this API answers on: DI-engine's client defaults to v1alpha1.
VERSIONS = ("v1alpha2", "v1alpha1")
NAME = Field(min_length=1, max_length=253)
_EXAMPLES = "cpus 500m or 2, memory 512Mi or 2Gi"


class ResourceQuantity(BaseModel):
    """How many replicas of one kind, and what each needs (DI's ``ResourceQuantity``): each
    replica created gets ``cpus`` and ``memory`` (Kubernetes quantities: ``500m``, ``2``;
    ``512Mi``, a plain number is bytes) and ``gpus`` as its main container's requests and
    limits; 0 or absent: as its template has it."""

    model_config = ConfigDict(extra="forbid")

    replicas: int = Field(0, ge=0, le=10_000)
    cpus: float | str | None = None
    gpus: int = Field(
        0, ge=0, le=1024, description="GPUs per replica; a learner's >1 adds an aggregator"
    )
    memory: str | int | None = None

    @field_validator("gpus", mode="before")
    @classmethod
    def _gpus(cls, value: object) -> object:
        if isinstance(value, str):
            if not value.strip().isdigit():
                raise ValueError(f"gpus must be a whole number, got {value!r}")
            return int(value)
        return value

    @field_validator("cpus", "memory")
    @classmethod
    def _quantity(cls, value: float | str | None, info: ValidationInfo) -> float | str | None:
        if value is None:
            return value
        try:
            number = parse_quantity(value)
        except ValueError as exc:
            raise ValueError(
                f"{info.field_name} must be a quantity (e.g. {_EXAMPLES}): {exc}"
            ) from None
        if info.field_name == "memory" and number > 0 and memory_mib(value) == 0:
            raise ValueError(f"memory must be at least 1Mi, got {value!r}")
        return value

    def each(self) -> ResourceSpec:
        """What each replica asked for gets (unset: its template's)."""
        cpu = cpu_cores(self.cpus) if self.cpus is not None else 0.0
        mib = memory_mib(self.memory) if self.memory is not None else 0
        return ResourceSpec(cpu=cpu or None, memory=mib or None, gpu=self.gpus or None)


class JobRequest(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                dict(
                    namespace="default",
                    coordinator="cartpole-coordinator-0",
                    collectors={"replicas": 1},
                    learners={"replicas": 1, "gpus": 2},
                )
            ]
        },
    )

    namespace: str = NAME
    coordinator: str = NAME
    collectors: ResourceQuantity = Field(default_factory=ResourceQuantity)
    learners: ResourceQuantity = Field(default_factory=ResourceQuantity)


class FailedRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    namespace: str = NAME
    coordinator: str = NAME
    collectors: list[str] = Field(default_factory=list, max_length=1000)
    learners: list[str] = Field(default_factory=list, max_length=1000)
    aggregators: list[str] = Field(default_factory=list, max_length=1000)


class JobResponse(BaseModel):
    """Replicas of one job: ``host:port`` where known, else the replica name."""

    namespace: str
    coordinator: str
    collectors: list[str] = Field(default_factory=list)
    learners: list[str] = Field(default_factory=list)
    aggregators: list[str] = Field(default_factory=list)


def coordinator_names(job: ElasticJob) -> set[str]:
    return {job.name, f"{job.name}-{DRIVER_TYPE.value}", replica_name(job.name, DRIVER_TYPE, 0)}


def coordinator_of(job: ElasticJob) -> str:
    if DRIVER_TYPE in job.spec.replica_specs:
        return replica_name(job.name, DRIVER_TYPE, 0)
    return job.name


class V1Api:
    def __init__(
        self,
        store: JobService,
        metrics: ServerMetrics,
        token: str | None,
        address_wait: float = DEFAULT_ADDRESS_WAIT,
    ) -> None:
        self.store = store
        self.metrics = metrics
        self.token = token
        self.address_wait = address_wait

    def listed(self, job: ElasticJob, *, fresh: bool = False) -> dict[str, str]:
        """The job's replicas that have an address, by name (with ``fresh``, as the platform
        lists them now, not as the server's cache kept them)."""
        return {r.name: a for r, a in self.store.replicas(job, fresh=fresh) if a is not None}

    def addresses(self, job: ElasticJob, names: Sequence[str]) -> dict[str, str]:
        """``names`` → their ``host:port``, waiting up to ``address_wait`` seconds for every one
        to be listed with one; a replica without one by then stands for itself (its name)."""
        deadline = time.monotonic() + self.address_wait
        while True:
            listed = self.listed(job, fresh=True)
            if all(n in listed for n in names) or time.monotonic() >= deadline:
                return {n: listed.get(n, n) for n in names}
            time.sleep(_ADDRESS_POLL)

    def jobs(
        self, namespace: str | None, key: str | None, *, fresh: bool = False
    ) -> list[ElasticJob]:
        """The jobs of ``namespace`` a request with ``key`` may see (``server.di_keys``)."""
        listed = self.store.jobs(namespace, fresh=fresh)
        return [j for j in listed if key_allows(key, self.token, j)]

    def find(
        self, namespace: str, coordinator: str, key: str | None, *, fresh: bool = False
    ) -> ElasticJob:
        """The job of ``coordinator``; a write (``fresh``) finds it as the platform has it."""
        for job in self.jobs(namespace, key, fresh=fresh):
            if coordinator in coordinator_names(job):
                return job
        raise NotFoundError(f"coordinator: no job in namespace {namespace!r} has {coordinator!r}")

    def listing(self, job: ElasticJob) -> JobResponse:
        out = JobResponse(namespace=job.namespace, coordinator=coordinator_of(job))
        for replica, address in self.store.replicas(job):
            if address is None:
                continue
            field = ROLE_TRAITS[replica.type].di_field
            if field is not None:
                getattr(out, field).append(address)
        return out

    def deltas(self, job: ElasticJob, body: JobRequest, sign: int) -> dict[ReplicaType, int]:
        deltas: dict[ReplicaType, int] = {}
        for field, rtype in _requested(JobRequest):
            quantity: ResourceQuantity = getattr(body, field)
            if quantity.replicas == 0:
                continue
            if rtype not in job.spec.replica_specs:
                raise InvalidSpecError(
                    f"{field}: job {job.namespace}/{job.name} has no {rtype.value} replica spec"
                )
            deltas[rtype] = sign * quantity.replicas
        learners = deltas.get(FRONTED_TYPE, 0)
        if learners and is_logic_learner(job, body.learners.gpus):
            if FRONT_TYPE not in job.spec.replica_specs:
                raise ConflictError(
                    f"learners.gpus: learners with more than one GPU need an aggregator, but job "
                    f"{job.namespace}/{job.name} has no aggregator replica spec and the cluster "
                    "has no AggregatorConfig (add one with: flexjob apply FILE)"
                )
            deltas[FRONT_TYPE] = learners
        if not deltas:
            raise InvalidSpecError("collectors.replicas, learners.replicas: both are 0")
        return deltas

    def scale(self, body: JobRequest, sign: int, key: str | None) -> JobResponse:
        job = self.find(body.namespace, body.coordinator, key, fresh=True)
        deltas = self.deltas(job, body, sign)
        before_listed = self.listed(job, fresh=True) if sign < 0 else {}
        # Each new replica gets what its request asked (an aggregator: its template's).
        asked = {t: getattr(body, f).each() for f, t in _requested(JobRequest)}
        job, changes = scale_counts(
            self.store, job.namespace, job.name, deltas, preemptible=False, resources=asked
        )
        names: dict[ReplicaType, list[str]] = {}
        for rtype, (before, after) in changes.items():
            lo, hi = sorted((before, after))
            names[rtype] = [replica_name(job.name, rtype, i) for i in range(lo, hi)]
        every = [n for group in names.values() for n in group]
        if sign > 0:
            found = self.addresses(job, every)
        else:
            found = {n: before_listed.get(n, n) for n in every}
        names = {t: [found[n] for n in group] for t, group in names.items()}
        # A logic learner with an aggregator is reached through the aggregator.
        listed = {field: names.get(rtype, []) for field, rtype in DI_FIELDS.items()}
        fronted = ROLE_TRAITS[FRONTED_TYPE].di_field or ""
        listed[fronted] = names.get(FRONT_TYPE) or listed[fronted]
        self.metrics.scale_requests.labels("v1alpha2", "up" if sign > 0 else "down").inc()
        return JobResponse(namespace=job.namespace, coordinator=coordinator_of(job), **listed)

    def recreate_failed(self, body: FailedRequest, key: str | None) -> JobResponse:
        job = self.find(body.namespace, body.coordinator, key, fresh=True)
        live = {r.name: r for r, _ in self.store.replicas(job, fresh=True)}
        chosen = []
        for field, rtype in _requested(FailedRequest):
            requested: list[str] = getattr(body, field)
            for i, name in enumerate(requested):
                replica = live.get(name) or live.get(f"{job.name}-{name}")
                if replica is None or replica.type is not rtype:
                    raise NotFoundError(
                        f"{field}[{i}]: job {job.namespace}/{job.name} has no {rtype.value} "
                        f"replica {name!r}"
                    )
                if replica.phase is not ReplicaPhase.FAILED:
                    raise ConflictError(
                        f"{field}[{i}]: replica {replica.name} is {replica.phase.value}, not Failed"
                    )
                chosen.append(replica)
        for replica in chosen:
            self.store.delete_replica(replica.namespace, replica.name)
        listed = {field: _names(chosen, rtype) for field, rtype in DI_FIELDS.items()}
        return JobResponse(namespace=job.namespace, coordinator=coordinator_of(job), **listed)


def _names(replicas: Sequence[Replica], rtype: ReplicaType) -> list[str]:
    return [r.name for r in replicas if r.type is rtype]


def _requested(request: type[BaseModel]) -> list[tuple[str, ReplicaType]]:
    """The DI fields ``request`` has (``api.roles.DI_FIELDS``), with the type each names."""
    return [(f, t) for f, t in DI_FIELDS.items() if f in request.model_fields]


def _key(request: Request) -> str | None:
    key = request.scope.get(DI_KEY)
    return None if key is None else str(key)


def router(
    store: JobService,
    metrics: ServerMetrics,
    version: str = VERSIONS[0],
    token: str | None = None,
    address_wait: float = DEFAULT_ADDRESS_WAIT,
) -> APIRouter:
    """The v1 API at ``/<version>``; with the server's ``token``, a request that came with a
    DI job key (``server.di_keys``) reaches only that job; a POST waits up to
    ``address_wait`` seconds for its replicas' addresses."""
    api = APIRouter(prefix=f"/{version}", tags=[version])
    v1 = V1Api(store, metrics, token, address_wait)

    @api.get("/replicas", response_model=Envelope[JobResponse | list[JobResponse]])
    def get_replicas(
        request: Request,
        namespace: str | None = Query(None, min_length=1, max_length=253),
        coordinator: str | None = Query(None, min_length=1, max_length=253),
        aggregator: str | None = Query(None, min_length=1, max_length=253),
    ) -> Envelope[JobResponse | list[JobResponse]]:
        """Collectors, learners and aggregators: of the job of ``coordinator`` or of
        ``aggregator`` (one object), else of every job in ``namespace`` (a list)."""
        if aggregator is not None:
            if namespace is None:
                raise InvalidSpecError("namespace: required with aggregator")
            return ok(_of_aggregator(v1, namespace, aggregator, _key(request)))
        if coordinator is not None:
            if namespace is None:
                raise InvalidSpecError("namespace: required with coordinator")
            return ok(v1.listing(v1.find(namespace, coordinator, _key(request))))
        return ok([v1.listing(job) for job in v1.jobs(namespace, _key(request))])

    @api.post("/replicas", response_model=Envelope[JobResponse])
    def add_replicas(body: JobRequest, request: Request) -> Envelope[JobResponse]:
        """Add collectors and learners (and aggregators for multi-GPU learners); answers with
        their addresses once they have them."""
        return ok(v1.scale(body, +1, _key(request)))

    @api.delete("/replicas", response_model=Envelope[JobResponse])
    def remove_replicas(body: JobRequest, request: Request) -> Envelope[JobResponse]:
        """Remove collectors and learners (the highest indices go first)."""
        return ok(v1.scale(body, -1, _key(request)))

    @api.post("/replicas/failed", response_model=Envelope[JobResponse])
    def recreate_failed(body: FailedRequest, request: Request) -> Envelope[JobResponse]:
        """Recreate the named failed replicas."""
        return ok(v1.recreate_failed(body, _key(request)))

    return api


def _of_aggregator(v1: V1Api, namespace: str, aggregator: str, key: str | None) -> JobResponse:
    for job in v1.jobs(namespace, key):
        listing = {r.name: (r, a) for r, a in v1.store.replicas(job)}
        found = listing.get(aggregator)
        if found is None or found[0].type is not FRONT_TYPE:
            continue
        learner = listing.get(replica_name(job.name, FRONTED_TYPE, found[0].index))
        gpus = learner_gpus(job, found[0].index)
        served = gpu_addresses(learner[1], gpus) if learner and learner[1] else []
        return JobResponse(
            namespace=namespace,
            coordinator=coordinator_of(job),
            learners=served,
            aggregators=[found[1]] if found[1] else [],
        )
    raise NotFoundError(f"aggregator: no aggregator {aggregator!r} in namespace {namespace!r}")
