"""``replica_link``: a process that is its replica's only trainer, with no agent (an async PS
worker). Its death hands its shards back at once: its ``Attach`` stream breaks. Real master,
real process, killed with SIGKILL; the heartbeat timeout is far beyond the test's wait, so only
the broken stream can explain the shard coming back."""

import logging
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from flexjob.api import names
from flexjob.core.training.dataset import Dataset
from flexjob.master.main import MasterHandle, start_master
from flexjob.rpc.client import MasterClient
from tests.support.masters import master_config, serving
from tests.support.polling import wait_until

#: A replica process: leases one shard of the default dataset, says which, then trains forever.
WORKER = """
from flexjob.trainer.link import replica_link
link = replica_link()
shard = link.get_shard("")
print(shard.shard_id, flush=True)
import time
time.sleep(600)
"""


@pytest.fixture
def master(tmp_path: Path) -> Iterator[MasterHandle]:
    config = master_config(
        "ps",
        tmp_path / "job",
        datasets=(Dataset(size=8, shard_size=1),),
        rendezvous__max_nodes=2,
        node_health__heartbeat_timeout=600.0,
    )
    yield from serving(start_master(config))


def start_worker(master: MasterHandle, index: int) -> tuple[subprocess.Popen[str], int]:
    """A replica process of ``worker-<index>`` and the shard it holds."""
    env = {
        **os.environ,
        names.ENV_MASTER: master.address,
        names.ENV_REPLICA_TYPE: "worker",
        names.ENV_REPLICA_INDEX: str(index),
    }
    env.pop(names.ENV_NODE_ID, None)
    proc = subprocess.Popen(
        [sys.executable, "-c", WORKER], env=env, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    return proc, int(proc.stdout.readline())


def test_a_killed_replica_process_hands_its_shard_back_at_once(
    master: MasterHandle, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    victim, held = start_worker(master, 1)
    other = MasterClient(master.address, "worker-0")
    try:
        first = other.get_shard()
        assert first.has_shard and first.shard_id != held  # held while its process lives
        victim.send_signal(signal.SIGKILL)
        victim.wait(10)
        got: list[int] = []

        def handed_out_again() -> bool:
            got.append(other.get_shard().shard_id)
            return held in got

        wait_until(handed_out_again, timeout=20, what=f"shard {held} back from the killed worker")
        dead = [r.getMessage() for r in caplog.records if "event=node_dead" in r.getMessage()]
        assert any("node=worker-1" in m and "connection lost" in m for m in dead), dead
    finally:
        victim.kill()
        other.close()
