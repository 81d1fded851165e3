"""Hostile or broken clients over the real gRPC server: fake shard reports cannot finish a job,
a huge dataset registration and oversized KV values are refused at once, and a KVAdd overflow
is INVALID_ARGUMENT with a message (never gRPC's bare UNKNOWN)."""

import time
from collections.abc import Iterator

import grpc
import pytest

from flexjob.api.errors import InvalidSpecError, NotFoundError
from flexjob.api.limits import MAX_KV_VALUE_BYTES
from flexjob.core.training.dataset import Dataset
from flexjob.core.training.master_config import RPC_SERVERS, MasterConfig, RpcConfig
from flexjob.master.main import serve_master
from flexjob.master.service import MasterService
from flexjob.rpc.client import MasterClient
from flexjob.rpc.gen import master_pb2 as pb
from flexjob.rpc.gen import master_pb2_grpc as pb_grpc

SHARDS = 10


@pytest.fixture(params=RPC_SERVERS)
def address(request: pytest.FixtureRequest) -> Iterator[str]:
    config = MasterConfig(
        job_name="hostile",
        datasets=(Dataset(size=SHARDS * 4, shard_size=4, epochs=2),),
        rpc=RpcConfig(server=request.param),
    )
    server = serve_master(MasterService(config), None)
    yield server.address
    server.stop(0)


def _client(address: str, node: str) -> MasterClient:
    return MasterClient(address, node, timeout=5, retry_deadline=2)


def test_fake_reports_of_every_shard_id_count_nothing(address: str) -> None:
    with _client(address, "worker-0") as honest, _client(address, "intruder") as fake:
        held = honest.get_shard()
        assert held.has_shard and held.epoch == 0
        # every shard id of both epochs: held by another node, never handed out, or of an
        # epoch not opened yet
        accepted = [sid for sid in range(2 * SHARDS) if fake.report_shard(sid)]
        assert accepted == []
        progress = fake.get_progress()
        assert (progress.samples_done, progress.finished) == (0, False)
        assert honest.report_shard(held.shard_id) is True
        assert fake.get_progress().samples_done == 4


def _register(address: str, **fields: object) -> None:
    """A raw RegisterDataset call, as a hostile client sends it (no client-side checks)."""
    channel = grpc.insecure_channel(address)
    try:
        stub = pb_grpc.MasterStub(channel)  # type: ignore[no-untyped-call]
        stub.RegisterDataset(pb.RegisterDatasetRequest(**fields), timeout=10)
    finally:
        channel.close()


def test_a_billion_sample_dataset_registration_is_refused_at_once(address: str) -> None:
    start = time.monotonic()
    with pytest.raises(grpc.RpcError) as refused:
        _register(address, name="huge", size=10**9, shard_size=1, epochs=1)
    assert refused.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert "size 1000000000 is outside 1..100000000" in str(refused.value.details())
    with _client(address, "w") as client, pytest.raises(NotFoundError, match="'huge'"):
        client.get_shard("huge")
    assert time.monotonic() - start < 5  # refused, not a 28 s freeze


def test_too_many_shards_per_epoch_are_refused_naming_the_way_out(address: str) -> None:
    with pytest.raises(grpc.RpcError, match="use larger shards"):
        _register(address, name="d", size=50_000_000, shard_size=1, epochs=1)


def test_oversized_kv_value_is_refused_with_the_bound(address: str) -> None:
    with _client(address, "w") as client:
        with pytest.raises(InvalidSpecError, match=f"at most {MAX_KV_VALUE_BYTES}"):
            client.kv_set("big", b"x" * (MAX_KV_VALUE_BYTES + 1))
        assert client.kv_get("big") is None


def test_kv_add_overflow_is_invalid_argument_with_a_message(address: str) -> None:
    with _client(address, "w") as client:
        assert client.kv_add("n", 2**63 - 1) == 2**63 - 1
        with pytest.raises(InvalidSpecError, match="outside the 64-bit range"):
            client.kv_add("n", 1)
        assert client.kv_add("n", 0) == 2**63 - 1
