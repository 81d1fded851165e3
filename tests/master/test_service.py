"""MasterService without the network: a fake clock drives heartbeats and rounds."""

from pathlib import Path

import pytest

from flexjob.api.errors import NotFoundError
from flexjob.core.training.dataset import Dataset
from flexjob.master.service import MasterService
from flexjob.rpc.messages import NodeRef, NodeStats
from tests.core.clock import FakeClock
from tests.support.masters import master_config

A, B, C = NodeRef("a"), NodeRef("b"), NodeRef("c")


def make(tmp_path: Path, clock: FakeClock, **kw: object) -> MasterService:
    settings = {
        "datasets": (Dataset(size=30, shard_size=10),),
        "rendezvous__min_nodes": 2,
        "rendezvous__max_nodes": 3,
        "rendezvous__last_call_timeout": 1.0,
        "node_health__heartbeat_timeout": 5.0,
    }
    config = master_config("svc", tmp_path, **{**settings, **kw})
    return MasterService(config, clock=clock)


def form_world(svc: MasterService, *nodes: NodeRef) -> None:
    for n in nodes:
        svc.join(n, f"{n.node_id}:1", 1)


def test_silent_node_is_declared_dead_and_its_shards_go_back(tmp_path: Path) -> None:
    clock = FakeClock()
    svc = make(tmp_path, clock)
    form_world(svc, A, B, C)
    lost = svc.get_shard(C, "")
    clock.advance(3)
    svc.heartbeat(A, 0)
    svc.heartbeat(B, 0)
    clock.advance(3)
    svc.check()
    assert svc.get_shard(A, "").shard_id == lost.shard_id
    assert svc.nodes_waiting(A).num_nodes_waiting >= 1


def test_survivors_rejoin_into_a_new_round_without_the_dead_node(tmp_path: Path) -> None:
    clock = FakeClock()
    svc = make(tmp_path, clock)
    form_world(svc, A, B, C)
    clock.advance(6)
    svc.heartbeat(A, 0)
    svc.heartbeat(B, 0)
    svc.check()  # c is silent → dead
    form_world(svc, A, B)
    clock.advance(1.1)
    svc.check()
    world = svc.get_world(A, 0)
    assert world.complete and world.round == 2 and world.members == ("a", "b")


def test_failure_without_restart_removes_the_node(tmp_path: Path) -> None:
    clock = FakeClock()
    svc = make(tmp_path, clock)
    form_world(svc, A, B, C)
    lost = svc.get_shard(C, "")
    svc.report_failure(C, "disk full", 1, restarting=False)
    assert svc.nodes_waiting(A).num_nodes_waiting >= 1
    assert svc.get_shard(A, "").shard_id == lost.shard_id


def test_restarted_service_continues_from_the_state_file(tmp_path: Path) -> None:
    clock = FakeClock()
    first = make(tmp_path, clock)
    form_world(first, A, B, C)
    done = first.get_shard(A, "")
    first.report_shard(A, "", done.shard_id)
    first.get_shard(B, "")  # in progress when the master dies: handed out again
    second = make(tmp_path, clock)
    ids = {second.get_shard(A, "").shard_id, second.get_shard(A, "").shard_id}
    assert done.shard_id not in ids and len(ids) == 2
    assert second.get_world(B, 0).round == 1 and second.get_world(B, 0).rank == 1
    assert second.get_progress(A, "").samples_done == 10


def test_stats_are_kept_per_node_and_saved(tmp_path: Path) -> None:
    clock = FakeClock()
    svc = make(tmp_path, clock)
    svc.report_stats(A, NodeStats(cpu_percent=80.0, step=7, samples_per_second=12.5))
    svc.check()
    again = make(tmp_path, clock)
    assert again._stats.nodes["a"].latest.step == 7


def test_batch_plan_is_not_found_when_the_job_has_none(tmp_path: Path) -> None:
    svc = make(tmp_path, FakeClock())
    with pytest.raises(NotFoundError, match=r"spec\.batch"):
        svc.get_batch_plan(A, 0, 1)


def test_a_node_whose_join_was_lost_in_a_restart_gets_into_the_next_round(
    tmp_path: Path,
) -> None:
    clock = FakeClock()
    first = make(tmp_path, clock)
    first.join(A, "a:1", 1)  # waiting for a second node when the master dies
    second = make(tmp_path, clock)
    second.join(B, "b:1", 1)
    assert not second.get_world(A, 1).complete  # A polls: it waits again
    clock.advance(1.1)
    world = second.get_world(A, 1)
    assert world.complete and set(world.members) == {"a", "b"}


def test_restored_world_keeps_the_rank_zero_store_address(tmp_path: Path) -> None:
    clock = FakeClock()
    first = make(tmp_path, clock, rendezvous__max_nodes=2)
    form_world(first, A, B)
    first.check()
    second = make(tmp_path, clock, rendezvous__max_nodes=2)
    assert second.get_world(B, 1).store_address == "a:1"
