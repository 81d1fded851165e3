"""SIGKILL the master mid-job, restart it on the same job dir: nothing lost, nothing repeated."""

import json
from collections import Counter
from pathlib import Path

import pytest

from flexjob.core.training.master_config import MasterConfig
from flexjob.master.launch import MasterProcess, spawn_master
from flexjob.platform.ports import free_port
from tests.master.conftest import wait_for
from tests.master.sim_agent import SimAgent

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize(
    ("snapshot_every", "lease"),
    [(7, 0), (1000, 0), (7, 4)],
    ids=["snapshots", "journal-only", "snapshots-lease-4"],
)
def test_killed_master_restarts_and_agents_finish_every_sample_exactly_once(
    process_config: MasterConfig, snapshot_every: int, lease: int
) -> None:
    # A port below the ephemeral range: while no master listens on it, the agents' reconnects
    # cannot take it (a loopback connection to a free ephemeral port may connect to itself).
    # The agents reach the restarted master well within the heartbeat timeout: a node the
    # restarted master declares dead is fenced (tests/master/test_fencing.py), which a
    # simulated agent does not handle.
    config = process_config.with_overrides(
        persistence__snapshot_every=snapshot_every,
        port=free_port(),
        node_health__heartbeat_timeout=10.0,
    )
    masters = [spawn_master(config)]
    agents = [
        SimAgent(masters[0].address, f"worker-{i}", step_time=0.005, lease=lease) for i in range(4)
    ]
    total_shards = 2 * 400 // 5
    try:
        for a in agents:
            a.start()
        wait_for(lambda: sum(len(a.counted) for a in agents) > total_shards // 4, what="25%")
        assert masters[0].kill() == -9
        assert sum(len(a.counted) for a in agents) < total_shards  # killed mid-job
        port = int(masters[0].address.rsplit(":", 1)[1])
        masters.append(spawn_master(config.with_overrides(port=port)))
        for a in agents:
            a.join_thread(90)
        assert all(a.finished and a.error is None for a in agents), [a.error for a in agents]
        counted = Counter(
            (s.epoch, i) for a in agents for s in a.counted for i in s.sample_indices()
        )
        assert set(counted) == {(e, i) for e in range(2) for i in range(400)}
        assert set(counted.values()) == {1}
        log = (Path(str(config.job_dir)) / "master.log").read_text()
        assert "event=state_restored" in log
    finally:
        for a in agents:
            a.kill()
        for m in masters:
            m.stop()


def test_stopped_master_leaves_a_snapshot_with_all_progress(
    master_process: MasterProcess, process_config: MasterConfig
) -> None:
    agents = [SimAgent(master_process.address, f"worker-{i}", step_time=0.0) for i in range(2)]
    for a in agents:
        a.start()
    for a in agents:
        a.join_thread(60)
    assert master_process.stop() == 0
    state_path = Path(str(process_config.job_dir)) / "master_state.json"
    state = json.loads(state_path.read_text())
    assert state["shards"][""]["completed"] == [0, 1]
    assert state["shards"][""]["samples_done"] == 800
