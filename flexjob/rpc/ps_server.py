"""gRPC glue of a PS replica: a servicer that turns each ``ps.proto`` RPC into one
``PsBackend`` call, and ``serve_ps`` to start it.

Bad input becomes a gRPC status naming the field (INVALID_ARGUMENT for a wrong value, shape
or dtype, NOT_FOUND for an unknown table or parameter); the call fails alone and the PS keeps
serving. Not where PS logic lives (``flexjob.ps.service`` is).
"""

import logging
from collections.abc import Callable, Sequence
from concurrent import futures
from typing import TypeVar

import grpc
import numpy as np

from flexjob.api.errors import InvalidSpecError, NotFoundError
from flexjob.api.names import ENV_PS_SECRET
from flexjob.rpc.auth import check_bind
from flexjob.rpc.gen import ps_pb2 as pb
from flexjob.rpc.gen import ps_pb2_grpc as pb_grpc
from flexjob.rpc.ps_auth import PsCredentials
from flexjob.rpc.ps_convert import configure_from_pb, stats_to_pb, tensor_from_pb, tensor_to_pb
from flexjob.rpc.ps_messages import PsBackend
from flexjob.rpc.server import RefusingInterceptor, RunningServer, bind
from flexjob.rpc.undecodable import decoding

log = logging.getLogger(__name__)
T = TypeVar("T")

#: Messages up to this size: dense parameters of a large model travel in one call.
MAX_MESSAGE_BYTES = 512 * 1024 * 1024
GRPC_OPTIONS = [
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
]


def _call(context: grpc.ServicerContext, fn: Callable[[], T]) -> T:
    try:
        return fn()
    except InvalidSpecError as exc:
        context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        raise  # unreachable: abort raises
    except NotFoundError as exc:
        context.abort(grpc.StatusCode.NOT_FOUND, str(exc))
        raise


def _ids(msg: pb.Tensor, field: str = "ids") -> np.ndarray:
    ids = tensor_from_pb(msg, field, "int64")
    if ids.ndim != 1:
        raise InvalidSpecError(f"{field}.shape: must be 1-d, got {list(ids.shape)}")
    return ids


class PsServicer(pb_grpc.ParameterServerServicer):
    def __init__(self, backend: PsBackend) -> None:
        self._b = backend

    def Configure(
        self, request: pb.ConfigureRequest, context: grpc.ServicerContext
    ) -> pb.ConfigureResponse:
        def run() -> tuple[int, bool]:
            decoded = configure_from_pb(request)
            return self._b.configure(decoded.model, decoded.num_ps)

        version, created = _call(context, run)
        return pb.ConfigureResponse(version=version, created=created)

    def PullDense(
        self, request: pb.PullDenseRequest, context: grpc.ServicerContext
    ) -> pb.PullDenseResponse:
        version, params = _call(context, lambda: self._b.pull_dense(request.known_version))
        return pb.PullDenseResponse(
            version=version, params={k: tensor_to_pb(v) for k, v in params.items()}
        )

    def PushDense(
        self, request: pb.PushDenseRequest, context: grpc.ServicerContext
    ) -> pb.PushDenseResponse:
        def run() -> int:
            grads = {
                k: tensor_from_pb(v, f"grads[{k}]", "float32") for k, v in request.grads.items()
            }
            return self._b.push_dense(grads, request.base_version)  # type: ignore[arg-type]

        return pb.PushDenseResponse(version=_call(context, run))

    def Lookup(self, request: pb.LookupRequest, context: grpc.ServicerContext) -> pb.LookupResponse:
        rows = _call(context, lambda: self._b.lookup(request.table, _ids(request.ids)))
        return pb.LookupResponse(rows=tensor_to_pb(rows))

    def PushRows(
        self, request: pb.PushRowsRequest, context: grpc.ServicerContext
    ) -> pb.PushRowsResponse:
        def run() -> int:
            ids = _ids(request.ids)
            grads = tensor_from_pb(request.grads, "grads", "float32")
            return self._b.push_rows(request.table, ids, grads)  # type: ignore[arg-type]

        return pb.PushRowsResponse(rows_updated=_call(context, run))

    def PushLookup(
        self, request: pb.PushLookupRequest, context: grpc.ServicerContext
    ) -> pb.PushLookupResponse:
        def run() -> tuple[int, np.ndarray]:
            lookup_ids = _ids(request.lookup_ids, "lookup_ids")
            if request.HasField("push_ids"):
                push_ids = _ids(request.push_ids, "push_ids")
                grads = tensor_from_pb(request.grads, "grads", "float32")
            else:  # nothing to push: a plain lookup
                push_ids = lookup_ids[:0]
                grads = np.empty((0, 0), dtype=np.float32)
            return self._b.push_lookup(request.table, push_ids, grads, lookup_ids)  # type: ignore[arg-type]

        updated, rows = _call(context, run)
        return pb.PushLookupResponse(rows_updated=updated, rows=tensor_to_pb(rows))

    def Stats(self, request: pb.StatsRequest, context: grpc.ServicerContext) -> pb.StatsResponse:
        return stats_to_pb(_call(context, self._b.stats))


def serve_ps(
    backend: PsBackend,
    host: str = "127.0.0.1",
    port: int = 0,
    max_workers: int = 16,
    credentials: PsCredentials | None = None,
    interceptors: Sequence[grpc.ServerInterceptor] = (),
    register: Callable[[grpc.Server], None] | None = None,
) -> RunningServer:
    """Start serving ``backend`` on ``host:port`` (0: a free port); returns at once. With
    ``credentials`` (``rpc.ps_auth``) every call must present a member's node credential (the
    control service: the master's credential for this PS); without them only a loopback
    ``host`` is allowed (``rpc.auth.InsecureBindError``), as for the job master.
    ``interceptors`` run after that check (``rpc.ps_gate``); ``register`` adds more services on
    the same port (``rpc.ps_control.add_control``)."""
    check_bind(host, credentials.control if credentials else None, f"set {ENV_PS_SECRET}")
    chain = [RefusingInterceptor(credentials.refusal)] if credentials else []
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="ps-rpc"),
        interceptors=[*chain, *interceptors] or None,
        options=[("grpc.so_reuseport", 0), *GRPC_OPTIONS],
    )
    registry = decoding(server)  # undecodable requests: INVALID_ARGUMENT
    pb_grpc.add_ParameterServerServicer_to_server(PsServicer(backend), registry)  # type: ignore[no-untyped-call]
    if register is not None:
        register(registry)
    bound = bind(server, host, port, "PS server")
    server.start()
    log.info("event=ps_serving address=%s:%d", host, bound)
    return RunningServer(host, bound, server)
