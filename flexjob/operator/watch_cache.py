"""What the operator's watches saw, so that a reconcile pass reads memory instead of the API.

An informer-style cache of the jobs, their pods (as ``Replica``), services and ScalePlans, fed
by the kopf event handlers (``kubernetes.handlers``) on the event loop and read by passes on
worker threads (``reconcile_pass.reconcile_job``). A job's first pass lists its objects from the
API (``prime``: events that came before the operator's watches had caught up would otherwise be
missing), or, once the pod watch has listed every pod (``watching``), takes what the watches
brought; from then on the watch keeps its entries current and a pass sends no reads. Every
``relist_after`` seconds a job's pass lists again, and what the cache learned before that list
began but the list lacks is dropped: a watch that broke and resumed never reports what was
deleted meanwhile (Kubernetes' informers re-list for the same reason).

Writes a pass makes go in at once (``created``, ``job_written``), like Kubernetes controllers'
expectations: a pod a pass created is seen by the next pass even when its watch event has not
come yet, so it is never created twice. An object is replaced only by a newer state: a job or
ScalePlan by a higher resourceVersion (the API server's revisions grow across all objects); a
pod by another incarnation (uid) or, for the same uid, a higher resourceVersion (a create's
answer carries none here); a deleted incarnation's uid is remembered so that a late event or a
list that still held it cannot bring it back. Not a general client cache: only what a pass reads.

A status patch a pass sent and did not wait for (``status_sent``) is applied to the job ``read``
returns until it is answered (``status_answered``), so that the next pass decides on the status
the last one wrote (and its watch event, once it comes, is ``nothing_new``). Creates a pass
dispatched and did not wait for (``create_dispatch``) are
expected (``expect``; the rule is ``core.operator.expectations``): until the create's answer
(``created``) or the end of the dispatch without it (``settle``), ``read`` counts it as a
Pending replica while no pod of its name is in the cache.
"""

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from flexjob.api import ElasticJob, ScalePlan, ScalePlanPhase
from flexjob.core.operator.expectations import (
    EXPECTATION_TTL,
    Expected,
    answered,
    counted,
    expect,
    settled,
)
from flexjob.core.operator.status_patch import StatusPatch, apply_status_patch
from flexjob.platform.contract import Replica, ReplicaRequest, Service

JobKey = tuple[str, str]
_OLDEST = datetime.min.replace(tzinfo=UTC)


def version_number(version: str | None) -> int:
    """A resourceVersion as a number to compare (etcd's revisions); 0 when unknown."""
    try:
        return int(version or 0)
    except ValueError:
        return 0


@dataclass
class _Entry:
    """One job's objects by name (pods with their version), when each was last stored, and
    when the job was last listed."""

    primed_at: float | None = None
    pods: dict[str, tuple[Replica, int]] = field(default_factory=dict)
    deleted_uids: set[str] = field(default_factory=set)
    services: dict[str, Service] = field(default_factory=dict)
    plans: dict[str, tuple[ScalePlan, int]] = field(default_factory=dict)
    stored_at: dict[tuple[str, str], float] = field(default_factory=dict)
    expected: dict[str, Expected] = field(default_factory=dict)


