"""The master's control of a PS replica during a PS-set change (``ps_control.proto``): the
``PsControlBackend`` a PS implements (``ps.set_member``), its servicer, and the client the
master's driver (``master.ps_sets``) calls. Not for the protocol's rules
(``core.ps.set_change``).
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, TypeVar

import grpc

from flexjob.api.errors import FlexjobError, InvalidSpecError, NotFoundError
from flexjob.core.ps.set_change import RowTotals
from flexjob.rpc.gen import ps_control_pb2 as pb
from flexjob.rpc.gen import ps_control_pb2_grpc as pb_grpc
from flexjob.rpc.retry import RetryingClient

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Checkpointed:
    path: str
    version: int
    totals: RowTotals


class PsControlBackend(Protocol):
    def pause(self) -> int:
        """Refuse data calls, wait for those in flight; returns how many were waited for."""
        ...

    def checkpoint(self) -> Checkpointed: ...

    def load(self, index: int, num_ps: int, from_num_ps: int, set_version: int) -> RowTotals: ...

    def resume(self, set_version: int) -> None: ...


def totals_to_pb(t: RowTotals) -> pb.Totals:
    return pb.Totals(rows=t.rows, id_sum=t.id_sum, value_sum=t.value_sum)


def totals_from_pb(m: pb.Totals) -> RowTotals:
    return RowTotals(int(m.rows), int(m.id_sum), float(m.value_sum))


def _run(context: grpc.ServicerContext, fn: Callable[[], T]) -> T:
    try:
        return fn()
    except InvalidSpecError as exc:
        context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        raise
    except NotFoundError as exc:
        context.abort(grpc.StatusCode.NOT_FOUND, str(exc))
        raise
    except (FlexjobError, OSError, TimeoutError) as exc:
        context.abort(grpc.StatusCode.FAILED_PRECONDITION, f"{type(exc).__name__}: {exc}")
        raise


class PsControlServicer(pb_grpc.PsControlServicer):
    def __init__(self, backend: PsControlBackend) -> None:
        self._b = backend

    def Pause(self, request: pb.PauseRequest, context: grpc.ServicerContext) -> pb.PauseResponse:
        return pb.PauseResponse(in_flight_waited=_run(context, self._b.pause))

    def Checkpoint(
        self, request: pb.CheckpointRequest, context: grpc.ServicerContext
    ) -> pb.CheckpointResponse:
        done = _run(context, self._b.checkpoint)
        return pb.CheckpointResponse(
            path=done.path, version=done.version, totals=totals_to_pb(done.totals)
        )

    def Load(self, request: pb.LoadRequest, context: grpc.ServicerContext) -> pb.LoadResponse:
        totals = _run(
            context,
            lambda: self._b.load(
                request.index, request.num_ps, request.from_num_ps, request.set_version
            ),
        )
        return pb.LoadResponse(totals=totals_to_pb(totals))

    def Resume(self, request: pb.ResumeRequest, context: grpc.ServicerContext) -> pb.ResumeResponse:
        _run(context, lambda: self._b.resume(request.set_version))
        return pb.ResumeResponse()


def add_control(server: grpc.Server, backend: PsControlBackend) -> None:
    pb_grpc.add_PsControlServicer_to_server(PsControlServicer(backend), server)  # type: ignore[no-untyped-call]


class PsControlClient(RetryingClient):
    """The master's client of one PS's control service; unreachable PS are retried until
    ``retry_deadline``."""

    SERVER = "PS control"

    def __init__(
        self,
        address: str,
        *,
        timeout: float = 120.0,
        retry_deadline: float = 30.0,
        token: str | None = None,
    ) -> None:
        from flexjob.rpc.ps_server import GRPC_OPTIONS  # numpy: only once the job has a PS

        super().__init__(address, timeout, retry_deadline, token=token)
        self._channel = grpc.insecure_channel(address, options=GRPC_OPTIONS)
        self._stub = pb_grpc.PsControlStub(self._channel)  # type: ignore[no-untyped-call]

    def close(self) -> None:
        self._channel.close()

    def pause(self) -> int:
        return int(self._call(self._stub.Pause, pb.PauseRequest()).in_flight_waited)

    def checkpoint(self) -> Checkpointed:
        resp = self._call(self._stub.Checkpoint, pb.CheckpointRequest())
        return Checkpointed(resp.path, int(resp.version), totals_from_pb(resp.totals))

    def load(self, index: int, num_ps: int, from_num_ps: int, set_version: int) -> RowTotals:
        req = pb.LoadRequest(
            index=index, num_ps=num_ps, from_num_ps=from_num_ps, set_version=set_version
        )
        return totals_from_pb(self._call(self._stub.Load, req).totals)

    def resume(self, set_version: int) -> None:
        self._call(self._stub.Resume, pb.ResumeRequest(set_version=set_version))
