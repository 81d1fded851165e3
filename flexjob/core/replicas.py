"""What the operator asks a platform to create, and what it observes back.

``ReplicaRequest`` / ``ServiceRequest`` are the rendered, platform-neutral descriptions that
``core.operator.reconcile`` emits; ``Replica`` / ``Service`` are what a platform reports it runs.
They live in ``core`` (not ``platform``) because ``reconcile`` consumes them and ``core`` may not
import the shells; ``flexjob.platform.contract`` re-exports them. Naming helpers are here too. No
I/O.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from flexjob.api import PodTemplateSpec, ReplicaPhase, ReplicaType

#: ``Replica.reason`` of a replica whose process the kernel's OOM killer ended over its memory
#: limit (the word Kubernetes uses in a container's termination state).
OOM_KILLED = "OOMKilled"


def replica_name(job: str, replica_type: ReplicaType, index: int) -> str:
    """The name of replica ``index`` of ``replica_type`` in ``job``: ``<job>-<type>-<index>``."""
    return f"{job}-{replica_type.value}-{index}"


def short_replica_name(replica_type: ReplicaType, index: int) -> str:
    """The replica's name within its job (``worker-0``): log file names, ``--replica`` option."""
    return f"{replica_type.value}-{index}"


def service_name(job: str, replica_type: ReplicaType, index: int) -> str:
    """The service that gives a replica a stable address; same as the replica's name."""
    return replica_name(job, replica_type, index)


@dataclass(frozen=True, slots=True)
class ReplicaRequest:
    """One replica to create, fully rendered: the platform adds nothing but the runtime.

    ``command``/``args``/``env``/``resources`` describe the main (first) container, which is
    all the local platform runs; ``template`` is the whole rendered pod template (env and labels
    merged in, restart policy ``Never``) for platforms that run pods. Not hashable (dict fields).
    """

    namespace: str
    job: str
    type: ReplicaType
    index: int
    name: str
    command: tuple[str, ...]
    args: tuple[str, ...]
    env: Mapping[str, str]
    labels: Mapping[str, str]
    #: Kubernetes-style requests of the main container, e.g. {"cpu": "1", "memory": "1Gi"}.
    resources: Mapping[str, str]
    template: PodTemplateSpec
    image: str | None = None
    working_dir: str | None = None
    #: The node this replica must run on (from ``status.allocation``); None = anywhere.
    node: str | None = None
    #: The service (same name) that must exist before this replica; None = no address needed.
    service: str | None = None

    @property
    def short_name(self) -> str:
        return short_replica_name(self.type, self.index)

    def pending(self, uid: str = "", node: str | None = None) -> "Replica":
        """The replica this request makes, as first observed: Pending, with ``uid`` (none
        before the platform answered) on ``node`` (None: not placed yet)."""
        where = (self.namespace, self.job, self.name, self.type, self.index)
        return Replica(*where, ReplicaPhase.PENDING, uid, node=node, labels=dict(self.labels))


@dataclass(frozen=True, slots=True)
class ServiceRequest:
    """A stable address for one replica: ``name`` resolves to the replica ``replica`` on
    ``port``. The platform picks the host (and, locally, may pick a free port instead)."""

    namespace: str
    job: str
    name: str
    replica: str
    type: ReplicaType
    index: int
    port: int
    labels: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Service:
    """An observed service: ``address`` is ``host:port``, what clients connect to."""

    namespace: str
    job: str
    name: str
    replica: str
    address: str

    @property
    def port(self) -> int:
        return int(self.address.rsplit(":", 1)[1])


@dataclass(frozen=True, slots=True)
class Replica:
    """One observed replica (a pod or a process) of a job.

    ``uid`` differs between two incarnations of the same name; ``deleting`` is True while a
    delete is in progress (the name is still taken). ``exit_code`` is set once it finished;
    ``message`` then holds why, when the platform knows: the last lines of a failed replica's
    output (locally) or its container's termination message (Kubernetes); ``reason`` the one
    word for it when the platform has one (``OOM_KILLED``; Kubernetes' ``Error``, ...).
    """

    namespace: str
    job: str
    name: str
    type: ReplicaType
    index: int
    phase: ReplicaPhase
    uid: str = ""
    exit_code: int | None = None
    address: str | None = None
    node: str | None = None
    created: datetime | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    deleting: bool = False
    message: str = ""
    reason: str = ""

    @property
    def short_name(self) -> str:
        return short_replica_name(self.type, self.index)

    @property
    def active(self) -> bool:
        """Pending or running: it still holds resources and may still finish."""
        return self.phase in (ReplicaPhase.PENDING, ReplicaPhase.RUNNING, ReplicaPhase.UNKNOWN)

    @property
    def decided_on(self) -> object:
        """What ``core.operator.reconcile`` reads of this replica: two states with equal values
        lead to the same decision (a new pod is its expectation's equal:
        ``core.operator.expectations``). A
        failed replica's incarnation, time and why it failed count too (restarts and their
        messages go by them)."""
        state = (self.type, self.index, self.phase, self.deleting, self.node, self.exit_code)
        if self.phase is ReplicaPhase.FAILED:
            return (*state, self.uid, self.created, self.message, self.reason)
        return state
