"""The job master's gRPC server on ``grpc.aio``: one event-loop thread runs every call.

The master's logic is in memory and fast, so each unary call runs the ``MasterServicer`` method
of ``rpc.server`` (the same conversions and error codes) directly on the loop: no hand-off to a
pool thread and no contention between handler threads for the master's lock. What a call
changed is saved before it answers: journal lines are written on the loop when that is all
there is (a write to the page cache), else by one writer thread while the loop serves others.
With ``fsync`` the calls waiting on the loop are group-committed (``core.training.group_commit``):
one commit is in flight on the writer thread, the calls that end meanwhile all wait for the
next one (one ``fsync``), and each answers once a commit covering its lines ended. A snapshot
due is taken by a ``flush`` on the writer thread that its call awaits. An agent's ``Attach``
stream and a trainer's shard stream are coroutines instead of held threads. With a token every
call must carry it or a node's credential (``UNAUTHENTICATED`` otherwise) and may act only as
the node it proved to be, as in ``rpc.server`` (``NodeGate``). Measured against the thread-pool
server by ``benchmarks/master_load.py``. Not where master logic lives.
"""

import asyncio
import logging
import threading
import time
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable
from concurrent import futures
from dataclasses import dataclass
from typing import Any, NoReturn, Protocol

import grpc

from flexjob.api.errors import UnavailableError, WireError
from flexjob.core.training.group_commit import CommitStep, GroupCommit
from flexjob.rpc.auth import AUTHORIZATION, JobCredentials, check_job_bind
from flexjob.rpc.gen import master_control_pb2 as ctl_pb
from flexjob.rpc.gen import master_control_pb2_grpc as ctl_grpc
from flexjob.rpc.gen import master_pb2 as pb
from flexjob.rpc.gen import master_pb2_grpc as pb_grpc
from flexjob.rpc.messages import MasterBackend
from flexjob.rpc.server import (
    ATTACH_KEEPALIVE_S,
    MASTER_SERVER_OPTIONS,
    BoundServer,
    MasterControlServicer,
    MasterServicer,
    NodeGate,
    OnCall,
    StreamSlots,
    bind,
)
from flexjob.rpc.undecodable import decoding

log = logging.getLogger(__name__)

_START_TIMEOUT_S = 30.0


class Saves(Protocol):
    """How the backend's changes are written (``master.persistence.Persistence``)."""

    def defer_flushes_here(self) -> None: ...

    def flush_inline(self) -> bool: ...

    def flush(self, lines: int | None = None) -> None: ...

    def mark(self) -> int: ...

    def commit(self) -> int: ...

    def snapshot_due(self) -> bool: ...

    def check_held(self) -> None: ...


class _LoopCommits:
    """Saves on the loop what its calls changed, before each answers: journal lines only,
    group-committed (one ``commit`` in flight on the writer thread for every call waiting), or
    a ``flush`` on the writer thread when a snapshot is due. Loop thread only."""

    def __init__(self, saves: Saves, writer: futures.ThreadPoolExecutor) -> None:
        self._saves = saves
        self._writer = writer
        self._group: GroupCommit[asyncio.Future[None]] = GroupCommit()

    async def save(self) -> None:
        """Return once what the calls so far changed is saved (``UnavailableError``: fenced)."""
        if self._saves.flush_inline():
            return
        loop = asyncio.get_running_loop()
        target = self._saves.mark()
        if self._saves.snapshot_due():
            await loop.run_in_executor(self._writer, self._saves.flush, target)
            return
        self._saves.check_held()  # a fenced master acknowledges nothing, written or not
        waiter = loop.create_future()
        step = self._group.ask(target, waiter)
        if step is CommitStep.DONE:
            return
        if step is CommitStep.LEAD:
            self._start(loop, waiter)
        await waiter

    def _start(self, loop: asyncio.AbstractEventLoop, leader: "asyncio.Future[None]") -> None:
        """One commit on the writer thread; its end answers ``leader`` and the waiters."""
        done = loop.run_in_executor(self._writer, self._saves.commit)
        done.add_done_callback(lambda d: self._ended(loop, leader, d))

    def _ended(
        self,
        loop: asyncio.AbstractEventLoop,
        leader: "asyncio.Future[None]",
        done: "asyncio.Future[int]",
    ) -> None:
        error: BaseException | None
        if done.cancelled():  # the writer shut down: nothing more is written
            error = UnavailableError("the master is stopping: nothing more is saved")
        else:
            error = done.exception()
        ended = self._group.end(None if error else done.result())
        for waiter in ended.done if error else [leader, *ended.done]:
            if not waiter.done():
                waiter.set_result(None)
        if error is not None:
            for waiter in [leader, *ended.failed]:
                if not waiter.done():
                    waiter.set_exception(error)
        if ended.leader is not None:
            self._start(loop, ended.leader)


