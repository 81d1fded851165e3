"""gRPC server glue: two servicers (the ``Master`` and ``MasterControl`` services, on one
server) that turn each RPC into one ``MasterBackend`` call.

One handler per message, each a few lines: convert in, call the backend, convert out. Errors
of the ``api.errors`` hierarchy become gRPC status codes, anything else INTERNAL with a message.
With a token (``rpc.auth``) every call must carry ``authorization: Bearer <token>`` or a node's
credential (UNAUTHENTICATED otherwise), and a call that names a node must be allowed to act as it
(PERMISSION_DENIED otherwise: ``rpc.auth.JobCredentials``); without one the server listens on
loopback only. Keys the master or one node owns (``core.training.owned_keys``) are written by no
one else over RPC. Not where master logic lives (``flexjob.master.service`` is).
"""

import functools
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent import futures
from dataclasses import dataclass
from typing import Generic, TypeVar

import grpc

from flexjob.api.errors import (
    AlreadyExistsError,
    InvalidSpecError,
    NodeFencedError,
    NotFoundError,
    UnavailableError,
)
from flexjob.core.training.owned_keys import key_owner, write_refusal
from flexjob.rpc import convert
from flexjob.rpc.auth import ANY_NODE, AUTHORIZATION, JobCredentials, acts_as, check_job_bind
from flexjob.rpc.gen import master_control_pb2_grpc as ctl_grpc
from flexjob.rpc.gen import master_pb2 as pb
from flexjob.rpc.gen import master_pb2_grpc as pb_grpc
from flexjob.rpc.messages import MasterBackend, NodeRef
from flexjob.rpc.undecodable import decoding

log = logging.getLogger(__name__)
T = TypeVar("T")
H = TypeVar("H")

#: Called after every call (and every message of a shard stream) of a server that times them:
#: method name, status code name, seconds (``master.observing.observe_rpc``).
OnCall = Callable[[str, str, float], None]

#: Seconds between two keep-alive events on an agent's ``Attach`` stream.
ATTACH_KEEPALIVE_S = 5.0

#: Channel options of the master's gRPC servers (``serve`` and ``rpc.aio_server``). No HTTP/2
#: BDP probing: it answers received data with PINGs to grow flow-control windows for bulk
#: transfers, and the master's messages are small; without it ``benchmarks/master_load.py``
#: (lease-8 paced at 5,000 shard requests/s, master on its own CPU) measured p99 5.2-13.3 ms
#: (median 5.9, 7 runs) against 6.1-13.6 (median 11.0) with it, and a bare server 2.4-4.4
#: against 5.2-7.4 ms. The PS servers (tensors) keep it.
MASTER_SERVER_OPTIONS: tuple[tuple[str, int], ...] = (
    ("grpc.so_reuseport", 0),
    ("grpc.http2.bdp_probe", 0),
)

_CODES: dict[type[Exception], grpc.StatusCode] = {
    InvalidSpecError: grpc.StatusCode.INVALID_ARGUMENT,
    NotFoundError: grpc.StatusCode.NOT_FOUND,
    AlreadyExistsError: grpc.StatusCode.ALREADY_EXISTS,
    NodeFencedError: grpc.StatusCode.FAILED_PRECONDITION,  # a node declared dead: it re-joins
    UnavailableError: grpc.StatusCode.UNAVAILABLE,  # a fenced master's writes (retry elsewhere)
}
_ANSWERED = tuple(_CODES)


def _call(context: grpc.ServicerContext, fn: Callable[[], T]) -> T:
    """Run one backend call; its ``api.errors`` errors become gRPC status codes, and anything
    else INTERNAL with a message (never gRPC's bare UNKNOWN)."""
    try:
        return fn()
    except _ANSWERED as exc:
        code = next(c for kind, c in _CODES.items() if isinstance(exc, kind))
        context.abort(code, str(exc))
        raise  # unreachable: abort raises
    except Exception as exc:
        log.exception("event=rpc_internal_error")
        context.abort(grpc.StatusCode.INTERNAL, f"master error: {type(exc).__name__}: {exc}")
        raise  # unreachable: abort raises


