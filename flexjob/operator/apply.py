"""Carry out ``core.operator.reconcile``'s actions on a Platform, in order.

Shared by every driver (the local loop, the kopf handlers). Creating what exists and deleting
what is gone are not errors: reconcile may repeat an action before it sees its effect.
"""

import logging
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from flexjob.api import ScalePlanStatus
from flexjob.core.operator.actions import (
    Action,
    CreateReplica,
    CreateService,
    DeleteJob,
    DeleteReplica,
    DeleteService,
    RecordEvent,
    UpdateScalePlan,
)
from flexjob.core.operator.phases import timestamp
from flexjob.platform.contract import AlreadyExistsError, NotFoundError, Platform, Replica, Service

log = logging.getLogger(__name__)

#: Called with each action that went through and what it returned.
Done = Callable[[Action, object], None]


def _create_replica(platform: Platform, action: CreateReplica) -> Replica:
    return platform.create_replica(action.request)


def _create_service(platform: Platform, action: CreateService) -> Service:
    return platform.create_service(action.request)


def _delete_replica(platform: Platform, action: DeleteReplica) -> None:
    platform.delete_replica(action.namespace, action.name)


def _delete_service(platform: Platform, action: DeleteService) -> None:
    platform.delete_service(action.namespace, action.name)


def _record_event(platform: Platform, action: RecordEvent) -> None:
    platform.record_event(action.namespace, action.job, action.reason, action.message, action.type)


def _update_plan(platform: Platform, action: UpdateScalePlan) -> None:
    status = ScalePlanStatus(
        phase=action.phase, finish_time=timestamp(datetime.now(UTC)), message=action.message
    )
    platform.patch_scale_plan_status(action.namespace, action.name, status)


def _delete_job(platform: Platform, action: DeleteJob) -> None:
    platform.delete_job(action.namespace, action.name)


_HANDLERS: dict[type[Any], Callable[[Platform, Any], object]] = {
    CreateReplica: _create_replica,
    CreateService: _create_service,
    DeleteReplica: _delete_replica,
    DeleteService: _delete_service,
    RecordEvent: _record_event,
    UpdateScalePlan: _update_plan,
    DeleteJob: _delete_job,
}


def apply_actions(platform: Platform, actions: Sequence[Action], done: Done | None = None) -> None:
    """Apply ``actions`` in order; already-exists and not-found are logged and skipped.
    ``done(action, result)`` after each that went through (a create's result: the replica or
    service)."""
    for action in actions:
        try:
            result = _HANDLERS[type(action)](platform, action)
            if done is not None:
                done(action, result)
        except AlreadyExistsError as exc:
            log.debug("skipped %s: %s", type(action).__name__, exc)
        except NotFoundError as exc:
            log.debug("skipped %s: %s", type(action).__name__, exc)
