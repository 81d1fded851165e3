"""``PsClient``: a typed client of one PS replica, numpy arrays in and out.

Each method is one RPC; ``lookup_async`` / ``push_rows_async`` start the call and return a
future, so a trainer can talk to every PS of its set at once. A call in flight is a blocking
gRPC call on the client's own small thread pool (it costs the client less CPU than a gRPC
future), and ``now=True`` makes it in the calling thread. Unreachable PS are retried until
``retry_deadline`` (``rpc.retry``); bad input comes back as ``InvalidSpecError`` /
``NotFoundError`` naming the field. Thread-safe; one channel per client.
"""

import logging
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Generic, TypeVar

import grpc
import numpy as np
import numpy.typing as npt

from flexjob.api.errors import UnavailableError
from flexjob.core.ps.parameters import ModelSpec
from flexjob.rpc.gen import ps_pb2 as pb
from flexjob.rpc.gen import ps_pb2_grpc as pb_grpc
from flexjob.rpc.ps_convert import configure_to_pb, stats_from_pb, tensor_from_pb, tensor_to_pb
from flexjob.rpc.ps_gate import SET_VERSION_HEADER
from flexjob.rpc.ps_messages import PsStats
from flexjob.rpc.ps_server import GRPC_OPTIONS
from flexjob.rpc.retry import RetryingClient, answered_error

log = logging.getLogger(__name__)
#: Threads per client for calls in flight (a step has at most a few per PS: rows, dense).
CALL_THREADS = 4
#: Longest wait between two tries of an unreachable PS: a relaunched PS (restored from its
#: checkpoint) is answered within this of coming up, not a master-sized second later.
RETRY_MAX_BACKOFF_S = 0.2
#: The channel's own reconnect backoff (gRPC's default starts at 1 s and grows by 1.6x, so a
#: channel that saw a killed PS for a few seconds would not even try its relaunch for longer).
#: ``grpc.min_reconnect_backoff_ms`` stays at its default: gRPC uses it as the shortest
#: connect timeout, which a slow network must not hit.
CHANNEL_OPTIONS = [
    *GRPC_OPTIONS,
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 200),
]
T = TypeVar("T")
R = TypeVar("R")
Floats = npt.NDArray[np.float32]


class Answered:
    """A call made in the calling thread (a blocking gRPC call costs the client less CPU than
    a future): its answer or its error, given back by ``result()`` as a future would."""

    def __init__(self, call: Callable[[], object]) -> None:
        self._answer: object = None
        self._error: grpc.RpcError | None = None
        try:
            self._answer = call()
        except grpc.RpcError as exc:
            self._error = exc

    def result(self) -> object:
        if self._error is not None:
            raise self._error
        return self._answer


class Pending(Generic[R]):
    """A call in flight; ``result()`` waits for it and converts its answer. When the PS was
    unreachable (it died, or is being relaunched), ``result()`` sends the call again with the
    client's retry rule (``retry``), so a relaunched PS that restored its partition answers."""

    def __init__(
        self,
        future: "Future[Any] | Answered",
        convert: Callable[[object], R],
        retry: Callable[[], object] | None = None,
    ) -> None:
        self._future = future
        self._convert = convert
        self._retry = retry

    def result(self) -> R:
        try:
            return self._convert(self._future.result())
        except grpc.RpcError as exc:
            answered = answered_error(exc)
            if answered is not None:
                raise answered from None
            if self._retry is None:
                raise UnavailableError(f"PS call failed: {exc.code().name}") from None
            log.warning("event=ps_call_retry code=%s", exc.code().name)
        return self._convert(self._retry())

    def then(self, fn: Callable[[R], T]) -> "Pending[T]":
        """The same call, answering ``fn`` of this one's answer."""
        convert = self._convert
        return Pending(self._future, lambda raw: fn(convert(raw)), self._retry)


