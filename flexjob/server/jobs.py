"""Job-store operations behind the HTTP routes: find a job, change its replica counts, merge
profilings, list its replicas with addresses.

For: both API versions. The server only writes ``status.replicas``, ``status.profilings`` and
(DI replicas created with resources) ``status.migratedReplicas`` through
``Platform.patch_job_status``, as merge patches of just those fields (so the operator's and the
Allocator's writes made meanwhile survive); the operator does the creating and deleting.
Not for: HTTP concerns (routes in ``v2alpha1`` / ``v1alpha2``).
"""

import ipaddress
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from flexjob.api import ElasticJob, ElasticJobStatus, ReplicaType, ResourceSpec
from flexjob.api.errors import ConflictError, InvalidSpecError, NotFoundError
from flexjob.api.roles import scalable_types, scaling_target
from flexjob.core.operator.replica_plan import desired_count
from flexjob.core.operator.replica_resources import set_replica_resources
from flexjob.core.operator.scale_bounds import bound_problem, finished_problem
from flexjob.core.operator.status_patch import StatusOwner, StatusPatch, owner_patch
from flexjob.platform.cluster import with_cluster_objects
from flexjob.platform.contract import Platform, Replica, Service
from flexjob.server.read_cache import ReadCache


@dataclass(frozen=True, slots=True)
class JobId:
    """``namespace.name.generation``; names may hold dots, namespaces may not."""

    namespace: str
    name: str
    generation: int

    @classmethod
    def parse(cls, text: str) -> "JobId":
        namespace, _, rest = text.partition(".")
        name, _, generation = rest.rpartition(".")
        if not namespace or not name or not generation.isdigit():
            raise InvalidSpecError(
                f"job_id must be namespace.name.generation (e.g. default.mnist.1), got {text!r}"
            )
        return cls(namespace, name, int(generation))

    def __str__(self) -> str:
        return f"{self.namespace}.{self.name}.{self.generation}"


def job_id_of(job: ElasticJob) -> str:
    return f"{job.namespace}.{job.name}.{job.metadata.generation or 1}"


@dataclass(frozen=True, slots=True)
class ScaleResult:
    job: ElasticJob
    type: ReplicaType
    previous: int
    replicas: int


class JobService:
    """Read-modify-write of job status, serialised within this server process; reads are
    answered from ``cache`` (``server.read_cache``), which the server's own writes here
    invalidate."""

    def __init__(self, platform: Platform, cache: ReadCache | None = None) -> None:
        self.platform = platform
        self.cache = cache if cache is not None else ReadCache(ttl=0)
        self._lock = threading.Lock()

    def get(self, namespace: str, name: str, *, fresh: bool = False) -> ElasticJob:
        """The job as the operator sees it (a DI job with the cluster's aggregator)."""

        def load() -> ElasticJob:
            return with_cluster_objects(self.platform, self.platform.get_job(namespace, name))

        try:
            return self.cache.read("get_job", (namespace, name), load, fresh=fresh)
        except NotFoundError:
            raise NotFoundError(f"job {namespace}/{name} not found") from None

    def jobs(self, namespace: str | None, *, fresh: bool = False) -> list[ElasticJob]:
        """Every job of ``namespace`` (all for None), each as ``get`` returns it."""

        def load() -> list[ElasticJob]:
            return [
                with_cluster_objects(self.platform, j) for j in self.platform.list_jobs(namespace)
            ]

        return self.cache.read("list_jobs", namespace, load, fresh=fresh)

    def get_by_id(self, job_id: JobId, *, fresh: bool = False) -> ElasticJob:
        job = self.get(job_id.namespace, job_id.name, fresh=fresh)
        current = job.metadata.generation or 1
        if current != job_id.generation:
            raise NotFoundError(
                f"job {job_id.namespace}/{job_id.name} is at generation {current}, "
                f"not {job_id.generation} (job id {job_id} is stale)"
            )
        return job

    def update_status(
        self, namespace: str, name: str, change: Callable[[ElasticJob, ElasticJobStatus], None]
    ) -> ElasticJob:
        """Apply ``change`` to a fresh copy of the job's status (read from the platform, not
        the cache) and patch what it changed of the fields the server owns
        (``core.operator.status_patch.OWNED_FIELDS``); the rest is left to its writers."""
        with self._lock:
            job = self.get(namespace, name, fresh=True)
            status = (job.status or ElasticJobStatus()).model_copy(deep=True)
            change(job, status)
            return self.patch_status(
                namespace, name, owner_patch(job.status, status, StatusOwner.SERVER)
            )

    def patch_status(self, namespace: str, name: str, patch: StatusPatch) -> ElasticJob:
        """Merge ``patch`` into the job's status (atomically, on the platform); every read kept
        before is dropped."""
        try:
            return self.platform.patch_job_status(namespace, name, patch)
        except NotFoundError:
            raise NotFoundError(f"job {namespace}/{name} not found") from None
        finally:
            self.cache.invalidate()

    def delete_replica(self, namespace: str, name: str) -> None:
        """Delete one replica (the operator creates it again); every read kept is dropped."""
        try:
            self.platform.delete_replica(namespace, name)
        finally:
            self.cache.invalidate()

    def replicas(self, job: ElasticJob, *, fresh: bool = False) -> list[tuple[Replica, str | None]]:
        """The job's live replicas (not being deleted) with their ``host:port`` when known."""
        key = (job.namespace, job.name)
        found = self.cache.read(
            "list_services",
            key,
            lambda: self.platform.list_services(job.namespace, job.name),
            fresh=fresh,
        )
        services = {s.replica: s for s in found}
        listed = self.cache.read(
            "list_replicas",
            key,
            lambda: self.platform.list_replicas(job.namespace, job.name),
            fresh=fresh,
        )
        live = [r for r in listed if not r.deleting]
        live.sort(key=lambda r: (r.type.value, r.index))
        return [(r, replica_address(r, services.get(r.name))) for r in live]


