"""The closed sets of the job model: replica types, policies, modes and phases.

Each is a ``str`` enum whose values are exactly what appears in YAML. Transitions between
phases are decided in ``flexjob.core.operator.reconcile``, not here.
"""

from enum import StrEnum


class ReplicaType(StrEnum):
    """A role in a job. The DI-engine roles sit beside the TensorFlow/PyTorch ones; what each
    role does is in ``api.roles.ROLE_TRAITS`` (a new type adds a row there)."""

    MASTER = "master"
    WORKER = "worker"
    PS = "ps"
    CHIEF = "chief"
    EVALUATOR = "evaluator"
    LEARNER = "learner"
    COLLECTOR = "collector"
    COORDINATOR = "coordinator"
    AGGREGATOR = "aggregator"


class RestartPolicy(StrEnum):
    NEVER = "Never"
    ON_FAILURE = "OnFailure"
    ALWAYS = "Always"
    EXIT_CODE = "ExitCode"


class CleanPodPolicy(StrEnum):
    """What is deleted when a job finishes: replicas still running, all, or none."""

    RUNNING = "Running"
    ALL = "All"
    NONE = "None"


class DistributionStrategy(StrEnum):
    ALLREDUCE = "AllreduceStrategy"
    PARAMETER_SERVER = "ParameterServerStrategy"
    CUSTOM = "Custom"


# ``spec.priority``; ``rank`` is its number wherever an order is needed (the Allocator's
# ``JobInfo.priority``, the operator's work queue): higher goes first. (No docstring: it would
# become the CRD schema's description.)
class JobPriority(StrEnum):
    LOW = "low"
    NORMAL = "normal"
    HIGH = "high"

    @property
    def rank(self) -> int:
        return _PRIORITY_RANK[self]

    @staticmethod
    def rank_of(priority: "JobPriority | str | None") -> int:
        """The rank of a stored priority (None or unknown text: normal's)."""
        try:
            return JobPriority(priority or JobPriority.NORMAL).rank
        except ValueError:
            return JobPriority.NORMAL.rank


_PRIORITY_RANK = {JobPriority.LOW: -1, JobPriority.NORMAL: 0, JobPriority.HIGH: 1}


class StragglerPolicy(StrEnum):
    """What a job's master does with a straggler node (``core.training.stragglers``;
    ``spec.stragglers.policy``, ``flexjob run --stragglers``)."""

    OFF = "off"  # not watched
    REPORT = "report"  # an event, a metric, a line in the job's timeline
    EXCLUDE = "exclude"  # reported, and kept out of the next world and every later one


class OptimizeMode(StrEnum):
    MANUAL = "manual"
    SINGLE_JOB = "single-job"
    CLUSTER = "cluster"


class JobPhase(StrEnum):
    """Job phases (DI Orchestrator v2).

    Pending → Starting → Running → Succeeded | Failed; Running ⇄ Restarting (a replica failed
    with restarts left) and Running ⇄ Rescheduling (replica count or allocation changed).
    """

    PENDING = "Pending"
    STARTING = "Starting"
    RUNNING = "Running"
    RESTARTING = "Restarting"
    RESCHEDULING = "Rescheduling"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    UNKNOWN = "Unknown"

    @property
    def finished(self) -> bool:
        return self in (JobPhase.SUCCEEDED, JobPhase.FAILED)


class ReplicaPhase(StrEnum):
    """The observed phase of one replica (a pod or a process)."""

    PENDING = "Pending"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    UNKNOWN = "Unknown"


class ScalePlanPhase(StrEnum):
    PENDING = "Pending"
    EXECUTING = "Executing"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"


class RpcServer(StrEnum):
    """The job master's gRPC server (``spec.masterSettings.rpc.server``): a thread pool
    (``rpc.server``) or one event loop (``rpc.aio_server``)."""

    THREADS = "threads"
    AIO = "aio"