class _Aborted(WireError):
    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(details)
        self.code, self.details = code, details


class _LoopContext:
    """What ``MasterServicer``'s unary methods use of their context, for a call run on the
    loop: ``abort`` raises, and the coroutine around the method sends the status; the call's
    metadata (its credential) is the aio context's."""

    __slots__ = ("_context",)

    def __init__(self, context: grpc.aio.ServicerContext) -> None:
        self._context = context

    def abort(self, code: grpc.StatusCode, details: str) -> NoReturn:
        raise _Aborted(code, details)

    def invocation_metadata(self) -> Any:
        return self._context.invocation_metadata()


@dataclass(frozen=True, slots=True)
class AioServer(BoundServer):
    """A running ``serve_aio`` server: its loop thread, writer thread and address."""

    server: grpc.aio.Server
    loop: asyncio.AbstractEventLoop
    thread: threading.Thread
    writer: futures.ThreadPoolExecutor

    def stop(self, grace: float | None = 1.0) -> None:
        """Stop serving (calls in flight, and shard streams still open, get ``grace``
        seconds), then the loop and the writer."""
        if self.loop.is_closed():
            return
        asyncio.run_coroutine_threadsafe(self.server.stop(grace), self.loop).result()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()
        self.loop.close()
        self.writer.shutdown(wait=True)  # detaches of the streams that just ended


