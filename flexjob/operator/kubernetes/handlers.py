"""kopf handlers that feed ``core.operator.reconcile``: ElasticJob, ScalePlan and service events,
the finalizer; and the pod handler, which ``pod_watch`` calls (pods are watched without kopf).

Every event updates the queue's ``WatchCache`` and queues its job (``work_queue.JobQueue``;
a service only when deleted; a job that brings nothing new, ``WatchCache.nothing_new``, such
as the operator's own status patch coming back, not at all); pod events and job events that
leave the spec's generation as it was may wait for more of the job's events (``batched``).
The queue's workers run
``reconcile_pass.reconcile_job`` off the event loop, reading the cache. The handlers are
coroutines: kopf runs a plain function on a thread of its executor, and the queue (an
``asyncio`` one) must be fed on the loop's thread (a put from another thread may not wake a
waiting worker); one thread hop per event also cost more than the put itself. The ElasticJob
delete handler is what kopf guards with the finalizer: it removes the job's pods, services and
ScalePlans, then kopf releases the object. Admission webhooks live in ``admission``; settings
and the run loop in ``runner``.
"""

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import kopf

from flexjob.api import JobPriority, ReplicaPhase
from flexjob.api.names import (
    JOB_RESOURCE,
    KIND_JOB,
    LABEL_JOB_NAME,
    SCALE_PLAN_RESOURCE,
)
from flexjob.operator.work_queue import JobQueue
from flexjob.platform.contract import Platform, Replica
from flexjob.platform.kubernetes.bodies import (
    job_from_body,
    plan_from_body,
    replica_from_pod,
    service_from_body,
)

#: The kinds with change-detecting handlers (``on.delete``, the resync timer): kopf keeps its
#: diff base only for these (``runner.DiffBaseOfChangeHandledKinds``).
CHANGE_HANDLED_KINDS = frozenset({KIND_JOB})

#: The job's own entry in what a pass saw (``JobQueue.handled``); pods go by their names.
JOB_SEEN = "elasticjob"


def seen_by(job_version: str | None, replicas: list[Replica]) -> dict[str, object]:
    """What a pass saw, as ``JobQueue.handled`` takes it: the job's version it left behind
    and what it read of every replica it counted (``Replica.decided_on``, as the pod handler
    gives a pod's)."""
    return {JOB_SEEN: job_version, **{r.name: r.decided_on for r in replicas}}


logger = logging.getLogger(__name__)


def release_job(platform: Platform, namespace: str, name: str) -> int:
    """Remove what a deleted job owns (pods, services, then its ScalePlans and events through
    ``delete_job``, harmless on a job already being deleted); returns the pod count."""
    replicas = platform.list_replicas(namespace, name)
    for replica in replicas:
        platform.delete_replica(namespace, replica.name)
    for service in platform.list_services(namespace, name):
        platform.delete_service(namespace, service.name)
    platform.delete_job(namespace, name)
    return len(replicas)


def pod_handler(queue: JobQueue) -> Callable[[str | None, Mapping[str, Any]], None]:
    """What a pod's event does (``pod_watch.PodWatch`` calls it): update the watch cache and
    queue the pod's job, unless the job's last pass saw the pod in this state; batched
    (``JobQueue.put``) unless the pod failed or is gone."""
    cache = queue.cache

    def pod_event(type: str | None, body: Mapping[str, Any]) -> None:
        meta = body.get("metadata") or {}
        key = (meta.get("namespace") or "", (meta.get("labels") or {})[LABEL_JOB_NAME])
        try:
            replica = replica_from_pod(body)
        except (KeyError, ValueError):  # labels the platform cannot read: let a pass say so
            replica = None
        if replica is not None:
            cache.pod_seen(key, replica, meta.get("resourceVersion"), deleted=type == "DELETED")
        if type == "DELETED" or replica is None:  # a deleted pod's last state is not an echo
            queue.put(key)
        else:  # a failure is acted on at once; other news may wait for the job's next ones
            batched = replica.phase is not ReplicaPhase.FAILED
            queue.put(key, seen=(meta.get("name") or "", replica.decided_on), batched=batched)

    return pod_event


def job_handler(queue: JobQueue) -> Callable[..., Awaitable[None]]:
    """What an ElasticJob's event does: update the watch cache and queue the job (at once
    when it is new or its spec changed; batched when only its status or metadata did),
    unless the event brings nothing new (``WatchCache.nothing_new``: our own status patch
    come back) or the job is being deleted."""
    cache = queue.cache

    async def job_event(type: str | None, body: kopf.Body, **_: Any) -> None:
        key = (body.metadata.namespace or "", body.metadata.name or "")
        if type == "DELETED":
            queue.forget(key)
            return
        version = body.metadata.get("resourceVersion")
        before = cache.generation(key)
        try:
            job = job_from_body(body)
        except ValueError:  # a job the API cannot read: let a pass fetch it and say so
            cache.forget(key)
        else:
            if cache.nothing_new(job):  # e.g. our own status patch come back
                cache.job_seen(job)
                return
            cache.job_seen(job)
        if not body.metadata.get("deletionTimestamp"):
            rank = JobPriority.rank_of(body.spec.get("priority"))
            # the same spec (its status or metadata changed): may wait for the pod events
            same_spec = before is not None and before == body.metadata.get("generation")
            queue.put(key, rank, (JOB_SEEN, version), batched=same_spec)

    return job_event


def register_handlers(
    registry: kopf.OperatorRegistry,
    platform: Platform,
    queue: JobQueue,
    resync_interval: float | None = 60.0,
) -> None:
    """Register the reconcile handlers on ``registry`` (one registry per operator instance)."""

    cache = queue.cache

    kopf.on.event(*JOB_RESOURCE, registry=registry)(job_handler(queue))

    @kopf.on.event(*SCALE_PLAN_RESOURCE, registry=registry)
    async def scale_plan_event(type: str | None, body: kopf.Body, **_: Any) -> None:
        owner = body.spec.get("ownerJob")
        if owner:
            key = (body.metadata.namespace or "", owner)
            with contextlib.suppress(ValueError):
                cache.plan_seen(key, plan_from_body(body), deleted=type == "DELETED")
            queue.put(key)

    @kopf.on.event("", "v1", "services", labels={LABEL_JOB_NAME: kopf.PRESENT}, registry=registry)
    async def service_event(type: str | None, body: kopf.Body, **_: Any) -> None:
        key = (body.metadata.namespace or "", body.metadata.labels[LABEL_JOB_NAME])
        with contextlib.suppress(KeyError, ValueError, IndexError):
            cache.service_seen(key, service_from_body(body), deleted=type == "DELETED")
        if type == "DELETED":  # the pass that created it queued the next one itself
            queue.put(key)

    @kopf.on.delete(*JOB_RESOURCE, registry=registry, id="release")
    async def job_deleted(namespace: str | None, name: str, **_: Any) -> None:
        await asyncio.to_thread(queue.halt, (namespace or "", name))  # no create after the list
        removed = await asyncio.to_thread(release_job, platform, namespace or "", name)
        logger.info("job %s/%s deleted: removed %d replicas", namespace, name, removed)

    if resync_interval:

        @kopf.timer(*JOB_RESOURCE, interval=resync_interval, registry=registry)
        async def resync(namespace: str | None, name: str, **_: Any) -> None:
            """Deadlines and TTLs advance with time alone: look at every job now and then."""
            queue.put((namespace or "", name))
