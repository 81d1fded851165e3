"""A restarted agent keeps its node id (a relaunched pod or process): the shard its previous
workers held goes back to the queue at once, instead of stalling the job forever (the node's
heartbeats never stop, so it never expires). Real master, real agent processes, SIGKILL."""

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from flexjob.core.training.dataset import Dataset
from flexjob.master.main import MasterHandle, start_master
from flexjob.rpc.client import MasterClient
from tests.support.masters import master_config
from tests.support.polling import wait_until

pytestmark = pytest.mark.timeout(180)

SLEEPER = "import sys, time; time.sleep(float(sys.argv[1]))"


@pytest.fixture
def master(tmp_path: Path) -> Iterator[MasterHandle]:
    config = master_config(
        "restart",
        tmp_path / "job",
        datasets=(Dataset(size=40, shard_size=10, epochs=1, shuffle=False),),
        node_health__heartbeat_timeout=600.0,
    )
    with start_master(config, token="") as handle:
        yield handle


def start_agent(master: MasterHandle, tmp_path: Path, seconds: float) -> subprocess.Popen[bytes]:
    script = tmp_path / "sleeper.py"
    script.write_text(SLEEPER)
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLEXJOB_")}
    cmd = [
        sys.executable, "-m", "flexjob", "agent", "--master", master.address,
        "--node-id", "worker-0", "--job-name", "restart", "--run-dir", str(tmp_path / "run"),
        str(script), str(seconds),
    ]  # fmt: skip
    return subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)


def test_a_restarted_agent_returns_the_shard_its_previous_workers_held(
    master: MasterHandle, tmp_path: Path
) -> None:
    with MasterClient(master.address, "worker-0", token="") as w0:
        held = w0.get_shard().shard_id  # what worker-0's training process took
    first = start_agent(master, tmp_path, 600)
    try:
        with MasterClient(master.address, "probe", token="") as probe:
            wait_until(lambda: probe.get_progress().world_size == 1, 60, 0.2, "a world of 1")
        first.send_signal(signal.SIGKILL)  # its workers die with it (PDEATHSIG)
        first.wait(10)
    finally:
        if first.poll() is None:
            first.kill()
    second = start_agent(master, tmp_path, 0)
    try:
        assert second.wait(120) == 0
    finally:
        if second.poll() is None:
            second.kill()
    with MasterClient(master.address, "worker-1", token="") as w1:
        got = w1.get_shard()
    assert got.has_shard and got.shard_id == held
