"""A PS replica over real gRPC on 127.0.0.1: the calls a trainer makes, and bad input."""

import numpy as np
import pytest

from flexjob.api.errors import InvalidSpecError, NotFoundError
from flexjob.rpc.gen import ps_pb2 as pb
from flexjob.rpc.gen import ps_pb2_grpc as pb_grpc
from flexjob.rpc.ps_client import PsClient
from flexjob.rpc.ps_convert import tensor_to_pb
from flexjob.rpc.server import RunningServer

from .conftest import MODEL


def ids(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.int64)


def test_first_configure_creates_and_the_next_agrees(client: PsClient) -> None:
    assert client.configure(MODEL, 1) == (0, True)
    assert client.configure(MODEL, 1) == (0, False)


def test_lookup_creates_rows_and_pushes_sum_duplicate_ids(client: PsClient) -> None:
    client.configure(MODEL, 1)
    np.testing.assert_array_equal(client.lookup("user", ids(3, 4)), np.zeros((2, 4)))
    grads = np.ones((3, 4), dtype=np.float32)
    assert client.push_rows("user", ids(3, 3, 4), grads) == 2
    np.testing.assert_allclose(client.lookup("user", ids(4, 3)), [[-0.5] * 4, [-1.0] * 4])
    stats = client.stats()
    assert stats.rows == 2 and stats.tables["user"][0] == 2
    assert stats.requests == 4 and stats.memory_bytes > 0


def test_push_lookup_applies_the_push_before_the_lookup_in_one_call(client: PsClient) -> None:
    client.configure(MODEL, 1)
    client.lookup("user", ids(3, 4))  # rows start at zero
    grads = np.ones((3, 4), dtype=np.float32)
    updated, rows = client.push_lookup_async("user", ids(4, 3, 9), ids(3, 3, 4), grads).result()
    assert updated == 2
    np.testing.assert_allclose(rows, [[-0.5] * 4, [-1.0] * 4, [0.0] * 4])
    assert client.push_lookup_async("user", ids(9)).result()[0] == 0  # nothing to push
    # A bad part fails the whole call by its field, and the push part changes nothing.
    with pytest.raises(InvalidSpecError, match=r"ids: id 1000 out of range \[0, 1000\)"):
        client.push_lookup_async("user", ids(1000), ids(3), grads[:1]).result()
    with pytest.raises(InvalidSpecError, match=r"grads: shape \[2, 4\] does not match"):
        client.push_lookup_async("user", ids(3), ids(3), grads[:2]).result()
    np.testing.assert_allclose(client.lookup("user", ids(3)), [[-1.0] * 4])


def test_unbounded_table_serves_huge_ids_without_materialising(client: PsClient) -> None:
    client.configure(MODEL, 1)
    rows = client.lookup("item", ids(10**12, 7))
    assert rows.shape == (2, 2) and np.abs(rows).max() <= 0.1
    assert client.stats().tables["item"] == (2, 2 * (2 * 4 + 8))


def test_dense_pull_push_and_version(client: PsClient) -> None:
    client.configure(MODEL, 1)
    version, params = client.pull_dense()
    assert version == 0
    np.testing.assert_array_equal(params["w"], np.ones((2, 3)))
    assert client.push_dense_async({"w": np.full((2, 3), 2, np.float32)}, 0).result() == 1
    assert client.pull_dense(known_version=1) == (1, {})
    version, params = client.pull_dense(known_version=0)
    assert version == 1
    np.testing.assert_array_equal(params["w"], np.zeros((2, 3)))


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda c: c.lookup("nope", ids(1)), NotFoundError, "table: unknown table 'nope'"),
        (
            lambda c: c.lookup("user", ids(1000)),
            InvalidSpecError,
            r"ids: id 1000 out of range \[0, 1000\) of table 'user'",
        ),
        (
            lambda c: c.push_rows("user", ids(1), np.ones((1, 3), np.float32)),
            InvalidSpecError,
            r"grads: shape \[1, 3\] does not match ids x dim \[1, 4\]",
        ),
        (
            lambda c: c.push_dense_async({"w": np.ones((3, 2), np.float32)}, 0).result(),
            InvalidSpecError,
            r"grads\[w\]: shape \[3, 2\]",
        ),
        (
            lambda c: c.push_dense_async({"v": np.ones(1, np.float32)}, 0).result(),
            NotFoundError,
            "grads: unknown dense parameter 'v'",
        ),
        (
            lambda c: c.push_rows("user", ids(1), np.ones((1, 4), np.int64)),
            InvalidSpecError,
            "grads.dtype: must be float32, got int64",
        ),
        (lambda c: c.configure(MODEL, 2), InvalidSpecError, "num_ps: the caller partitioned"),
    ],
)
def test_bad_input_gets_an_error_naming_the_field_and_the_ps_keeps_serving(
    client: PsClient, call: object, error: type[Exception], message: str
) -> None:
    client.configure(MODEL, 1)
    with pytest.raises(error, match=message):
        call(client)  # type: ignore[operator]
    assert client.lookup("user", ids(1)).shape == (1, 4)


def test_malformed_tensors_are_rejected_by_field(server: RunningServer, client: PsClient) -> None:
    import grpc

    client.configure(MODEL, 1)
    with grpc.insecure_channel(server.address) as channel:
        stub = pb_grpc.ParameterServerStub(channel)
        bad_bytes = pb.Tensor(dtype="int64", shape=[3], data=b"\0" * 16)
        with pytest.raises(grpc.RpcError) as err:
            stub.Lookup(pb.LookupRequest(table="user", ids=bad_bytes))
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "ids: 16 bytes do not hold shape [3] of int64" in err.value.details()
        weird = pb.Tensor(dtype="object", shape=[1], data=b"\0" * 8)
        with pytest.raises(grpc.RpcError) as err:
            stub.Lookup(pb.LookupRequest(table="user", ids=weird))
        assert "ids.dtype: 'object' is not one of ['float32', 'int64']" in err.value.details()
        two_d = tensor_to_pb(np.zeros((2, 2), dtype=np.int64))
        with pytest.raises(grpc.RpcError) as err:
            stub.Lookup(pb.LookupRequest(table="user", ids=two_d))
        assert "ids.shape: must be 1-d, got [2, 2]" in err.value.details()
        bad_opt = pb.ConfigureRequest(optimizer=pb.Optimizer(kind="rmsprop", lr=0.1), num_ps=1)
        with pytest.raises(grpc.RpcError) as err:
            stub.Configure(bad_opt)
        assert "optimizer.kind: 'rmsprop' is not one of ['sgd', 'adagrad', 'adam']" in (
            err.value.details()
        )


def test_calls_before_configure_say_what_to_do(client: PsClient) -> None:
    with pytest.raises(NotFoundError, match="unknown table 'user'; this PS holds \\[\\]"):
        client.lookup("user", ids(1))
    with pytest.raises(InvalidSpecError, match="call Configure first"):
        client.push_dense_async({}, 0).result()
