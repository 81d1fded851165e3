"""The actions ``core.operator.reconcile`` asks a driver to carry out, and its result type.

Every action is a frozen dataclass naming exactly one platform call; drivers apply them in the
order given (``flexjob.operator.apply.apply_actions``). Creating something that exists and
deleting something that is gone are harmless, so a repeated action is safe. No I/O here.
"""

from dataclasses import dataclass
from enum import StrEnum
from typing import NamedTuple

from flexjob.api import ElasticJobStatus, ScalePlanPhase
from flexjob.core.replicas import ReplicaRequest, ServiceRequest


class EventType(StrEnum):
    NORMAL = "Normal"
    WARNING = "Warning"


@dataclass(frozen=True, slots=True)
class CreateService:
    request: ServiceRequest


@dataclass(frozen=True, slots=True)
class CreateReplica:
    request: ReplicaRequest


@dataclass(frozen=True, slots=True)
class _OnObject:
    """An action on one object of the job's namespace, named by ``name``."""

    namespace: str
    name: str


@dataclass(frozen=True, slots=True)
class DeleteReplica(_OnObject):
    reason: str = ""


@dataclass(frozen=True, slots=True)
class DeleteService(_OnObject):
    pass


@dataclass(frozen=True, slots=True)
class RecordEvent:
    """An event on the job (``kubectl describe``-style): reason is CamelCase, message prose."""

    namespace: str
    job: str
    reason: str
    message: str
    type: EventType = EventType.NORMAL


@dataclass(frozen=True, slots=True)
class UpdateScalePlan(_OnObject):
    """Set a ScalePlan's phase once reconcile has folded it into the job's status."""

    phase: ScalePlanPhase
    message: str = ""


@dataclass(frozen=True, slots=True)
class DeleteJob(_OnObject):
    """Remove the job itself (``ttlSecondsAfterFinished`` passed)."""


Action = (
    CreateService
    | CreateReplica
    | DeleteReplica
    | DeleteService
    | RecordEvent
    | UpdateScalePlan
    | DeleteJob
)


class ReconcileResult(NamedTuple):
    """``actions`` to apply in order, and the job's new ``status`` to write back."""

    actions: tuple[Action, ...]
    status: ElasticJobStatus
