"""The errors of flexjob: one ``FlexjobError`` base and the few kinds a caller acts on.

For: every layer. A caller decides by kind, not by who raised it: ``NotFoundError`` (the
named object does not exist: 404, gRPC NOT_FOUND), ``ConflictError`` (it exists, or its state
forbids the request: 409; ``AlreadyExistsError`` when a create finds the name taken),
``InvalidSpecError`` (a spec or request names a wrong value, the message names the field:
400, gRPC INVALID_ARGUMENT; also a ``ValueError``) and ``UnavailableError`` (a platform, the
master or the brain could not be reached or failed; trying again later may work: 503).
``PsSetChangedError`` (a ``ConflictError``): a PS refused a call while its PS set changes.
Not for: errors that never leave one module (``RendezvousTimeout``, ``CollectiveError``).
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
