from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from flexjob.api import ElasticJob
from flexjob.core.training.dataset import Dataset
from flexjob.core.training.master_config import MasterConfig
from flexjob.master.launch import MasterProcess, spawn_master
from flexjob.platform.local import LocalPlatform
from tests.support.masters import master_config, serving
from tests.support.polling import wait_until


def wait_for(condition: Callable[[], bool], timeout: float = 30.0, what: str = "condition") -> None:
    wait_until(condition, timeout=timeout, interval=0.02, what=what)


@pytest.fixture
def process_config(tmp_path: Path) -> MasterConfig:
    return master_config(
        "itest",
        tmp_path / "job",
        datasets=(Dataset(size=400, shard_size=5, epochs=2, shuffle=True, seed=1),),
        rendezvous__min_nodes=2,
        rendezvous__max_nodes=4,
        rendezvous__last_call_timeout=0.5,
        node_health__heartbeat_timeout=1.0,
    )


@pytest.fixture
def master_process(process_config: MasterConfig) -> Iterator[MasterProcess]:
    yield from serving(spawn_master(process_config))


@pytest.fixture
def home_platform(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> LocalPlatform:
    """The local platform in ``$FLEXJOB_HOME`` (set to ``tmp_path`` for the test) with the job
    ``ns/j`` stored: where a master of that job writes with ``scale_plan_platform="local"``."""
    monkeypatch.setenv("FLEXJOB_HOME", str(tmp_path))
    platform = LocalPlatform()
    platform.create_job(ElasticJob.model_validate({"metadata": {"name": "j", "namespace": "ns"}}))
    return platform
