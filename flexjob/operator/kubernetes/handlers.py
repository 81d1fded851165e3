"""kopf handlers that feed ``core.reconcile``: ElasticJob, ScalePlan and pod events, finalizer.

Every event only queues its job (``work_queue.JobQueue``); the queue's workers run
``reconcile_pass.reconcile_job`` off the event loop. The ElasticJob delete handler is what
kopf guards with the finalizer: it removes the job's pods, services and ScalePlans, then kopf
releases the object. Admission webhooks live in ``admission``; settings and the run loop
in ``runner``.
"""

import asyncio
import logging
from typing import Any

import kopf

from flexjob.api import JobPriority
from flexjob.api.names import GROUP, LABEL_JOB_NAME, PLURAL_JOB, PLURAL_SCALE_PLAN, VERSION
from flexjob.operator.work_queue import JobQueue
from flexjob.platform.api import Platform

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


def register_handlers(
    registry: kopf.OperatorRegistry,
    platform: Platform,
    queue: JobQueue,
    resync_interval: float | None = 60.0,
) -> None:
    """Register the reconcile handlers on ``registry`` (one registry per operator instance)."""

    @kopf.on.event(GROUP, VERSION, PLURAL_JOB, registry=registry)
    def job_event(type: str | None, body: kopf.Body, **_: Any) -> None:
        key = (body.metadata.namespace or "", body.metadata.name or "")
        if type == "DELETED":
            queue.forget(key)
        elif not body.metadata.get("deletionTimestamp"):
            queue.put(key, JobPriority.rank_of(body.spec.get("priority")))

    @kopf.on.event(GROUP, VERSION, PLURAL_SCALE_PLAN, registry=registry)
    def scale_plan_event(body: kopf.Body, **_: Any) -> None:
        owner = body.spec.get("ownerJob")
        if owner:
            queue.put((body.metadata.namespace or "", owner))

    @kopf.on.event("", "v1", "pods", labels={LABEL_JOB_NAME: kopf.PRESENT}, registry=registry)
    def pod_event(body: kopf.Body, **_: Any) -> None:
        queue.put((body.metadata.namespace or "", body.metadata.labels[LABEL_JOB_NAME]))

    @kopf.on.delete(GROUP, VERSION, PLURAL_JOB, registry=registry, id="release")
    async def job_deleted(namespace: str | None, name: str, **_: Any) -> None:
        removed = await asyncio.to_thread(release_job, platform, namespace or "", name)
        logger.info("job %s/%s deleted: removed %d replicas", namespace, name, removed)

    if resync_interval:

        @kopf.timer(GROUP, VERSION, PLURAL_JOB, interval=resync_interval, registry=registry)
        def resync(namespace: str | None, name: str, **_: Any) -> None:
            """Deadlines and TTLs advance with time alone: look at every job now and then."""
            queue.put((namespace or "", name))
