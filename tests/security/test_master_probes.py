"""Hostile calls to the job master's two gRPC services (``Master``: rendezvous, datasets,
shards; ``MasterControl``: stats, failures, batch plans, the KV store): each is refused with a
status that names the field (never UNKNOWN or INTERNAL) and leaves the master's books as they
were."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import grpc
import pytest

from flexjob.api.limits import MAX_DATASETS, MAX_KV_KEYS, MAX_KV_TOTAL_BYTES, MAX_KV_VALUE_BYTES
from flexjob.core.training.dataset import Dataset
from flexjob.rpc.gen import master_pb2 as pb

from .conftest import CALL_TIMEOUT, SHARDS, Master, assert_refused, books_unchanged, node

T = CALL_TIMEOUT
INT64_MAX = 2**63 - 1


@dataclass(frozen=True)
class Probe:
    name: str
    call: Callable[[Master], object]
    code: grpc.StatusCode
    says: str  # in the refusal's details: the field or the bound
    setup: Callable[[Master], None] | None = None


def _register(**fields: object) -> Callable[[Master], object]:
    def call(m: Master) -> object:
        request = pb.RegisterDatasetRequest(node=node(), **fields)  # type: ignore[arg-type]
        return m.stub.RegisterDataset(request, timeout=T)

    return call


def _lease(dataset: str, count: int, done: tuple[int, ...] = ()) -> Callable[[Master], object]:
    def call(m: Master) -> object:
        request = pb.LeaseShardsRequest(node=node(), dataset=dataset, count=count, done=done)
        return m.stub.LeaseShards(request, timeout=T)

    return call


def _kv_set(key: str, size: int) -> Callable[[Master], object]:
    return lambda m: m.control.KVSet(pb.KVSetRequest(key=key, value=b"v" * size), timeout=T)


def _fill_datasets(m: Master) -> None:
    for i in range(MAX_DATASETS - 1):  # the job's own "train" is one
        m.service.register_dataset(_ref(), Dataset(name=f"d{i}", size=4, shard_size=4))


def _fill_kv_keys(m: Master) -> None:
    room = MAX_KV_KEYS - 1  # the incarnation key is there already
    for i in range(room):
        m.service.kv_set(f"filler/{i}", b"")


def _fill_kv_bytes(m: Master) -> None:
    for i in range(MAX_KV_TOTAL_BYTES // MAX_KV_VALUE_BYTES):
        m.service.kv_set(f"filler/{i}", b"x" * (MAX_KV_VALUE_BYTES - 64))


def _ref():  # type: ignore[no-untyped-def]
    from flexjob.rpc.messages import NodeRef

    return NodeRef("setup", "worker", 0)


def _kv_int_max(m: Master) -> None:
    m.service.kv_set("probe/int", str(INT64_MAX).encode())


def _kv_not_int(m: Master) -> None:
    m.service.kv_set("probe/int", b"not a number")


INVALID = grpc.StatusCode.INVALID_ARGUMENT
NOT_FOUND = grpc.StatusCode.NOT_FOUND
PROBES = [
    Probe(
        "register: file range end before start",
        _register(name="f", files=["a:5-2"], shard_size=1, epochs=1),
        INVALID,
        "row range",
    ),
    Probe(
        "register: file range of zero rows",
        _register(name="f", files=["a:3-3"], shard_size=1, epochs=1),
        INVALID,
        "row range",
    ),
    Probe(
        "register: shard size 0",
        _register(name="z", size=10, shard_size=0, epochs=1),
        INVALID,
        "shard",
    ),
    Probe(
        "register: shard size negative",
        _register(name="z", size=10, shard_size=-5, epochs=1),
        INVALID,
        "shard",
    ),
    Probe(
        "register: epochs 0",
        _register(name="e", size=10, shard_size=1, epochs=0),
        INVALID,
        "epochs",
    ),
    Probe(
        "register: epochs beyond the bound",
        _register(name="e", size=10, shard_size=1, epochs=2**31 - 1),
        INVALID,
        "epochs",
    ),
    Probe(
        "register: 10^9 samples",
        _register(name="h", size=10**9, shard_size=1000, epochs=1),
        INVALID,
        "size",
    ),
    Probe(
        "register: int64-max samples",
        _register(name="h", size=INT64_MAX, shard_size=1, epochs=1),
        INVALID,
        "size",
    ),
    Probe(
        "register: neither size nor files",
        _register(name="n", shard_size=1, epochs=1),
        INVALID,
        "size 0",
    ),
    Probe(
        "register: 2e6 shards per epoch",
        _register(name="s", size=2_000_000, shard_size=1, epochs=1),
        INVALID,
        "larger shards",
    ),
    Probe(
        "register: one dataset past the cap",
        _register(name="last", size=4, shard_size=4, epochs=1),
        INVALID,
        f"{MAX_DATASETS} datasets",
        _fill_datasets,
    ),
    Probe(
        "shard: unknown dataset",
        lambda m: m.stub.GetShard(pb.GetShardRequest(node=node(), dataset="nope"), timeout=T),
        NOT_FOUND,
        "unknown dataset",
    ),
    Probe(
        "progress: unknown dataset",
        lambda m: m.stub.GetProgress(pb.ProgressRequest(node=node(), dataset="nope"), timeout=T),
        NOT_FOUND,
        "unknown dataset",
    ),
    Probe("lease: unknown dataset", _lease("nope", 1), NOT_FOUND, "unknown dataset"),
    Probe("lease: a million shards at once", _lease("train", 1_000_000), INVALID, "count"),
    Probe("lease: negative count", _lease("train", -1), INVALID, "count"),
    Probe("lease: reports of 5000 shards", _lease("train", 0, tuple(range(5000))), INVALID, "done"),
    Probe("kv: 2 KiB key", _kv_set("k" * 2048, 1), INVALID, "key"),
    Probe("kv: value over 1 MiB", _kv_set("big", MAX_KV_VALUE_BYTES + 1), INVALID, "bytes"),
    Probe(
        "kv: one key past the key cap",
        _kv_set("probe", 1),
        INVALID,
        f"{MAX_KV_KEYS} keys",
        _fill_kv_keys,
    ),
    Probe(
        "kv: a value past the byte cap",
        _kv_set("big", MAX_KV_VALUE_BYTES - 64),
        INVALID,
        str(MAX_KV_TOTAL_BYTES),
        _fill_kv_bytes,
    ),
    Probe(
        "kv: add past int64",
        lambda m: m.control.KVAdd(pb.KVAddRequest(key="probe/int", amount=1), timeout=T),
        INVALID,
        "64-bit",
        _kv_int_max,
    ),
    Probe(
        "kv: add to a non-integer",
        lambda m: m.control.KVAdd(pb.KVAddRequest(key="probe/int", amount=1), timeout=T),
        INVALID,
        "integer",
        _kv_not_int,
    ),
    Probe(
        "kv: add with a 2 KiB key",
        lambda m: m.control.KVAdd(pb.KVAddRequest(key="k" * 2048, amount=1), timeout=T),
        INVALID,
        "key",
    ),
    Probe(
        "batch plan: job has none",
        lambda m: m.control.GetBatchPlan(
            pb.BatchPlanRequest(node=node(), rank=0, world_size=1), timeout=T
        ),
        NOT_FOUND,
        "batch",
    ),
]


@pytest.mark.parametrize("probe", PROBES, ids=[p.name for p in PROBES])
def test_a_hostile_call_is_refused_by_its_field_and_changes_nothing(
    master: Master, probe: Probe
) -> None:
    with books_unchanged(master, probe.setup):
        assert_refused(lambda: probe.call(master), probe.code, probe.says)


REPORTS = [
    ("a shard never handed out", lambda held: SHARDS - 1),
    ("a negative shard id", lambda held: -1),
    ("an int64-max shard id", lambda held: INT64_MAX),
    ("the held shard, by another node", lambda held: held),
]


@pytest.mark.parametrize(("what", "shard"), REPORTS, ids=[r[0] for r in REPORTS])
def test_a_report_of_a_shard_the_caller_does_not_hold_counts_nothing(
    master: Master, what: str, shard: Callable[[int], int]
) -> None:
    held = master.stub.GetShard(
        pb.GetShardRequest(node=node("worker-0"), dataset="train"), timeout=T
    )
    before = master.books()
    request = pb.ReportShardRequest(
        node=node("intruder"), dataset="train", shard_id=shard(held.shard_id)
    )
    assert master.stub.ReportShard(request, timeout=T).accepted is False
    assert master.books() == before


def test_a_node_id_with_a_newline_cannot_forge_a_log_line(
    master: Master, caplog: pytest.LogCaptureFixture
) -> None:
    forged = "w\nevent=dataset_finished\tjob=victim"  # no space: nothing to make it quoted
    request = pb.JoinRequest(node=node(forged), address="127.0.0.1:1", local_world_size=1)
    before = master.books()
    with caplog.at_level("INFO"):
        master.stub.JoinRendezvous(request, timeout=T)
    messages = [
        r.getMessage() for r in caplog.records if "event=dataset_finished" in r.getMessage()
    ]
    assert messages, "the join was logged with the node id"
    assert all("\n" not in m for m in messages), messages
    assert master.books()[0].datasets == before[0].datasets
