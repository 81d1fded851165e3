"""A real master subprocess with simulated agents over RPC."""

from collections import Counter

import pytest

from flexjob.master.launch import MasterProcess
from tests.master.conftest import wait_for
from tests.master.sim_agent import SimAgent

pytestmark = pytest.mark.e2e


def test_dead_agent_shards_are_redispatched_and_a_new_world_forms(
    master_process: MasterProcess,
) -> None:
    agents = [SimAgent(master_process.address, f"worker-{i}", step_time=0.05) for i in range(4)]
    for a in agents:
        a.start()
    wait_for(lambda: all(a.worlds for a in agents), what="the first world")
    assert {a.worlds[0].world_size for a in agents} == {4}
    victim = agents[3]
    wait_for(lambda: len(victim.received) > len(victim.counted), what="victim holding a shard")
    victim.kill()
    lost = set(victim.received) - {s.shard_id for s in victim.counted}
    assert lost
    survivors = agents[:3]
    wait_for(lambda: all(a.worlds[-1].world_size == 3 for a in survivors), what="a world of three")
    wait_for(
        lambda: lost <= {sid for a in survivors for sid in a.received}, what="lost shards resent"
    )
    new_world = survivors[0].worlds[-1]
    assert new_world.round > agents[0].worlds[0].round
    assert "worker-3" not in new_world.members
    first = agents[0].worlds[0].members
    assert new_world.members == tuple(m for m in first if m != "worker-3")  # ranks by age
    for a in survivors:
        a.kill()
        assert a.error is None, a.error


def test_agents_finish_every_sample_of_every_epoch_once(master_process: MasterProcess) -> None:
    agents = [SimAgent(master_process.address, f"worker-{i}", step_time=0.0) for i in range(4)]
    for a in agents:
        a.start()
    for a in agents:
        a.join_thread(60)
    assert all(a.finished and a.error is None for a in agents)
    counted = Counter((s.epoch, i) for a in agents for s in a.counted for i in s.sample_indices())
    assert set(counted) == {(e, i) for e in range(2) for i in range(400)}
    assert set(counted.values()) == {1}