def replica_address(replica: Replica, service: Service | None) -> str | None:
    """Where a client reaches ``replica``: its own ``host:port`` (local platform); a pod's IP
    with its Service's port (Kubernetes: the pod IP alone has no port); else the Service's."""
    own = replica.address
    if own and service is not None:
        try:
            ip = ipaddress.ip_address(own)  # a bare IP: a pod's
        except ValueError:
            return own
        return f"[{ip}]:{service.port}" if ip.version == 6 else f"{ip}:{service.port}"
    return own or (service.address if service is not None else None)


def scalable_type(job: ElasticJob, requested: ReplicaType | None) -> ReplicaType:
    """The replica type a scale request changes; ``requested`` must be one the job has."""
    types = scalable_types(job.spec.replica_specs)
    if requested is not None:
        if requested not in types:
            allowed = ", ".join(t.value for t in types) or "none"
            raise InvalidSpecError(
                f"type: job {job.namespace}/{job.name} has no {requested.value} replicas; "
                f"allowed: {allowed}"
            )
        return requested
    found = scaling_target(job.spec.replica_specs)
    if found is not None:
        return found
    raise ConflictError(f"job {job.namespace}/{job.name} has no replicas that can be scaled")


def require_scalable(job: ElasticJob, *, preemptible: bool) -> None:
    """409 unless the job may change size: not finished and, with ``preemptible``, preemptible."""
    if preemptible and not job.spec.preemptible:
        raise ConflictError(
            f"job {job.namespace}/{job.name} is not preemptible (spec.preemptible is false): "
            "its replica count is fixed; only preemptible jobs can be scaled through this API"
        )
    problem = finished_problem(job)
    if problem is not None:
        raise ConflictError(problem)


def bounded_count(job: ElasticJob, rtype: ReplicaType, wanted: int) -> int:
    """``wanted`` if it is within the type's ``minReplicas``/``maxReplicas``; else 409."""
    problem = bound_problem(job, rtype, wanted)
    if problem is not None:
        raise ConflictError(problem)
    return wanted


def scale_counts(
    store: JobService,
    namespace: str,
    name: str,
    deltas: Mapping[ReplicaType, int],
    *,
    preemptible: bool = True,
    resources: Mapping[ReplicaType, ResourceSpec | None] | None = None,
) -> tuple[ElasticJob, dict[ReplicaType, tuple[int, int]]]:
    """Add ``deltas`` to the job's replica counts within their bounds (with ``preemptible``,
    only for preemptible jobs: v2alpha1; DI v1 coordinators size their own jobs). With
    ``resources`` (a DI create request's), each new replica of a type gets the type's entry as
    its own resources and each removed one loses its own, in the same patch.

    Returns the stored job and, per type, (previous, new) counts.
    """
    changes: dict[ReplicaType, tuple[int, int]] = {}

    def change(job: ElasticJob, status: ElasticJobStatus) -> None:
        require_scalable(job, preemptible=preemptible)
        for rtype, delta in deltas.items():
            before = desired_count(job, status, rtype)
            after = bounded_count(job, rtype, before + delta)
            changes[rtype] = (before, after)
            status.replicas[rtype] = after
            if resources is not None:
                lo, hi = sorted((before, after))
                own = resources.get(rtype) if after > before else None
                set_replica_resources(status, rtype, range(lo, hi), own)

    job = store.update_status(namespace, name, change)
    return job, changes