def _untimed(method: str, code: str, seconds: float) -> None:
    """An ``OnCall`` that keeps nothing (a servicer whose server times nothing)."""


def authorization(context: grpc.ServicerContext) -> str | None:
    """The call's ``authorization`` metadata (None when absent)."""
    for key, value in context.invocation_metadata() or ():
        if key == AUTHORIZATION:
            return str(value)
    return None


class NodeGate:
    """The check that a call may act as the node it names and write the key it names (the
    servicers of both services share one): with ``credentials`` (a master with a token) by its
    credential (``rpc.auth.JobCredentials``); without, only the master-owned keys are refused."""

    def __init__(
        self,
        credentials: JobCredentials | None = None,
        peers: Callable[[str, str], bool] | None = None,
    ) -> None:
        self._credentials = credentials
        #: Whether node ``a`` may report a shard for ``b``: both in the running world (the
        #: backend's ``same_world``; ``trainer.peer_shards``: a survivor reports the shards a
        #: peer finished in a committed step before it died).
        self._peers = peers

    def node(
        self, ref: pb.NodeRef, context: grpc.ServicerContext, *, peer_report: bool = False
    ) -> NodeRef:
        """``ref`` as a ``NodeRef``, once the call proved it may act as it (else aborted); a
        ``peer_report`` may also come from a member of the world ``ref`` is in."""
        node = convert.node_from_pb(ref)
        if self._credentials is not None:
            header = authorization(context)
            refusal = self._credentials.refusal(header, node.node_id)
            if refusal is not None and peer_report and self._peers is not None:
                caller = self._credentials.caller(header)
                if caller is not None and self._peers(caller, node.node_id):
                    refusal = None
            if refusal is not None:
                context.abort(grpc.StatusCode.PERMISSION_DENIED, refusal)
        return node

    def key(self, key: str, context: grpc.ServicerContext) -> None:
        """Abort unless the call may write ``key`` (``core.training.owned_keys``)."""
        owner = key_owner(key)
        if owner is None:
            return
        caller: str | None = ANY_NODE
        if self._credentials is not None:
            caller = self._credentials.caller(authorization(context))
        if owner.master or caller is None or not acts_as(caller, owner.node):
            context.abort(grpc.StatusCode.PERMISSION_DENIED, write_refusal(key, owner))


def timed_call(
    on_call: OnCall, method: str, context: grpc.ServicerContext, fn: Callable[[], T]
) -> T:
    """``fn()``, timed into ``on_call(method, code, seconds)``: the code is OK, or the one the
    call was aborted with (UNKNOWN when it raised without one)."""
    started = time.perf_counter()
    code = "OK"
    try:
        return fn()
    except Exception:
        code = getattr(context.code(), "name", None) or "UNKNOWN"
        raise
    finally:
        on_call(method, code, time.perf_counter() - started)