class WatchCache:
    """Jobs, pods, services and ScalePlans by job, as the watches last saw them."""

    def __init__(
        self,
        relist_after: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
        expectation_ttl: float = EXPECTATION_TTL,
    ) -> None:
        self._lock = threading.Lock()
        self._jobs: dict[JobKey, tuple[ElasticJob, int]] = {}
        self._entries: dict[JobKey, _Entry] = {}
        self._relist_after = relist_after
        self._ttl = expectation_ttl
        self._watched = False
        self._forgotten: set[JobKey] = set()  # listed from the API on their next pass
        # Status patches sent and not answered yet, by job, in the order they were sent.
        self._writing: dict[JobKey, list[tuple[int, StatusPatch]]] = {}
        self.clock = clock

    def _entry(self, key: JobKey) -> _Entry:
        return self._entries.setdefault(key, _Entry())

    def watching(self) -> None:
        """The pod watch has listed every pod and watches on: from now on a job the cache holds
        no list of yet is read from the watches too (its pods from the pod watch's list and
        events, its services and ScalePlans as kopf's watches bring them), and listed from the
        API ``relist_after`` seconds later, like every job."""
        with self._lock:
            self._watched = True

    # --- fed by the watches (event loop) ---------------------------------------------------
    def job_seen(self, job: ElasticJob) -> None:
        """A job's state from its watch or from a write's answer (kept when newer)."""
        key = (job.metadata.namespace, job.metadata.name)
        version = version_number(job.metadata.resource_version)
        with self._lock:
            known = self._jobs.get(key)
            if known is None or version >= known[1]:
                self._jobs[key] = (job, version)

    job_written = job_seen

    def generation(self, key: JobKey) -> int | None:
        """The ``metadata.generation`` of the job as last seen (None: not seen, or none)."""
        with self._lock:
            known = self._jobs.get(key)
            return known[0].metadata.generation if known is not None else None

    def nothing_new(self, job: ElasticJob) -> bool:
        """Whether ``job`` (from a watch event) holds nothing a pass would read differently
        from the job the cache gives passes now (the status patches on their way applied):
        the same spec, status and metadata but its version. Such as a status patch of ours
        coming back; every state the cache gives was brought by an event that queued a pass,
        or is what a pass wrote."""
        key = (job.metadata.namespace, job.metadata.name)
        with self._lock:
            known = self._jobs.get(key)
            writing = [patch for _, patch in self._writing.get(key, ())]
        if known is None:
            return False
        status = known[0].status
        for patch in writing:
            status = apply_status_patch(status, patch)
        return status == job.status and known[0].spec == job.spec and _meta(known[0]) == _meta(job)

    def forget(self, key: JobKey) -> None:
        """The job is gone (or unreadable): drop it and everything kept for it; a pass of that
        name lists from the API again."""
        with self._lock:
            self._jobs.pop(key, None)
            self._entries.pop(key, None)
            self._writing.pop(key, None)
            self._forgotten.add(key)

    def pod_seen(self, key: JobKey, replica: Replica, version: str | None, deleted: bool) -> None:
        with self._lock:
            self._pod(self._entry(key), replica, version_number(version), deleted, self.clock())

    @staticmethod
    def _pod(entry: _Entry, replica: Replica, version: int, deleted: bool, now: float) -> None:
        if replica.uid in entry.deleted_uids:
            return  # a late state of an incarnation already gone
        known = entry.pods.get(replica.name)
        if deleted:
            entry.deleted_uids.add(replica.uid)
            if known is not None and known[0].uid == replica.uid:
                del entry.pods[replica.name]
        elif known is None or known[0].uid != replica.uid or version >= known[1]:
            entry.pods[replica.name] = (replica, version)
            entry.stored_at["pod", replica.name] = now

    def service_seen(self, key: JobKey, service: Service, deleted: bool) -> None:
        with self._lock:
            entry = self._entry(key)
            if deleted:
                entry.services.pop(service.name, None)
            else:
                entry.services[service.name] = service
                entry.stored_at["service", service.name] = self.clock()

    def plan_seen(self, key: JobKey, plan: ScalePlan, deleted: bool) -> None:
        version = version_number(plan.metadata.resource_version)
        with self._lock:
            entry = self._entry(key)
            known = entry.plans.get(plan.metadata.name)
            if deleted:
                entry.plans.pop(plan.metadata.name, None)
            elif known is None or version >= known[1]:
                entry.plans[plan.metadata.name] = (plan, version)
                entry.stored_at["plan", plan.metadata.name] = self.clock()

    # --- fed by passes (worker threads) ----------------------------------------------------
    def status_sent(self, key: JobKey, patch: StatusPatch, write: int) -> None:
        """A pass sent the status patch ``write`` of the job: ``read`` applies it to the job
        until it is answered, so the next pass decides on the status this one wrote."""
        with self._lock:
            self._writing.setdefault(key, []).append((write, patch))

    def status_answered(self, key: JobKey, write: int, job: ElasticJob | None) -> None:
        """The patch ``write`` was answered: ``job`` as stored after it (None: refused or the
        job is gone; the next list or watch event says what is stored)."""
        if job is not None:
            self.job_seen(job)
        with self._lock:
            left = [(w, p) for w, p in self._writing.get(key, []) if w != write]
            if left:
                self._writing[key] = left
            else:
                self._writing.pop(key, None)

    def expect(self, key: JobKey, requests: Iterable[ReplicaRequest], run: int) -> None:
        """Creates dispatch ``run`` is about to send: counted until settled or observed."""
        with self._lock:
            entry, now = self._entry(key), self.clock()
            for request in requests:
                entry.expected[request.name] = expect(request, now, run)

    def settle(self, key: JobKey, names: Iterable[str], run: int) -> None:
        """Dispatch ``run`` ended: what it did not create is no longer expected."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                entry.expected = settled(entry.expected, list(names), run)

    def created(self, key: JobKey, replica: Replica, run: int | None = None) -> None:
        """A pod a pass created (the create's answer; ``run``: the dispatch that sent it, whose
        expectation it ends): the next pass sees it."""
        with self._lock:
            entry = self._entry(key)
            if run is not None:
                entry.expected = answered(entry.expected, replica.name, run)
            known = entry.pods.get(replica.name)
            if replica.uid not in entry.deleted_uids and (
                known is None or known[0].uid != replica.uid
            ):
                entry.pods[replica.name] = (replica, 0)
                entry.stored_at["pod", replica.name] = self.clock()

    def prime(
        self,
        key: JobKey,
        replicas: Iterable[Replica],
        services: Iterable[Service],
        plans: Iterable[ScalePlan],
        listed_at: float,
    ) -> None:
        """Fold in what a pass listed from the API, the list begun at ``listed_at``
        (``clock``): from now on (for ``relist_after``) the job is read from here."""
        with self._lock:
            entry = self._entry(key)
            listed: set[tuple[str, str]] = set()
            for replica in replicas:
                listed.add(("pod", replica.name))
                known = entry.pods.get(replica.name)
                if known is None or known[0].uid != replica.uid:
                    self._pod(entry, replica, 0, False, listed_at)
            for service in services:
                listed.add(("service", service.name))
                if service.name not in entry.services:
                    entry.services[service.name] = service
                    entry.stored_at["service", service.name] = listed_at
            for plan in plans:
                listed.add(("plan", plan.metadata.name))
                if plan.metadata.name not in entry.plans:
                    entry.plans[plan.metadata.name] = (plan, 0)
                    entry.stored_at["plan", plan.metadata.name] = listed_at
            gone = [k for k, at in entry.stored_at.items() if k not in listed and at < listed_at]
            for what, name in gone:  # deleted while no watch was there to say so
                del entry.stored_at[what, name]
                if what == "pod":
                    entry.pods.pop(name, None)
                elif what == "service":
                    entry.services.pop(name, None)
                else:
                    entry.plans.pop(name, None)
            entry.primed_at = listed_at
            self._forgotten.discard(key)

    # --- read by passes --------------------------------------------------------------------
    def read(
        self, key: JobKey
    ) -> tuple[ElasticJob | None, list[Replica], list[Service], ScalePlan | None] | None:
        """The job (None when not seen yet), its pods oldest first then the replicas still
        expected, services, and pending ScalePlan; None when the job was never primed (and the
        cache is not ``watching`` yet) or its last list is too old."""
        with self._lock:
            entry = self._entries.get(key)
            now = self.clock()
            unlisted = entry is None or entry.primed_at is None
            if unlisted and self._watched and key not in self._forgotten:
                entry = self._entry(key)
                entry.primed_at = now
            if entry is None or entry.primed_at is None:
                return None
            if now - entry.primed_at > self._relist_after:
                return None
            known = self._jobs.get(key)
            writing = list(self._writing.get(key, ()))
            observed = sorted(
                (r for r, _ in entry.pods.values()), key=lambda r: (r.created or _OLDEST, r.name)
            )
            replicas, entry.expected = counted(observed, entry.expected, now, self._ttl)
            services = list(entry.services.values())
            plans = [p for p, _ in entry.plans.values()]
        plans.sort(key=lambda p: (p.metadata.creation_timestamp or "", p.metadata.name))
        services.sort(key=lambda s: s.name)
        job = known[0] if known else None
        if job is not None and writing:  # merge patches: in order, each idempotent
            status = job.status
            for _, patch in writing:
                status = apply_status_patch(status, patch)
            job = job.model_copy(update={"status": status})
        return job, replicas, services, first_pending(plans)


def _meta(job: ElasticJob) -> dict[str, object]:
    """The job's metadata but what changes with every write (version, managed fields)."""
    return job.metadata.model_dump(exclude={"resource_version", "managedFields"})


def first_pending(plans: Iterable[ScalePlan]) -> ScalePlan | None:
    """The first ScalePlan (oldest first) that is not Succeeded or Failed yet."""
    for plan in plans:
        if plan.status is None or plan.status.phase not in (
            ScalePlanPhase.SUCCEEDED,
            ScalePlanPhase.FAILED,
        ):
            return plan
    return None
