"""Bytes that are not the method's message, sent raw (a generic channel, no serializer) to the
job master's two services (on both of its servers) and to a PS replica: each call is
INVALID_ARGUMENT naming the message it is not (never INTERNAL or UNKNOWN), on every message of
a stream too, and the books are as they were."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import grpc
import pytest

from flexjob.ps.service import PsService
from flexjob.rpc.gen import master_pb2 as pb
from flexjob.rpc.ps_server import serve_ps

from .conftest import CALL_TIMEOUT, Master, assert_refused, node, served_master

#: Not a protobuf message: field 0 is never valid, then a varint that never ends.
GARBAGE = b"\x00\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"
INVALID = grpc.StatusCode.INVALID_ARGUMENT
MASTER, CONTROL = "/flexjob.rpc.v1.Master/", "/flexjob.rpc.v1.MasterControl/"


@pytest.fixture(params=["threads", "aio"])
def any_master(request: pytest.FixtureRequest) -> Iterator[Master]:
    with served_master(request.param) as served:
        yield served


def _unary(channel: grpc.Channel, path: str) -> Callable[[], object]:
    call = channel.unary_unary(path, request_serializer=None, response_deserializer=None)
    return lambda: call(GARBAGE, timeout=CALL_TIMEOUT)


UNARY = [
    (MASTER + "JoinRendezvous", "JoinRequest"),
    (MASTER + "RegisterDataset", "RegisterDatasetRequest"),
    (MASTER + "ReportShard", "ReportShardRequest"),
    (MASTER + "LeaseShards", "LeaseShardsRequest"),
    (CONTROL + "KVSet", "KVSetRequest"),
    (CONTROL + "ExcludeNodes", "ExcludeRequest"),
]


@pytest.mark.parametrize(("path", "message"), UNARY, ids=[p for p, _ in UNARY])
def test_undecodable_bytes_to_a_master_method_are_refused_naming_its_message(
    any_master: Master, path: str, message: str
) -> None:
    before = any_master.books()
    assert_refused(_unary(any_master.channel, path), INVALID, message)
    assert any_master.books() == before


@pytest.mark.parametrize("rpc_server", ["threads", "aio"])
def test_undecodable_bytes_with_the_token_are_refused_and_without_it_unauthenticated(
    rpc_server: str,
) -> None:
    """The token is checked first; bytes that pass it are still refused by their message."""
    with served_master(rpc_server, token="s3cret") as guarded:
        call = guarded.channel.unary_unary(
            MASTER + "JoinRendezvous", request_serializer=None, response_deserializer=None
        )
        bearer = (("authorization", "Bearer s3cret"),)
        before = guarded.books()
        assert_refused(
            lambda: call(GARBAGE, timeout=CALL_TIMEOUT, metadata=bearer), INVALID, "JoinRequest"
        )
        assert_refused(
            lambda: call(GARBAGE, timeout=CALL_TIMEOUT),
            grpc.StatusCode.UNAUTHENTICATED,
            "bearer token",
        )
        assert guarded.books() == before


def test_undecodable_bytes_opening_an_attach_stream_are_refused(any_master: Master) -> None:
    before = any_master.books()
    call = any_master.channel.unary_stream(
        MASTER + "Attach", request_serializer=None, response_deserializer=None
    )
    assert_refused(lambda: list(call(GARBAGE, timeout=CALL_TIMEOUT)), INVALID, "AttachRequest")
    assert any_master.books() == before


def test_an_undecodable_message_in_a_lease_stream_ends_it_after_the_good_ones(
    any_master: Master,
) -> None:
    """The stream answers the good request before the bad one, then ends INVALID_ARGUMENT."""
    call = any_master.channel.stream_stream(
        MASTER + "LeaseShardsStream", request_serializer=None, response_deserializer=None
    )
    good = pb.LeaseShardsRequest(node=node(), dataset="train", count=1).SerializeToString()
    replies: list[bytes] = []

    def stream() -> None:
        for reply in call(iter([good, GARBAGE, good]), timeout=CALL_TIMEOUT):
            replies.append(reply)

    assert_refused(stream, INVALID, "LeaseShardsRequest")
    assert len(replies) == 1  # the first request was served, nothing after the bad one
    leased = pb.LeaseShardsResponse.FromString(replies[0])
    assert len(leased.shards) == 1


def test_undecodable_bytes_to_a_ps_method_are_refused_naming_its_message() -> None:
    server = serve_ps(PsService(0, 1), "127.0.0.1", 0)
    channel = grpc.insecure_channel(server.address)
    try:
        path = "/flexjob.rpc.ps.v1.ParameterServer/PushRows"
        assert_refused(_unary(channel, path), INVALID, "PushRowsRequest")
    finally:
        channel.close()
        server.stop(grace=None)