class StreamSlots(Generic[H]):
    """The shard streams a server holds open: at most ``limit`` at once, each known by a
    handle (its context or task); ``end_all`` ends them when the thread-pool server stops
    (an open stream waits for no reply; on ``grpc.aio`` a cancelled handler would still hold
    its call until the grace ends, so that server leaves them to its grace)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._lock = threading.Lock()
        self._open: set[H] = set()

    def take(self, handle: H) -> bool:
        with self._lock:
            if len(self._open) >= self.limit:
                return False
            self._open.add(handle)
            return True

    def give_back(self, handle: H) -> None:
        with self._lock:
            self._open.discard(handle)

    def end_all(self, end: Callable[[H], object]) -> None:
        with self._lock:
            handles = list(self._open)
        for handle in handles:
            end(handle)

    def refusal(self) -> str:
        return f"all {self.limit} shard streams of this master are open: use LeaseShards"


class MasterServicer(pb_grpc.MasterServicer):
    """The ``Master`` service: rendezvous, the Attach stream and shards. ``streams``: the
    shard streams it may hold (none by default); ``on_call`` times each of their messages."""

    def __init__(
        self,
        backend: MasterBackend,
        streams: "StreamSlots[grpc.ServicerContext] | None" = None,
        on_call: OnCall | None = None,
        gate: NodeGate | None = None,
    ) -> None:
        self._b = backend
        self._gate = gate or NodeGate()
        self._streams: StreamSlots[grpc.ServicerContext] = streams or StreamSlots(0)
        self._on_call: OnCall = on_call or _untimed

    def JoinRendezvous(
        self, request: pb.JoinRequest, context: grpc.ServicerContext
    ) -> pb.JoinResponse:
        node = self._gate.node(request.node, context)
        round_ = _call(
            context, lambda: self._b.join(node, request.address, request.local_world_size)
        )
        return pb.JoinResponse(round=round_)

    def GetWorld(self, request: pb.GetWorldRequest, context: grpc.ServicerContext) -> pb.WorldInfo:
        node = self._gate.node(request.node, context)
        return convert.world_to_pb(_call(context, lambda: self._b.get_world(node, request.round)))

    def NodesWaiting(
        self, request: pb.NodesWaitingRequest, context: grpc.ServicerContext
    ) -> pb.NodesWaitingResponse:
        node = self._gate.node(request.node, context)
        return convert.waiting_to_pb(_call(context, lambda: self._b.nodes_waiting(node)))

    def GetShard(self, request: pb.GetShardRequest, context: grpc.ServicerContext) -> pb.Shard:
        node = self._gate.node(request.node, context)
        return convert.shard_to_pb(_call(context, lambda: self._b.get_shard(node, request.dataset)))

    def ReportShard(
        self, request: pb.ReportShardRequest, context: grpc.ServicerContext
    ) -> pb.ReportShardResponse:
        node = self._gate.node(request.node, context, peer_report=True)
        ok = _call(context, lambda: self._b.report_shard(node, request.dataset, request.shard_id))
        return pb.ReportShardResponse(accepted=ok)

    def LeaseShards(
        self, request: pb.LeaseShardsRequest, context: grpc.ServicerContext
    ) -> pb.LeaseShardsResponse:
        node = self._gate.node(request.node, context)
        ask = convert.lease_request_from_pb(request)
        return convert.lease_to_pb(_call(context, lambda: self._b.lease_shards(node, ask)))

    def LeaseShardsStream(
        self, requests: Iterator[pb.LeaseShardsRequest], context: grpc.ServicerContext
    ) -> Iterator[pb.LeaseShardsResponse]:
        """``LeaseShards`` for each request, in order, on a stream that one training process
        holds open (one server thread each, ``streams.limit`` at most: more are refused before
        a request is read). An answered error ends the stream with its status."""
        if not self._streams.take(context):
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, self._streams.refusal())
        try:
            for request in requests:
                serve = functools.partial(self.LeaseShards, request, context)
                yield timed_call(self._on_call, "LeaseShardsStream", context, serve)
        finally:
            self._streams.give_back(context)

    def RegisterDataset(
        self, request: pb.RegisterDatasetRequest, context: grpc.ServicerContext
    ) -> pb.Empty:
        node = self._gate.node(request.node, context)
        _call(context, lambda: self._b.register_dataset(node, convert.dataset_from_pb(request)))
        return pb.Empty()

    def Attach(
        self, request: pb.AttachRequest, context: grpc.ServicerContext
    ) -> Iterator[pb.AttachEvent]:
        """Held open while the agent lives (one server thread each); when it breaks, the
        backend hears of it at once (``detach``)."""
        node = self._gate.node(request.node, context)
        token = self._b.attach(node)
        context.add_callback(lambda: self._b.detach(node, token))
        while context.is_active() and not self._b.wait_closing(ATTACH_KEEPALIVE_S):
            yield pb.AttachEvent()

    def GetProgress(
        self, request: pb.ProgressRequest, context: grpc.ServicerContext
    ) -> pb.ProgressResponse:
        node = self._gate.node(request.node, context)
        return convert.progress_to_pb(
            _call(context, lambda: self._b.get_progress(node, request.dataset))
        )


class MasterControlServicer(ctl_grpc.MasterControlServicer):
    """The ``MasterControl`` service: stats, heartbeats, failures, exclusions, the batch plan
    and the key-value store."""

    def __init__(self, backend: MasterBackend, gate: NodeGate | None = None) -> None:
        self._b = backend
        self._gate = gate or NodeGate()

    def ReportStats(self, request: pb.StatsRequest, context: grpc.ServicerContext) -> pb.Empty:
        node = self._gate.node(request.node, context)
        _call(context, lambda: self._b.report_stats(node, convert.stats_from_pb(request)))
        return pb.Empty()

    def Heartbeat(
        self, request: pb.HeartbeatRequest, context: grpc.ServicerContext
    ) -> pb.HeartbeatResponse:
        node = self._gate.node(request.node, context)
        reply = _call(context, lambda: self._b.heartbeat(node, request.timestamp))
        return convert.heartbeat_to_pb(reply)

    def ReportFailure(self, request: pb.FailureRequest, context: grpc.ServicerContext) -> pb.Empty:
        node = self._gate.node(request.node, context)
        _call(
            context,
            lambda: self._b.report_failure(
                node, request.reason, request.exit_code, request.restarting
            ),
        )
        return pb.Empty()

    def NodeSucceeded(
        self, request: pb.NodeSucceededRequest, context: grpc.ServicerContext
    ) -> pb.Empty:
        node = self._gate.node(request.node, context)
        _call(context, lambda: self._b.node_succeeded(node))
        return pb.Empty()

    def RunningNodes(
        self, request: pb.RunningNodesRequest, context: grpc.ServicerContext
    ) -> pb.RunningNodesResponse:
        return pb.RunningNodesResponse(node_ids=_call(context, self._b.running_nodes))

    def GetBatchPlan(
        self, request: pb.BatchPlanRequest, context: grpc.ServicerContext
    ) -> pb.BatchPlanResponse:
        node = self._gate.node(request.node, context)
        plan = _call(
            context, lambda: self._b.get_batch_plan(node, request.rank, request.world_size)
        )
        return convert.batch_to_pb(plan)

    def KVSet(self, request: pb.KVSetRequest, context: grpc.ServicerContext) -> pb.Empty:
        self._gate.key(request.key, context)
        _call(context, lambda: self._b.kv_set(request.key, request.value))
        return pb.Empty()

    def KVGet(self, request: pb.KVGetRequest, context: grpc.ServicerContext) -> pb.KVGetResponse:
        value = _call(context, lambda: self._b.kv_get(request.key))
        return pb.KVGetResponse(found=value is not None, value=value or b"")

    def KVAdd(self, request: pb.KVAddRequest, context: grpc.ServicerContext) -> pb.KVAddResponse:
        self._gate.key(request.key, context)
        return _call(
            context, lambda: pb.KVAddResponse(value=self._b.kv_add(request.key, request.amount))
        )

    def ExcludeNodes(
        self, request: pb.ExcludeRequest, context: grpc.ServicerContext
    ) -> pb.ExcludeResponse:
        node = self._gate.node(request.node, context)
        reasons = dict(zip(request.nodes, request.reasons, strict=False))
        out = _call(context, lambda: self._b.exclude_nodes(node, request.round, reasons))
        return pb.ExcludeResponse(excluded=list(out))


#: Why a call is refused (its code and message), from its ``authorization`` header and its
#: method; None when it may pass.
Refusal = Callable[[str | None, str], "tuple[grpc.StatusCode, str] | None"]


class RefusingInterceptor(grpc.ServerInterceptor):  # type: ignore[misc]
    """Refuses every call ``refusal`` refuses, before it reaches a servicer."""

    def __init__(self, refusal: Refusal) -> None:
        self._refuses = refusal

    def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], grpc.RpcMethodHandler | None],
        details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler | None:
        metadata = dict(details.invocation_metadata or ())
        refusal = self._refuses(metadata.get(AUTHORIZATION), details.method)
        if refusal is None:
            return continuation(details)
        code, message = refusal

        def refuse(request: object, context: grpc.ServicerContext) -> None:
            context.abort(code, message)

        return grpc.unary_unary_rpc_method_handler(refuse)


class TokenInterceptor(RefusingInterceptor):
    """Refuses every call whose metadata lacks ``authorization: Bearer <token>`` or a node
    credential under it (``rpc.auth.JobCredentials``)."""

    def __init__(self, token: str | JobCredentials) -> None:
        self.credentials = token if isinstance(token, JobCredentials) else JobCredentials(token)
        super().__init__(self._refusal)

    def _refusal(self, header: str | None, method: str) -> tuple[grpc.StatusCode, str] | None:
        if self.credentials.caller(header) is not None:
            return None
        return grpc.StatusCode.UNAUTHENTICATED, "missing or wrong bearer token"


def bind(server: grpc.Server | grpc.aio.Server, host: str, port: int, what: str) -> int:
    """Add ``host:port`` (0: a free port) to ``server``; the port it got. ``OSError`` naming
    ``what`` (the master RPC server, the PS server) when it cannot."""
    bound: int = server.add_insecure_port(f"{host}:{port}")
    if bound == 0:
        raise OSError(f"cannot bind the {what} to {host}:{port}")
    return bound


@dataclass(frozen=True, slots=True)
class BoundServer:
    """A started RPC server: the ``host`` and ``port`` it listens on, and ``stop``."""

    host: str
    port: int

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def stop(self, grace: float | None = 1.0) -> None:
        """Stop serving; calls in flight get ``grace`` seconds."""
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class RunningServer(BoundServer):
    """A server of ``grpc.server``'s thread pool (``serve``, ``rpc.ps_server.serve_ps``)."""

    server: grpc.Server
    #: The shard streams it holds open (ended first when it stops: they wait for no reply).
    streams: "StreamSlots[grpc.ServicerContext] | None" = None

    def stop(self, grace: float | None = 1.0) -> None:
        if self.streams is not None:
            self.streams.end_all(lambda context: context.cancel())
        self.server.stop(grace).wait()


