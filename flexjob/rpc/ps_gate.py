"""The gate in front of a PS replica's data calls, for PS-set changes (issue 15).

``PsGate`` says whether the PS takes data calls (Configure, PullDense, PushDense, Lookup,
PushRows, PushLookup; Stats always passes) and from clients of which PS-set version on, and
counts the calls in flight. ``close`` refuses new calls and waits for those in flight: the
version barrier of a PS-set change, after which the partition no longer changes. A refused call
answers FAILED_PRECONDITION "ps set changed: ..." (``PsSetChangedError`` at the client),
before it touches the partition, so the client may send it again to the new set.

Clients send their PS-set version in the ``SET_VERSION_HEADER`` metadata; a call without it
(a client that knows no master) passes whenever the gate is open.
"""

import threading
import time
from collections.abc import Callable
from typing import Any

import grpc

from flexjob.api.errors import PS_SET_CHANGED

SET_VERSION_HEADER = "flexjob-ps-set"
_DATA_SERVICE = "/flexjob.rpc.ps.v1.ParameterServer/"
_ALWAYS = frozenset({f"{_DATA_SERVICE}Stats"})


class PsGate:
    def __init__(self, open_: bool = True, min_version: int = 0, why: str = "") -> None:
        self._cond = threading.Condition()
        self._open = open_
        self._min_version = min_version
        self._why = why or "this PS is not serving"
        self._in_flight = 0

    @property
    def is_open(self) -> bool:
        return self._open

    @property
    def min_version(self) -> int:
        return self._min_version

    def admit(self, client_version: int | None) -> str | None:
        """Count one call in; the refusal's message instead when it may not pass."""
        with self._cond:
            if not self._open:
                return f"{PS_SET_CHANGED}: {self._why}"
            if client_version is not None and client_version < self._min_version:
                return (
                    f"{PS_SET_CHANGED}: the caller uses PS set {client_version}, this PS "
                    f"serves set {self._min_version}; re-resolve the set from the master"
                )
            self._in_flight += 1
            return None

    def done(self) -> None:
        with self._cond:
            self._in_flight -= 1
            self._cond.notify_all()

    def close(self, why: str, timeout: float = 60.0) -> int:
        """Refuse new calls and wait (up to ``timeout`` s) for the ones in flight; returns
        how many there were. ``TimeoutError`` if some are still running."""
        with self._cond:
            self._open = False
            self._why = why
            waited = self._in_flight
            deadline = time.monotonic() + timeout
            while self._in_flight:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"{self._in_flight} PS calls still running after {timeout}s")
                self._cond.wait(left)
            return waited

    def open(self, min_version: int) -> None:
        """Take calls again, from clients of PS set ``min_version`` or newer."""
        with self._cond:
            self._min_version = min_version
            self._open = True


def _client_version(details: grpc.HandlerCallDetails) -> int | None:
    for key, value in details.invocation_metadata or ():
        if key == SET_VERSION_HEADER:
            text = value if isinstance(value, str) else value.decode()
            return int(text) if text.lstrip("-").isdigit() else None
    return None


class GateInterceptor(grpc.ServerInterceptor):  # type: ignore[misc]
    """Puts ``gate`` in front of the PS data service's unary calls."""

    def __init__(self, gate: PsGate) -> None:
        self._gate = gate

    def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], grpc.RpcMethodHandler | None],
        details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler | None:
        handler = continuation(details)
        method = details.method
        if (
            handler is None
            or handler.unary_unary is None
            or not method.startswith(_DATA_SERVICE)
            or method in _ALWAYS
        ):
            return handler
        inner = handler.unary_unary
        gate = self._gate
        version = _client_version(details)

        def gated(request: Any, context: grpc.ServicerContext) -> Any:
            refused = gate.admit(version)
            if refused is not None:
                context.abort(grpc.StatusCode.FAILED_PRECONDITION, refused)
            try:
                return inner(request, context)
            finally:
                gate.done()

        return grpc.unary_unary_rpc_method_handler(
            gated,
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )
