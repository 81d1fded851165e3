"""One gRPC call with the clients' retry rule: an unreachable server (UNAVAILABLE, deadline
hit) is retried with exponential backoff until a deadline; answered errors become the
``api.errors`` kinds at once (INVALID_ARGUMENT, NOT_FOUND, a PS's "ps set changed"
FAILED_PRECONDITION, anything else). Shared by the
master client, the PS client and the PS control client, through ``RetryingClient``."""

import logging
import time
from collections.abc import Callable, Sequence
from typing import Self, TypeVar

import grpc

from flexjob.api.errors import (
    NODE_FENCED,
    PS_SET_CHANGED,
    FlexjobError,
    InvalidSpecError,
    NodeFencedError,
    NotFoundError,
    PsSetChangedError,
    UnavailableError,
)
from flexjob.rpc.auth import AUTHORIZATION, bearer, client_bearer

log = logging.getLogger(__name__)
T = TypeVar("T")

_RETRYABLE = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED})


def answered_error(exc: grpc.RpcError) -> FlexjobError | None:
    """The ``api.errors`` kind of an error the server answered; ``None`` when it is the
    transport's (unreachable, deadline: worth a retry)."""
    code = exc.code()
    if code == grpc.StatusCode.INVALID_ARGUMENT:
        return InvalidSpecError(exc.details())
    if code == grpc.StatusCode.NOT_FOUND:
        return NotFoundError(exc.details())
    if code == grpc.StatusCode.FAILED_PRECONDITION and (exc.details() or "").startswith(
        PS_SET_CHANGED
    ):
        return PsSetChangedError(exc.details())
    if code == grpc.StatusCode.FAILED_PRECONDITION and (exc.details() or "").startswith(
        NODE_FENCED
    ):
        return NodeFencedError(exc.details())
    if code not in _RETRYABLE:
        return FlexjobError(f"{code.name}: {exc.details()}")
    return None


def call_with_retry(
    method: Callable[..., T],
    request: object,
    *,
    what: str,
    timeout: float,
    retry_deadline: float,
    max_backoff: float = 1.0,
    metadata: tuple[tuple[str, str], ...] | None = None,
) -> T:
    """``method(request)``, retried while ``what`` (e.g. "master 10.0.0.1:5000") is
    unreachable for up to ``retry_deadline`` seconds; then ``UnavailableError``."""
    deadline = time.monotonic() + retry_deadline
    backoff = 0.05
    while True:
        try:
            return method(request, timeout=timeout, wait_for_ready=False, metadata=metadata)
        except grpc.RpcError as exc:
            answered = answered_error(exc)
            if answered is not None:
                raise answered from None
            code = exc.code()
            left = deadline - time.monotonic()
            if left <= 0:
                raise UnavailableError(
                    f"{what} unreachable for {retry_deadline}s: {code.name}: {exc.details()}"
                ) from None
            log.debug("event=rpc_retry target=%s code=%s", what, code.name)
            time.sleep(min(backoff, left))
            backoff = min(backoff * 2, max_backoff)


class RetryingClient:
    """What the gRPC clients share: ``address``, the metadata of the bearer ``token`` (default:
    the job's token or this node's credential from the environment, ``rpc.auth.client_bearer``)
    and of other ``headers``,
    and ``_call``: one call of ``timeout`` seconds per attempt, retried while the server
    (``SERVER`` at ``address``) is unreachable, for up to ``retry_deadline`` seconds
    (``call_with_retry``). A context manager: ``close`` on the way out."""

    #: What the server is, for errors and logs (the master, the PS).
    SERVER = "server"

    def __init__(
        self,
        address: str,
        timeout: float,
        retry_deadline: float,
        max_backoff: float = 1.0,
        token: str | None = None,
        headers: Sequence[tuple[str, str]] = (),
    ) -> None:
        self.address = address
        self._what = f"{self.SERVER} {address}"
        token = token if token is not None else client_bearer()
        auth = [(AUTHORIZATION, bearer(token))] if token else []
        self._metadata = (*auth, *headers) or None
        self._timeout = timeout
        self._retry_deadline = retry_deadline
        self._max_backoff = max_backoff

    def close(self) -> None:
        """Close what the client opened (its channel)."""
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, method: Callable[..., T], request: object) -> T:
        return call_with_retry(
            method,
            request,
            what=self._what,
            timeout=self._timeout,
            retry_deadline=self._retry_deadline,
            max_backoff=self._max_backoff,
            metadata=self._metadata,
        )