class PsClient(RetryingClient):
    SERVER = "PS"

    def __init__(
        self,
        address: str,
        *,
        timeout: float = 30.0,
        retry_deadline: float = 60.0,
        token: str | None = None,
        set_version: int | None = None,
    ):
        """``token``: the job's master token or this node's credential, which PS replicas
        require too (default: from the environment, ``rpc.auth.client_bearer``).
        ``set_version``: the PS-set version the caller resolved (sent with each call,
        ``rpc.ps_gate``; a PS of a newer set refuses the call with ``PsSetChangedError``)."""
        version = [] if set_version is None else [(SET_VERSION_HEADER, str(set_version))]
        super().__init__(address, timeout, retry_deadline, RETRY_MAX_BACKOFF_S, token, version)
        self._channel = grpc.insecure_channel(address, options=CHANNEL_OPTIONS)
        self._stub = pb_grpc.ParameterServerStub(self._channel)  # type: ignore[no-untyped-call]
        self._pool = ThreadPoolExecutor(CALL_THREADS, thread_name_prefix=f"ps-call-{address}")

    def close(self) -> None:
        self._pool.shutdown(wait=False)
        self._channel.close()

    def configure(self, model: ModelSpec, num_ps: int) -> tuple[int, bool]:
        """Declare the model (this PS's share of it); (version, created by this call)."""
        resp = self._call(self._stub.Configure, configure_to_pb(model, num_ps))
        return int(resp.version), bool(resp.created)

    def pull_dense(self, known_version: int = -1) -> tuple[int, dict[str, Floats]]:
        resp = self._call(self._stub.PullDense, pb.PullDenseRequest(known_version=known_version))
        params = {k: _floats(v, f"params[{k}]") for k, v in resp.params.items()}
        return int(resp.version), params

    def push_dense_async(self, grads: Mapping[str, Floats], base_version: int) -> Pending[int]:
        req = pb.PushDenseRequest(
            grads={k: tensor_to_pb(v) for k, v in grads.items()}, base_version=base_version
        )
        return self._async(self._stub.PushDense, req, lambda r: int(r.version))

    def lookup_async(
        self, table: str, ids: npt.NDArray[np.int64], *, now: bool = False
    ) -> Pending[Floats]:
        req = pb.LookupRequest(table=table, ids=tensor_to_pb(ids))
        return self._async(self._stub.Lookup, req, lambda r: _floats(r.rows, "rows"), now=now)

    def lookup(self, table: str, ids: npt.NDArray[np.int64]) -> Floats:
        return self.lookup_async(table, ids).result()

    def push_rows_async(
        self, table: str, ids: npt.NDArray[np.int64], grads: Floats
    ) -> Pending[int]:
        req = pb.PushRowsRequest(table=table, ids=tensor_to_pb(ids), grads=tensor_to_pb(grads))
        return self._async(self._stub.PushRows, req, lambda r: int(r.rows_updated))

    def push_rows(self, table: str, ids: npt.NDArray[np.int64], grads: Floats) -> int:
        return self.push_rows_async(table, ids, grads).result()

    def push_lookup_async(
        self,
        table: str,
        lookup_ids: npt.NDArray[np.int64],
        push_ids: npt.NDArray[np.int64] | None = None,
        grads: Floats | None = None,
        *,
        now: bool = False,
    ) -> Pending[tuple[int, Floats]]:
        """Push ``grads`` of rows ``push_ids`` (if any), then look up ``lookup_ids``, in one
        call; answers (rows updated, rows looked up). ``now``: make the call before returning
        (in this thread: the last of a batch of parallel calls, or the only one)."""
        parts = {"lookup_ids": tensor_to_pb(lookup_ids)}
        if push_ids is not None and grads is not None:
            parts.update(push_ids=tensor_to_pb(push_ids), grads=tensor_to_pb(grads))
        req = pb.PushLookupRequest(table=table, **parts)
        return self._async(
            self._stub.PushLookup,
            req,
            lambda r: (int(r.rows_updated), _floats(r.rows, "rows")),
            now=now,
        )

    def stats(self) -> PsStats:
        return stats_from_pb(self._call(self._stub.Stats, pb.StatsRequest()))

    def _async(
        self, method: Any, request: object, convert: Callable[[Any], R], *, now: bool = False
    ) -> Pending[R]:
        options = {"timeout": self._timeout, "metadata": self._metadata}
        if now:
            future: Future[Any] | Answered = Answered(lambda: method(request, **options))
        else:
            future = self._pool.submit(method, request, **options)
        return Pending(future, convert, lambda: self._call(method, request))


def _floats(msg: pb.Tensor, field: str) -> Floats:
    return tensor_from_pb(msg, field, "float32")  # type: ignore[return-value]
