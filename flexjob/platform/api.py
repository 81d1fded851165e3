"""The ``Platform`` protocol: where jobs and their replicas live.

One interface, two implementations: ``flexjob.platform.local`` (processes on this machine, state
in SQLite) and ``flexjob.platform.kubernetes`` (custom resources, pods, services). A platform is
a job store (jobs, ScalePlans, events) plus a replica runtime (replicas, services, logs). It
decides nothing: ``core.reconcile`` decides, drivers in ``flexjob.operator`` call the platform.

Contract (checked by ``tests/platform/contract.py`` for every implementation):

* all calls are synchronous and thread-safe; objects returned are fresh copies;
* ``create_*`` raises ``AlreadyExistsError`` when the name is taken; ``get_job`` raises
  ``NotFoundError``; ``delete_*`` of something gone is a no-op;
* ``create_replica`` returns at once with the replica Pending or Running; its phase moves to
  Succeeded/Failed (with ``exit_code``) when it exits; the platform never restarts it;
* ``delete_replica`` stops the replica (the name may show ``deleting=True`` until it is gone);
* ``list_replicas``/``list_services`` filter by the job-name label, i.e. what a job owns;
* ``watch_*`` yield changes until ``timeout`` seconds pass (an initial ADDED per existing object
  first), then return; callers re-list and re-watch.
"""

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Generic, Protocol, TypeVar, runtime_checkable

from flexjob.api import ElasticJob, ElasticJobStatus, ScalePlan, ScalePlanStatus
from flexjob.core.actions import EventType
from flexjob.core.replicas import Replica, ReplicaRequest, Service, ServiceRequest

__all__ = [
    "AlreadyExistsError",
    "Event",
    "EventType",
    "NotFoundError",
    "Platform",
    "PlatformError",
    "Replica",
    "ReplicaRequest",
    "Service",
    "ServiceRequest",
    "WatchEvent",
    "WatchEventType",
]

T = TypeVar("T")


class PlatformError(Exception):
    """A platform call failed; the message names the object."""


class NotFoundError(PlatformError):
    pass


class AlreadyExistsError(PlatformError):
    pass


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


@runtime_checkable
class Platform(Protocol):
    """Jobs, ScalePlans and events (the store) plus replicas and services (the runtime)."""

    #: "local" or "kubernetes".
    name: str

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

    def patch_job_status(self, namespace: str, name: str, status: ElasticJobStatus) -> ElasticJob:
        """Replace the job's status; ``NotFoundError`` if the job is gone."""
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
        self, namespace: str, replica: str, follow: bool = False, timeout: float | None = None
    ) -> Iterator[str]:
        """Lines of a replica's output (newline kept); with ``follow``, keep yielding new lines
        until the replica finishes (or ``timeout`` passes). ``NotFoundError`` if no such log."""
        ...

    def close(self) -> None: ...
