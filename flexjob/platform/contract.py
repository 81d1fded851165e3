"""The platform protocols: where jobs and their replicas live.

Two protocols, two implementations: a ``JobStore`` (jobs, ScalePlans, events) and a
``ReplicaRuntime`` (replicas, services, logs); a ``Platform`` is both, as
``flexjob.platform.local`` (processes on this machine, state in SQLite) and
``flexjob.platform.kubernetes`` (custom resources, pods, services) are. Code that needs only
one side takes only that protocol (the server and the Allocator mostly read the store). It
decides nothing: ``core.operator.reconcile`` decides, drivers in ``flexjob.operator`` call the
platform.

Contract (checked by ``tests/platform/contract.py`` for every implementation):

* all calls are synchronous and thread-safe; objects returned are fresh copies;
* ``create_*`` raises ``AlreadyExistsError`` when the name is taken; ``get_job`` raises
  ``NotFoundError``; other failures raise ``UnavailableError`` (all from ``api.errors``);
  ``delete_*`` of something gone is a no-op;
* ``create_replica`` returns at once with the replica Pending or Running; its phase moves to
  Succeeded/Failed (with ``exit_code``) when it exits; the platform never restarts it;
* ``delete_replica`` stops the replica (the name may show ``deleting=True`` until it is gone);
* ``list_replicas``/``list_services`` filter by the job-name label, i.e. what a job owns;
* ``watch_*`` yield changes until ``timeout`` seconds pass (an initial ADDED per existing object
  first), then return; callers re-list and re-watch;
* ``patch_job_status`` is a partial, atomic update (see below), never a replacement.

Job status: one job's status has several writers at once, so a status write is a *status patch*
(``flexjob.core.operator.status_patch``): a JSON merge patch (RFC 7386) on the camelCase wire form
of
``ElasticJobStatus``. Fields absent from the patch stay as they are; object fields (``replicas``,
``allocation``, ``replicaStatuses``, ``profilings``) merge key by key and a ``null`` key is
removed; lists and scalars replace. The platform applies it atomically against the stored
status (local: read-merge-write in one ``BEGIN IMMEDIATE`` SQLite transaction, so writers in
different processes serialise; Kubernetes: a merge patch of the ``status`` subresource, merged
by the API server), so two writers that patch different fields or keys both survive.

Who writes which status fields (``core.operator.status_patch.OWNED_FIELDS``); each sends only its
own,
and only those it changed (``core.operator.status_patch.owner_patch`` diffs before/after):

* operator (``operator.local.loop``, ``operator.reconcile_pass``): ``phase``, ``conditions``,
  ``replicaStatuses``, ``startTime``, ``completionTime``, ``restartCount``,
  ``restartedReplicas``, ``lastScalePlan``, ``message``; and the ``replicas`` keys a ScalePlan
  changes when it folds one in. It reads ``replicas`` and ``allocation`` as input and never
  writes them back;
* server (``server.jobs``, ``server.v2alpha1``): the ``replicas`` keys of a scale request and
  ``profilings`` (merged);
* Allocator (``scheduler.allocator``): ``allocation`` of the types it places and, for
  preemptible jobs, their ``replicas``;
* job master (``master.profilings_sync``): ``profilings`` its trainers measured (merged).
"""

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

from flexjob.api import ElasticJob, ScalePlan, ScalePlanStatus
from flexjob.api.errors import AlreadyExistsError, NotFoundError, UnavailableError
from flexjob.core.operator.actions import EventType
from flexjob.core.operator.status_patch import InvalidStatusPatchError, StatusPatch
from flexjob.core.replicas import Replica, ReplicaRequest, Service, ServiceRequest

__all__ = [
    "AlreadyExistsError",
    "ClusterObjectStore",
    "Event",
    "EventType",
    "InvalidStatusPatchError",
    "JobStore",
    "NotFoundError",
    "Platform",
    "Replica",
    "ReplicaRequest",
    "ReplicaRuntime",
    "Service",
    "ServiceRequest",
    "StatusPatch",
    "UnavailableError",
    "WatchEvent",
    "WatchEventType",
]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class LogOptions:
    """Which lines ``read_logs`` returns, as ``kubectl logs``'s flags: ``previous`` (of the
    replica's incarnation before this one), ``since_seconds`` (of the last seconds only),
    ``tail_lines`` (the last lines only)."""

    previous: bool = False
    since_seconds: float | None = None
    tail_lines: int | None = None


#: Every line of the replica's current incarnation.
ALL_LINES = LogOptions()


class WatchEventType(StrEnum):
    ADDED = "ADDED"
    MODIFIED = "MODIFIED"
    DELETED = "DELETED"


@dataclass(frozen=True, slots=True)
class WatchEvent(Generic[T]):
    type: WatchEventType
    object: T


@dataclass(frozen=True, slots=True)
class Event:
    """A recorded job event, oldest first in ``list_events``."""

    namespace: str
    job: str
    reason: str
    message: str
    type: EventType
    time: datetime


