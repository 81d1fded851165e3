"""One gRPC call with the clients' retry rule: an unreachable server (UNAVAILABLE, deadline
hit) is retried with exponential backoff until a deadline; answered errors become the
``api.errors`` kinds at once (INVALID_ARGUMENT, NOT_FOUND, a PS's "ps set changed"
FAILED_PRECONDITION, anything else). Shared by the
master client and the PS client."""

import logging
import time
from collections.abc import Callable
from typing import TypeVar

import grpc

from flexjob.api.errors import (
    PS_SET_CHANGED,
    FlexjobError,
    InvalidSpecError,
    NotFoundError,
    PsSetChangedError,
    UnavailableError,
)

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
