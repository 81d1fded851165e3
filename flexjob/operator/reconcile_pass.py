"""One reconcile pass for one job: observe on the platform, decide with ``core.reconcile``, act.

Shared by the drivers (kopf handlers, the benchmark). A job that is gone or being deleted is
left alone (its finalizer handler releases it). Not a loop and not a scheduler: callers decide
when to run a pass.
"""

import logging
from datetime import datetime

from flexjob.api import ElasticJob
from flexjob.core.actions import ReconcileResult
from flexjob.core.reconcile import reconcile
from flexjob.operator.apply import apply_actions
from flexjob.operator.local_loop import pending_plan
from flexjob.platform.api import NotFoundError, Platform

logger = logging.getLogger(__name__)


def is_deleting(job: ElasticJob) -> bool:
    extra = job.metadata.model_extra or {}
    return bool(extra.get("deletionTimestamp") or extra.get("deletion_timestamp"))


def reconcile_job(
    platform: Platform, namespace: str, name: str, now: datetime
) -> ReconcileResult | None:
    """Run one pass; returns what was decided, or None when there was no job to reconcile."""
    try:
        job = platform.get_job(namespace, name)
    except NotFoundError:
        return None
    if is_deleting(job):
        return None
    replicas = platform.list_replicas(namespace, name)
    services = platform.list_services(namespace, name)
    result = reconcile(job, replicas, now, services=services, plan=pending_plan(platform, job))
    apply_actions(platform, result.actions)
    if result.status != job.status:
        try:
            platform.patch_job_status(namespace, name, result.status)
        except NotFoundError:
            logger.info("job %s/%s disappeared while reconciling", namespace, name)
    return result
