"""``apply_actions``: carry out what ``core.reconcile`` decided, in order, on a ``Platform``.

Each action is one platform call. Creating what exists and deleting what is gone are not
errors (a repeated round is harmless). Decides nothing; see ``flexjob.core.reconcile``.
"""

import contextlib
import logging
from collections.abc import Sequence
from datetime import UTC, datetime

from flexjob.api import ScalePlanPhase, ScalePlanStatus
from flexjob.core.actions import (
    Action,
    CreateReplica,
    CreateService,
    DeleteJob,
    DeleteReplica,
    DeleteService,
    RecordEvent,
    UpdateScalePlan,
)
from flexjob.platform.api import AlreadyExistsError, NotFoundError, Platform

logger = logging.getLogger(__name__)


def apply_action(platform: Platform, action: Action) -> None:
    """One action → one platform call."""
    match action:
        case CreateService(request=request):
            with contextlib.suppress(AlreadyExistsError):
                platform.create_service(request)
        case CreateReplica(request=request):
            with contextlib.suppress(AlreadyExistsError):
                platform.create_replica(request)
        case DeleteReplica(namespace=namespace, name=name):
            platform.delete_replica(namespace, name)
        case DeleteService(namespace=namespace, name=name):
            platform.delete_service(namespace, name)
        case RecordEvent(namespace=ns, job=job, reason=reason, message=message, type=type_):
            platform.record_event(ns, job, reason, message, type_)
        case UpdateScalePlan(namespace=namespace, name=name, phase=phase, message=message):
            finished = phase in (ScalePlanPhase.SUCCEEDED, ScalePlanPhase.FAILED)
            stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if finished else None
            status = ScalePlanStatus(phase=phase, message=message, finish_time=stamp)
            with contextlib.suppress(NotFoundError):
                platform.patch_scale_plan_status(namespace, name, status)
        case DeleteJob(namespace=namespace, name=name):
            with contextlib.suppress(NotFoundError):
                platform.delete_job(namespace, name)


def apply_actions(platform: Platform, actions: Sequence[Action]) -> None:
    """Apply ``actions`` in the order given."""
    for action in actions:
        logger.debug("applying %s", action)
        apply_action(platform, action)