class _Servicer:
    """Builds the coroutines that serve each RPC of ``MasterServicer`` on the loop."""

    def __init__(
        self,
        backend: MasterBackend,
        saves: Saves,
        writer: futures.ThreadPoolExecutor,
        on_call: OnCall | None,
        streams: "StreamSlots[asyncio.Task[Any]]",
        gate: NodeGate,
    ) -> None:
        self._b = backend
        self._gate = gate
        self._saves = _LoopCommits(saves, writer)
        self._writer = writer
        self._on_call = on_call
        self._streams = streams

    def unary(
        self, sync: object, name: str
    ) -> Callable[[Any, grpc.aio.ServicerContext], Awaitable[Any]]:
        """The coroutine that serves ``sync``'s (an ``rpc.server`` servicer's) method ``name``."""
        method = getattr(sync, name)

        async def handle(request: Any, context: grpc.aio.ServicerContext) -> Any:
            return await self._serve_one(method, name, request, context)

        return handle

    async def _serve_one(
        self,
        method: Callable[[Any, Any], Any],
        name: str,
        request: Any,
        context: grpc.aio.ServicerContext,
    ) -> Any:
        """``method``'s reply to ``request``, once what it changed is written; an abort of
        the method becomes the call's (or stream's) status."""
        started = time.perf_counter()
        aborted: _Aborted | None = None
        reply = None
        try:
            reply = method(request, _LoopContext(context))
        except _Aborted as exc:
            aborted = exc
        finally:  # even after a failure: what it changed is written before it answers
            try:
                await self._saves.save()
            except UnavailableError as exc:  # a fenced master: nothing is acknowledged
                aborted = _Aborted(grpc.StatusCode.UNAVAILABLE, str(exc))
            if self._on_call is not None:
                code = aborted.code.name if aborted is not None else "OK"
                self._on_call(name, code, time.perf_counter() - started)
        if aborted is not None:
            await context.abort(aborted.code, aborted.details)
        return reply

    def lease_stream(
        self, sync: MasterServicer
    ) -> Callable[[AsyncIterable[Any], grpc.aio.ServicerContext], AsyncIterator[Any]]:
        """The coroutine that serves ``LeaseShardsStream``: ``sync.LeaseShards`` per request,
        in order, saved before each reply (``rpc.server.MasterServicer.LeaseShardsStream``)."""

        async def handle(
            requests: AsyncIterable[Any], context: grpc.aio.ServicerContext
        ) -> AsyncIterator[Any]:
            task = asyncio.current_task()
            assert task is not None
            if not self._streams.take(task):
                await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, self._streams.refusal())
            try:
                async for request in requests:
                    yield await self._serve_one(
                        sync.LeaseShards, "LeaseShardsStream", request, context
                    )
            finally:
                self._streams.give_back(task)

        return handle

    async def attach(
        self, request: pb.AttachRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[pb.AttachEvent]:
        """Held open while the agent lives; when it breaks, the backend hears of it at once
        (``detach``, on the writer thread: it saves)."""
        try:
            node = self._gate.node(request.node, _LoopContext(context))
        except _Aborted as exc:
            await context.abort(exc.code, exc.details)
        token = self._b.attach(node)
        loop = asyncio.get_running_loop()
        context.add_done_callback(
            lambda _: loop.run_in_executor(self._writer, self._detach, node, token)
        )
        while not self._b.wait_closing(0):
            await asyncio.sleep(ATTACH_KEEPALIVE_S)
            yield pb.AttachEvent()

    def _detach(self, node: Any, token: int) -> None:
        try:
            self._b.detach(node, token)
        except Exception:
            log.exception("event=detach_failed node=%s", node.node_id)


def _services(
    backend: MasterBackend, gate: NodeGate
) -> list[tuple[object, type, Callable[..., None], Any]]:
    """Per service on the master's port: ``rpc.server``'s servicer, the generated servicer
    class, its ``add_..._to_server`` and the service's descriptor."""
    return [
        (
            MasterServicer(backend, gate=gate),
            pb_grpc.MasterServicer,
            pb_grpc.add_MasterServicer_to_server,
            pb.DESCRIPTOR.services_by_name["Master"],
        ),
        (
            MasterControlServicer(backend, gate),
            ctl_grpc.MasterControlServicer,
            ctl_grpc.add_MasterControlServicer_to_server,
            ctl_pb.DESCRIPTOR.services_by_name["MasterControl"],
        ),
    ]


def _token_interceptor(credentials: JobCredentials) -> grpc.aio.ServerInterceptor:
    async def refuse(request: object, context: grpc.aio.ServicerContext) -> None:
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong bearer token")

    refusal = grpc.unary_unary_rpc_method_handler(refuse)

    class TokenCheck(grpc.aio.ServerInterceptor):  # type: ignore[misc]
        async def intercept_service(
            self,
            continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
            details: grpc.HandlerCallDetails,
        ) -> grpc.RpcMethodHandler:
            metadata = dict(details.invocation_metadata or ())
            if credentials.caller(metadata.get(AUTHORIZATION)) is not None:
                return await continuation(details)
            return refusal

    return TokenCheck()


def serve_aio(
    backend: MasterBackend,
    saves: Saves,
    host: str = "127.0.0.1",
    port: int = 0,
    token: str | None = None,
    on_call: OnCall | None = None,
    shard_streams: int = 0,
) -> AioServer:
    """Serve ``backend`` on ``host:port`` (0: a free port) from a new event-loop thread;
    returns once it serves. ``saves`` writes what the backend's calls changed (their own
    writes are deferred on the loop thread). Token rule as ``rpc.server.serve``."""
    check_job_bind(host, token)
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="master-rpc-loop", daemon=True)
    thread.start()
    writer = futures.ThreadPoolExecutor(1, thread_name_prefix="master-save")
    streams: StreamSlots[asyncio.Task[Any]] = StreamSlots(shard_streams)

    credentials = JobCredentials(token) if token else None
    gate = NodeGate(credentials, getattr(backend, "same_world", None))

    async def start() -> tuple[grpc.aio.Server, int]:
        saves.defer_flushes_here()  # this loop's calls save in their coroutine
        servicer = _Servicer(backend, saves, writer, on_call, streams, gate)
        server = grpc.aio.server(
            interceptors=[_token_interceptor(credentials)] if credentials else None,
            options=list(MASTER_SERVER_OPTIONS),
        )
        for sync, base, add, service in _services(backend, gate):
            handlers = base()
            for method in service.methods:
                if not (method.client_streaming or method.server_streaming):
                    setattr(handlers, method.name, servicer.unary(sync, method.name))
            if isinstance(handlers, pb_grpc.MasterServicer):
                assert isinstance(sync, MasterServicer)
                handlers.Attach = servicer.attach  # type: ignore[method-assign]
                handlers.LeaseShardsStream = servicer.lease_stream(sync)  # type: ignore[method-assign]
            add(handlers, decoding(server))  # undecodable requests: INVALID_ARGUMENT
        bound = bind(server, host, port, "master RPC server")
        await server.start()
        return server, bound

    try:
        server, bound = asyncio.run_coroutine_threadsafe(start(), loop).result(_START_TIMEOUT_S)
    except BaseException:
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()
        writer.shutdown()
        raise
    log.info(
        "event=rpc_serving address=%s:%d token=%s aio=yes", host, bound, "yes" if token else "no"
    )
    return AioServer(host, bound, server, loop, thread, writer)