def serve(
    backend: MasterBackend,
    host: str = "127.0.0.1",
    port: int = 0,
    max_workers: int = 32,
    token: str | None = None,
    interceptors: Sequence[grpc.ServerInterceptor] = (),
    shard_streams: int = 0,
    on_call: OnCall | None = None,
) -> RunningServer:
    """Start serving ``backend`` on ``host:port`` (0: a free port); returns at once. With
    ``token`` every call must present it; without one only a loopback ``host`` is allowed
    (``InsecureBindError``). ``max_workers`` threads serve calls, and up to ``shard_streams``
    more each hold a shard stream (``on_call`` times their messages)."""
    check_job_bind(host, token)
    pool = max_workers + shard_streams
    credentials = JobCredentials(token) if token else None
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=pool, thread_name_prefix="master-rpc"),
        interceptors=[*([TokenInterceptor(credentials)] if credentials else []), *interceptors],
        options=list(MASTER_SERVER_OPTIONS),
    )
    streams: StreamSlots[grpc.ServicerContext] = StreamSlots(shard_streams)
    gate = NodeGate(credentials, getattr(backend, "same_world", None))
    servicer = MasterServicer(backend, streams, on_call, gate)
    registry = decoding(server)  # undecodable requests: INVALID_ARGUMENT
    pb_grpc.add_MasterServicer_to_server(servicer, registry)  # type: ignore[no-untyped-call]
    control = MasterControlServicer(backend, gate)
    ctl_grpc.add_MasterControlServicer_to_server(control, registry)  # type: ignore[no-untyped-call]
    bound = bind(server, host, port, "master RPC server")
    server.start()
    log.info("event=rpc_serving address=%s:%d token=%s", host, bound, "yes" if token else "no")
    return RunningServer(host, bound, server, streams)
