"""Hostile calls to a parameter-server replica over gRPC: tensors whose shape, dtype or size
lie (a shape whose element count wraps around int64 included), ids out of range, unknown
tables, a model that disagrees with the declared one. Each is INVALID_ARGUMENT or NOT_FOUND
naming the field, and the PS's parameters and rows are as they were."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import grpc
import numpy as np
import pytest

from flexjob.core.ps.optim import OptimizerKind, OptimizerSpec
from flexjob.core.ps.parameters import ModelSpec
from flexjob.core.ps.table import TableSpec
from flexjob.ps.service import PsService
from flexjob.rpc.gen import ps_pb2 as pb
from flexjob.rpc.gen import ps_pb2_grpc as pb_grpc
from flexjob.rpc.ps_client import PsClient
from flexjob.rpc.ps_convert import tensor_to_pb
from flexjob.rpc.ps_server import serve_ps

from .conftest import CALL_TIMEOUT, assert_refused

MODEL = ModelSpec(
    OptimizerSpec(OptimizerKind.SGD, lr=0.5),
    (TableSpec("user", 4, num_rows=1000, init_scale=0.1),),
    {"w": np.ones((2, 3), dtype=np.float32)},
)
INVALID, NOT_FOUND = grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND


@dataclass
class Ps:
    stub: pb_grpc.ParameterServerStub
    client: PsClient

    def books(self) -> tuple[object, ...]:
        version, dense = self.client.pull_dense()
        rows = self.client.lookup("user", np.array([1, 2], dtype=np.int64))
        stats = self.client.stats()
        return version, {k: v.tolist() for k, v in dense.items()}, rows.tolist(), stats.rows


@pytest.fixture(scope="module")
def ps() -> Iterator[Ps]:
    server = serve_ps(PsService(0, 1), "127.0.0.1", 0)
    client = PsClient(server.address, retry_deadline=5.0)
    client.configure(MODEL, 1)
    client.lookup("user", np.array([1, 2], dtype=np.int64))  # rows the books read
    channel = grpc.insecure_channel(server.address)
    try:
        yield Ps(pb_grpc.ParameterServerStub(channel), client)  # type: ignore[no-untyped-call]
    finally:
        channel.close()
        client.close()
        server.stop(grace=None)


def ids_pb(*values: int) -> pb.Tensor:
    return tensor_to_pb(np.array(values, dtype=np.int64))


def grads_pb(rows: int, dim: int = 4) -> pb.Tensor:
    return tensor_to_pb(np.ones((rows, dim), dtype=np.float32))


def lying(dtype: str, shape: list[int], data: bytes) -> pb.Tensor:
    return pb.Tensor(dtype=dtype, shape=shape, data=data)


T = CALL_TIMEOUT
WRAPS = [2**32, 2**32]  # 2^64 elements: 0 in int64 arithmetic, so 0 bytes "held" the shape
Call = Callable[[Ps], object]


def push_dense(grad: pb.Tensor, name: str = "w") -> Call:
    return lambda p: p.stub.PushDense(
        pb.PushDenseRequest(grads={name: grad}, base_version=0), timeout=T
    )


def push_rows(table: str, ids: pb.Tensor, grads: pb.Tensor) -> Call:
    return lambda p: p.stub.PushRows(
        pb.PushRowsRequest(table=table, ids=ids, grads=grads), timeout=T
    )


def lookup(table: str, ids: pb.Tensor) -> Call:
    return lambda p: p.stub.Lookup(pb.LookupRequest(table=table, ids=ids), timeout=T)


PROBES: dict[str, tuple[Call, grpc.StatusCode, str]] = {
    "shape whose size wraps int64": (push_dense(lying("float32", WRAPS, b"")), INVALID, "grads[w]"),
    "shape of int64-max rows": (
        push_dense(lying("float32", [2**63 - 1, 3], b"")),
        INVALID,
        "grads[w]",
    ),
    "ids shape that wraps int64": (lookup("user", lying("int64", [2**62, 4], b"")), INVALID, "ids"),
    "negative dimension": (push_dense(lying("float32", [-2, -3], b"\0" * 24)), INVALID, "negative"),
    "bytes that do not fill the shape": (
        push_dense(lying("float32", [2, 3], b"\0" * 7)),
        INVALID,
        "bytes",
    ),
    "an unknown dtype": (push_dense(lying("complex512", [2, 3], b"\0" * 24)), INVALID, "dtype"),
    "int64 gradients": (
        push_dense(tensor_to_pb(np.ones((2, 3), dtype=np.int64))),
        INVALID,
        "dtype",
    ),
    "a dense gradient of the wrong shape": (
        push_dense(tensor_to_pb(np.ones((3, 2), dtype=np.float32))),
        INVALID,
        "shape",
    ),
    "an unknown dense parameter": (
        push_dense(tensor_to_pb(np.ones((2, 3), dtype=np.float32)), "nope"),
        NOT_FOUND,
        "nope",
    ),
    "lookup of an unknown table": (lookup("nope", ids_pb(1)), NOT_FOUND, "nope"),
    "lookup of an id past num_rows": (lookup("user", ids_pb(1000)), INVALID, "out of range"),
    "lookup of a negative id": (lookup("user", ids_pb(-1)), INVALID, "out of range"),
    "lookup with 2-d ids": (
        lookup("user", tensor_to_pb(np.ones((2, 2), dtype=np.int64))),
        INVALID,
        "1-d",
    ),
    "lookup with float ids": (
        lookup("user", tensor_to_pb(np.ones(2, dtype=np.float32))),
        INVALID,
        "dtype",
    ),
    "push of rows for fewer ids": (push_rows("user", ids_pb(1, 2), grads_pb(1)), INVALID, "grads"),
    "push of rows of the wrong width": (
        push_rows("user", ids_pb(1), grads_pb(1, dim=5)),
        INVALID,
        "grads",
    ),
    "push of rows to an unknown table": (
        push_rows("nope", ids_pb(1), grads_pb(1)),
        NOT_FOUND,
        "nope",
    ),
    "push of rows past num_rows": (
        push_rows("user", ids_pb(5000), grads_pb(1)),
        INVALID,
        "out of range",
    ),
    "a model that disagrees": (
        lambda p: p.stub.Configure(
            pb.ConfigureRequest(num_ps=1, tables=[pb.TableSpec(name="user", dim=9)]), timeout=T
        ),
        INVALID,
        "",
    ),
}


@pytest.mark.parametrize(("call", "code", "says"), PROBES.values(), ids=PROBES.keys())
def test_a_hostile_ps_call_is_refused_by_its_field_and_changes_nothing(
    ps: Ps, call: Call, code: grpc.StatusCode, says: str
) -> None:
    before = ps.books()
    assert_refused(lambda: call(ps), code, says)
    assert ps.books() == before
