"""The errors of flexjob: one ``FlexjobError`` base and the few kinds a caller acts on.

For: every layer. A caller decides by kind, not by who raised it: ``NotFoundError`` (the
named object does not exist: 404, gRPC NOT_FOUND), ``ConflictError`` (it exists, or its state
forbids the request: 409; ``AlreadyExistsError`` when a create finds the name taken),
``InvalidSpecError`` (a spec or request names a wrong value, the message names the field:
400, gRPC INVALID_ARGUMENT; also a ``ValueError``) and ``UnavailableError`` (a platform, the
master or the brain could not be reached or failed; trying again later may work: 503).
``PsSetChangedError`` (a ``ConflictError``): a PS refused a call while its PS set changes.

Every error a flexjob module defines is a ``FlexjobError`` (``tests/test_errors.py``): a kind
above, or one of the families below, one per subsystem, so a caller can also catch what one
subsystem raises (a family and a kind combine: ``MasterLockedError`` is a ``MasterError`` and
a ``ConflictError``). Errors a caller of the standard library catches keep that base as well
(``RendezvousTimeout`` is a ``TimeoutError``, ``CollectiveError`` a ``RuntimeError``). A stop
signal (``platform.stop_signals.StopRequested``, a ``KeyboardInterrupt``) is not an error.
Not for: which kind a subsystem raises (its module says).
"""


class FlexjobError(Exception):
    """Something flexjob could not do; the message names the object or field at fault."""


class NotFoundError(FlexjobError):
    """The named object (job, replica, ScalePlan, dataset, log) does not exist."""


class ConflictError(FlexjobError):
    """The object exists, or its state forbids the request (a finished or fixed-size job)."""


class AlreadyExistsError(ConflictError):
    """A create found the name taken (or the object changed meanwhile)."""


class InvalidSpecError(FlexjobError, ValueError):
    """A spec, a request or a setting names a wrong value; the message names the field."""


class UnavailableError(FlexjobError):
    """A platform, the master or the brain could not be reached or failed; may pass later."""


class PsSetChangedError(ConflictError):
    """A PS refused a data call because its PS set is changing or changed (gRPC
    FAILED_PRECONDITION, message starting with ``PS_SET_CHANGED``): the caller re-resolves
    the set from the job master and sends the call again (``trainer.ps_set``)."""


PS_SET_CHANGED = "ps set changed"


class NodeFencedError(ConflictError):
    """The master refused a call of a node it declared dead (gRPC FAILED_PRECONDITION, message
    starting with ``NODE_FENCED``; ``core.training.fencing``): the node's agent stops its
    workers and joins again as a new member."""


NODE_FENCED = "node fenced"


# The families, one per subsystem (the module raising one names it in its docstring).


class RendezvousError(FlexjobError):
    """A rendezvous did not give this node a world (``trainer.rendezvous``)."""


class MasterError(FlexjobError):
    """The job master's own failures: its state, its lock, its torch store, PS-set changes."""


class AgentError(FlexjobError, RuntimeError):
    """The agent, or ``flexjob run``, could not get its workers into a world or keep them."""


class JobFailedElsewhere(AgentError):
    """Another node's agent gave up on the job (its root cause is in the master's KV)."""


class TrainerError(FlexjobError):
    """A training process's failure inside flexjob's trainer (a broken collective)."""


class WireError(FlexjobError):
    """The RPC layer (``flexjob.rpc``): a stream or call that broke or was refused, an
    insecure bind."""


class PlatformError(FlexjobError):
    """Where jobs and replicas live (``flexjob.platform``): a lease another process holds."""


class OperatorError(FlexjobError):
    """An operator's pass or watch failed (``flexjob.operator``)."""


class AllocatorError(FlexjobError):
    """The allocator, its policies, nodes and traces (``flexjob.scheduler``,
    ``core.allocator``)."""


class BrainError(FlexjobError):
    """The brain service (``flexjob.brain``): its database settings."""


class ClientError(FlexjobError):
    """The Python SDK (``flexjob.client``): a job that failed, a bad config file."""
