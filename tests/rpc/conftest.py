from collections.abc import Iterator
from pathlib import Path

import pytest

from flexjob.core.batch import BatchPlan
from flexjob.core.dataset import Dataset
from flexjob.core.master_config import MasterConfig
from flexjob.master.main import MasterHandle, start_master
from tests.support.masters import serving


@pytest.fixture
def master_config(tmp_path: Path) -> MasterConfig:
    return MasterConfig(
        job_name="rpcjob",
        job_dir=str(tmp_path / "job"),
        min_nodes=2,
        max_nodes=2,
        last_call_timeout=0.2,
        datasets=(Dataset(size=20, shard_size=5),),
        batch=BatchPlan.for_max_workers(4, 4),
        host_store=False,
    )


@pytest.fixture
def master(master_config: MasterConfig) -> Iterator[MasterHandle]:
    yield from serving(start_master(master_config))
