import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from flexjob.core.dataset import Dataset
from flexjob.core.master_config import MasterConfig, NodeHealthConfig
from flexjob.core.rendezvous import RendezvousConfig
from flexjob.master.launch import MasterProcess, spawn_master


def wait_for(condition: Callable[[], bool], timeout: float = 30.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.02)


@pytest.fixture
def process_config(tmp_path: Path) -> MasterConfig:
    return MasterConfig(
        job_name="itest",
        job_dir=str(tmp_path / "job"),
        datasets=(Dataset(size=400, shard_size=5, epochs=2, shuffle=True, seed=1),),
        host_store=False,
        rendezvous=RendezvousConfig(min_nodes=2, max_nodes=4, last_call_timeout=0.5),
        node_health=NodeHealthConfig(heartbeat_timeout=1.0),
    )


@pytest.fixture
def master_process(process_config: MasterConfig) -> Iterator[MasterProcess]:
    proc = spawn_master(process_config)
    yield proc
    proc.stop()