class JobStore(Protocol):
    """Jobs, ScalePlans and events: what users and the operator read and write."""

    # --- jobs --------------------------------------------------------------------------------
    def create_job(self, job: ElasticJob) -> ElasticJob:
        """Store a new job (status Pending when unset); fills uid/creationTimestamp."""
        ...

    def get_job(self, namespace: str, name: str) -> ElasticJob:
        """The job with its latest status; ``NotFoundError`` if there is none."""
        ...

    def list_jobs(self, namespace: str | None = None) -> list[ElasticJob]:
        """All jobs (of one namespace, or every namespace for None), oldest first."""
        ...

    def patch_job_status(self, namespace: str, name: str, patch: StatusPatch) -> ElasticJob:
        """Merge ``patch`` (a JSON merge patch on the status' wire form) into the job's status
        atomically and return the job as stored after it. ``NotFoundError`` if the job is gone;
        ``InvalidStatusPatchError`` (nothing written) for an unknown field or a bad value."""
        ...

    def delete_job(self, namespace: str, name: str) -> None:
        """Remove the job, its ScalePlans and events; its replicas are stopped (by the platform
        or by the job's operator, which sees the job gone)."""
        ...

    def watch_jobs(
        self, namespace: str | None = None, timeout: float = 10.0
    ) -> Iterator[WatchEvent[ElasticJob]]: ...

    # --- scale plans ---------------------------------------------------------------------------
    def create_scale_plan(self, plan: ScalePlan) -> ScalePlan:
        """Store a plan (status Pending when unset); ``spec.ownerJob`` names the job."""
        ...

    def list_scale_plans(self, namespace: str, job: str | None = None) -> list[ScalePlan]:
        """Plans in a namespace (of one job when given), oldest first."""
        ...

    def patch_scale_plan_status(
        self, namespace: str, name: str, status: ScalePlanStatus
    ) -> ScalePlan: ...

    def watch_scale_plans(
        self, namespace: str | None = None, timeout: float = 10.0
    ) -> Iterator[WatchEvent[ScalePlan]]: ...

    # --- events --------------------------------------------------------------------------------
    def record_event(
        self, namespace: str, job: str, reason: str, message: str, type: EventType
    ) -> None: ...

    def list_events(self, namespace: str, job: str) -> list[Event]: ...


class ReplicaRuntime(Protocol):
    """Replicas, services and their logs: what the operator creates and deletes."""

    # --- replicas and services -----------------------------------------------------------------
    def create_replica(self, request: ReplicaRequest) -> Replica: ...

    def delete_replica(self, namespace: str, name: str) -> None: ...

    def list_replicas(self, namespace: str, job: str | None = None) -> list[Replica]: ...

    def watch_replicas(
        self, namespace: str, job: str | None = None, timeout: float = 10.0
    ) -> Iterator[WatchEvent[Replica]]: ...

    def create_service(self, request: ServiceRequest) -> Service: ...

    def delete_service(self, namespace: str, name: str) -> None: ...

    def list_services(self, namespace: str, job: str | None = None) -> list[Service]: ...

    def read_logs(
        self,
        namespace: str,
        replica: str,
        follow: bool = False,
        timeout: float | None = None,
        options: LogOptions = ALL_LINES,
    ) -> Iterator[str]:
        """Lines of a replica's output (newline kept); with ``follow``, keep yielding new lines
        until the replica finishes (or ``timeout`` passes). ``NotFoundError`` if no such log.
        ``options`` as ``kubectl logs``'s (``LogOptions``); ``InvalidSpecError`` naming the
        option where the platform cannot do it."""
        ...


@runtime_checkable
class Platform(JobStore, ReplicaRuntime, Protocol):
    """A job store and the replica runtime its jobs run on."""

    #: "local" or "kubernetes".
    name: str

    def close(self) -> None: ...


@runtime_checkable
class ClusterObjectStore(Protocol):
    """A platform that keeps cluster-scoped objects beside its jobs: DI's ``AggregatorConfig``
    (``flexjob apply`` on the local platform). Objects are plain wire documents (``kind``,
    ``metadata.name``, ...), one per kind and name; ``apply`` replaces one of the same name
    and returns whether it was new."""

    def apply_cluster_object(self, body: Mapping[str, Any]) -> bool: ...

    def list_cluster_objects(self, kind: str) -> list[dict[str, Any]]: ...

    def delete_cluster_object(self, kind: str, name: str) -> None: ...


@runtime_checkable
class NetworkPolicyStore(Protocol):
    """A platform that fences pods with NetworkPolicies (Kubernetes): the operator fences each
    job's master and PS replicas (``core.operator.job_network``)."""

    def ensure_network_policy(self, namespace: str, job: str, body: Mapping[str, Any]) -> bool:
        """Create the NetworkPolicy ``body``, owned by ``job``; False when it exists already."""
        ...


@runtime_checkable
class VolumeClaimStore(Protocol):
    """A platform that keeps PersistentVolumeClaims (Kubernetes): the operator creates each
    job master's state claim (``core.operator.master_state``)."""

    def ensure_volume_claim(self, namespace: str, job: str, body: Mapping[str, Any]) -> bool:
        """Create the PersistentVolumeClaim ``body``, owned by ``job`` (deleted with it);
        False when it exists already (its volume is kept: it holds the master's state)."""
        ...


@runtime_checkable
class SecretStore(Protocol):
    """A platform that keeps Secrets for its jobs' pods (Kubernetes): the operator puts each
    job master's token there, and pods read it through ``secretKeyRef``."""

    def ensure_secret(
        self, namespace: str, job: str, name: str, data: Mapping[str, str]
    ) -> bool: ...

    def read_secret(self, namespace: str, name: str) -> Mapping[str, str] | None:
        """The data of Secret ``name``; None when there is none."""
        ...
