"""MasterClient against a real in-process master over gRPC on loopback."""

import dataclasses
import threading

import pytest

from flexjob.api.errors import InvalidSpecError, NotFoundError, UnavailableError
from flexjob.core.training.batch import BatchPlan
from flexjob.core.training.master_config import MasterConfig
from flexjob.master.main import MasterHandle, start_master
from flexjob.platform.ports import free_port
from flexjob.rpc.client import MasterClient
from flexjob.rpc.messages import NodeRef, NodeStats


def clients(master: MasterHandle, n: int = 2) -> list[MasterClient]:
    return [MasterClient(master.address, NodeRef(f"worker-{i}", "worker", i)) for i in range(n)]


def test_two_nodes_join_and_get_ranks_in_join_order(master: MasterHandle) -> None:
    a, b = clients(master)
    assert a.join("10.0.0.1:29500") == 1 and b.join("10.0.0.2:29500") == 1
    wa, wb = a.wait_world(5), b.wait_world(5)
    assert (wa.rank, wb.rank, wa.world_size, wa.round) == (0, 1, 2, 1)
    assert wa.members == ("worker-0", "worker-1")
    assert wa.store_address == "10.0.0.1:29500"  # no master store: rank 0's address
    assert wa.store_prefix == "rpcjob/round-1/"


def test_get_shard_and_report_round_trip(master: MasterHandle) -> None:
    (a,) = clients(master, 1)
    shard = a.get_shard()
    assert shard.has_shard and shard.sample_indices() == (0, 1, 2, 3, 4)
    assert a.report_shard(shard.shard_id) is True
    assert a.get_progress().samples_done == 5


def test_second_report_of_a_shard_by_another_node_is_refused(master: MasterHandle) -> None:
    a, b = clients(master)
    shard = a.get_shard()
    assert a.report_shard(shard.shard_id) and not b.report_shard(shard.shard_id)


def test_end_of_data_after_every_shard_is_done(master: MasterHandle) -> None:
    (a,) = clients(master, 1)
    while (shard := a.get_shard()).has_shard:
        a.report_shard(shard.shard_id)
    assert shard.end_of_data and a.heartbeat().job_finished


def test_batch_plan_keeps_the_global_batch(master: MasterHandle) -> None:
    (a,) = clients(master, 1)
    plans = [a.get_batch_plan(rank, 3) for rank in range(3)]
    assert [p.micro_batches for p in plans] == [2, 1, 1]
    assert plans[0].global_batch_size == 16


def test_an_adaptive_batch_plan_carries_its_bound_over_the_wire(
    master_config: MasterConfig,
) -> None:
    adaptive = dataclasses.replace(BatchPlan.for_global_batch(16, 4), max_global_batch_size=64)
    handle = start_master(dataclasses.replace(master_config, batch=adaptive))
    try:
        (a,) = clients(handle, 1)
        plan = a.get_batch_plan(0, 2)
        assert (plan.global_batch_size, plan.max_global_batch_size, plan.adaptive) == (16, 64, True)
    finally:
        handle.stop()
    assert not BatchPlan.for_global_batch(16, 4).for_rank(0, 2).adaptive  # fixed: bound 0


def test_bad_rank_is_an_invalid_argument(master: MasterHandle) -> None:
    (a,) = clients(master, 1)
    with pytest.raises(InvalidSpecError, match="rank must be in"):
        a.get_batch_plan(5, 2)


def test_unknown_dataset_is_not_found_naming_the_known_ones(master: MasterHandle) -> None:
    (a,) = clients(master, 1)
    with pytest.raises(NotFoundError, match="unknown dataset 'images'"):
        a.get_shard("images")


def test_kv_store_set_get_add(master: MasterHandle) -> None:
    (a,) = clients(master, 1)
    a.kv_set("k", b"\x00bytes")
    assert a.kv_get("k") == b"\x00bytes" and a.kv_get("missing") is None
    assert a.kv_add("n", 2) == 2 and a.kv_add("n", 3) == 5


def test_stats_and_failures_are_accepted(master: MasterHandle) -> None:
    (a,) = clients(master, 1)
    a.report_stats(
        NodeStats(cpu_percent=50.0, memory_bytes=1 << 20, step=3, samples_per_second=10.0)
    )
    a.report_failure("oom", exit_code=137, restarting=True)
    assert master.service._stats.nodes["worker-0"].failures == 1


def test_unreachable_master_raises_after_the_retry_deadline() -> None:
    client = MasterClient(f"127.0.0.1:{free_port()}", "w", timeout=0.2, retry_deadline=0.5)
    with pytest.raises(UnavailableError, match="unreachable"):
        client.heartbeat()


def test_client_survives_a_master_restart_on_the_same_port(master: MasterHandle) -> None:
    (a,) = clients(master, 1)
    shard = a.get_shard()
    config = master.config.with_overrides(port=master.port)
    master.stop()
    restarted: list[MasterHandle] = []
    timer = threading.Timer(0.5, lambda: restarted.append(start_master(config)))
    timer.start()
    try:
        assert a.report_shard(shard.shard_id) is True  # retried until the new master answers
    finally:
        timer.join()
        for handle in restarted:
            handle.stop()


def test_lease_reports_then_leases_in_one_call(master: MasterHandle) -> None:
    a, b = clients(master)
    first = a.lease_shards(2)
    assert [s.sample_indices() for s in first.shards] == [(0, 1, 2, 3, 4), (5, 6, 7, 8, 9)]
    done = [s.shard_id for s in first.shards]
    second = a.lease_shards(5, [*done, done[0]])  # the repeated report is acknowledged again
    assert second.accepted == (True, True, True) and len(second.shards) == 2
    assert not b.lease_shards(0, [second.shards[0].shard_id]).accepted[0]  # a's shard
    last = a.lease_shards(1, [s.shard_id for s in second.shards])
    assert last.shards == () and last.end_of_data


@pytest.mark.parametrize(
    ("count", "done", "message"),
    [(-1, 0, "count must be in 0..1024"), (1025, 0, "count must be in 0..1024"),
     (1, 1025, "done may list at most 1024 shards")],
)  # fmt: skip
def test_lease_bounds_are_invalid_arguments_naming_the_field(
    master: MasterHandle, count: int, done: int, message: str
) -> None:
    (a,) = clients(master, 1)
    with pytest.raises(InvalidSpecError, match=message):
        a.lease_shards(count, list(range(done)))
