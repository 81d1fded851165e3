from collections.abc import Iterator
from pathlib import Path

import pytest

from flexjob.core.training.batch import BatchPlan
from flexjob.core.training.dataset import Dataset
from flexjob.core.training.master_config import MasterConfig
from flexjob.master.main import MasterHandle, start_master
from tests.support import masters


@pytest.fixture
def master_config(tmp_path: Path) -> MasterConfig:
    return masters.master_config(
        "rpcjob",
        tmp_path / "job",
        datasets=(Dataset(size=20, shard_size=5),),
        batch=BatchPlan.for_max_workers(4, 4),
        rendezvous__min_nodes=2,
        rendezvous__max_nodes=2,
        rendezvous__last_call_timeout=0.2,
    )


@pytest.fixture
def master(master_config: MasterConfig) -> Iterator[MasterHandle]:
    yield from masters.serving(start_master(master_config))
