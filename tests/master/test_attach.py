"""Agents' Attach streams: a broken stream is the node's death at once (no heartbeat timeout),
unless a newer stream replaced it, the master is stopping or the data is done."""

import subprocess
import sys
from pathlib import Path

import pytest

from flexjob.core.training.dataset import Dataset
from flexjob.core.training.master_config import RPC_SERVERS, MasterConfig
from flexjob.master.launch import spawn_master
from flexjob.master.service import MasterService
from flexjob.rpc.client import MasterClient
from flexjob.rpc.messages import NodeRef
from tests.core.clock import FakeClock
from tests.master.conftest import wait_for
from tests.master.test_service import A, B, C, form_world, make


def test_a_broken_stream_is_the_nodes_death(tmp_path: Path) -> None:
    svc = make(tmp_path, FakeClock())
    form_world(svc, A, B, C)
    lost = svc.get_shard(C, "")
    token = svc.attach(C)
    svc.detach(C, token)
    assert svc.nodes_waiting(A).num_nodes_waiting >= 1  # the world broke at once
    assert svc.get_shard(A, "").shard_id == lost.shard_id  # its shard went back


def test_a_replaced_stream_or_a_stopping_master_is_no_death(tmp_path: Path) -> None:
    svc = make(tmp_path, FakeClock())
    form_world(svc, A, B, C)
    old = svc.attach(C)
    svc.attach(C)  # its agent restarted and attached again
    svc.detach(C, old)
    b = svc.attach(B)
    svc.closing()
    svc.detach(B, b)
    assert svc.nodes_waiting(A).num_nodes_waiting == 0
    assert svc.get_world(A, 1).members == ("a", "b", "c")


def test_a_node_that_succeeded_leaves_without_breaking_the_world(tmp_path: Path) -> None:
    svc = make(tmp_path, FakeClock())  # no datasets: a plain script's job never "finishes"
    form_world(svc, A, B, C)
    token = svc.attach(C)
    svc.node_succeeded(C)
    svc.detach(C, token)
    assert svc.nodes_waiting(A).num_nodes_waiting == 0
    assert svc.get_world(A, 1).members == ("a", "b", "c")


def test_a_world_that_breaks_gives_up_its_store_waits_once(tmp_path: Path) -> None:
    """Ranks still forming a world whose member died wait for a peer that will not come: the
    master hands that world's store prefix to the store (``TcpStoreServer.abandon``), once."""
    broken: list[str] = []
    config = make(tmp_path, FakeClock()).config
    svc = MasterService(config, on_world_broken=broken.append, clock=FakeClock())
    form_world(svc, A, B, C)
    prefix = svc.get_world(A, 1).store_prefix
    svc.report_failure(C, "killed", -9, restarting=True)
    svc.detach(B, svc.attach(B))  # a second death in the same broken world
    assert broken == [prefix]


def test_running_nodes_are_those_neither_succeeded_nor_dead(tmp_path: Path) -> None:
    svc = make(tmp_path, FakeClock())
    form_world(svc, A, B, C)
    for node in (A, B, C):
        svc.heartbeat(node, 0.0)
    svc.nodes_waiting(NodeRef("c.1"))  # C's trainer of local rank 1: not a node
    assert svc.running_nodes() == ["a", "b", "c"]
    svc.node_succeeded(C)
    svc.detach(B, svc.attach(B))  # B's agent died
    assert svc.running_nodes() == ["a"]


def test_when_the_data_is_done_agents_leave_quietly(tmp_path: Path) -> None:
    svc = make(tmp_path, FakeClock(), datasets=(Dataset(size=10, shard_size=10),))
    form_world(svc, A, B, C)
    shard = svc.get_shard(A, "")
    svc.report_shard(A, "", shard.shard_id)
    assert svc.job_finished
    svc.detach(C, svc.attach(C))
    assert svc.nodes_waiting(A).num_nodes_waiting == 0


ATTACHED = """
import sys
from flexjob.rpc.client import MasterClient
c = MasterClient(sys.argv[1], "gone")
c.join("", 1)
print("attached", flush=True)
for _ in c.attach():
    pass
"""


@pytest.mark.e2e
@pytest.mark.parametrize("server", RPC_SERVERS)
def test_a_killed_agent_process_leaves_the_world_long_before_its_heartbeat_times_out(
    process_config: MasterConfig, server: str
) -> None:
    config = process_config.with_overrides(node_health__heartbeat_timeout=600.0, rpc__server=server)
    master = spawn_master(config)
    try:
        with MasterClient(master.address, "stays") as stays:
            stays.join("", 1)
            agent = subprocess.Popen(
                [sys.executable, "-c", ATTACHED, master.address], stdout=subprocess.PIPE
            )
            assert agent.stdout is not None and agent.stdout.readline() == b"attached\n"
            wait_for(lambda: stays.get_world().complete, what="a world of two")
            assert stays.get_world().members == ("stays", "gone")
            agent.kill()
            agent.wait()
            # Nothing but the closed stream can tell the master within the wait.
            wait_for(lambda: stays.nodes_waiting().num_nodes_waiting > 0, 60, "the world broken")
            assert (
                "node=gone reason='connection lost'"
                in (Path(config.job_dir or "") / "master.log").read_text()
            )
    finally:
        master.stop()
