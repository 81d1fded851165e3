"""The master's PS-set driver beyond a clean change: it asks every PS for a checkpoint every
``ps_checkpoint_interval`` seconds, and a change that cannot run (these PS keep no
checkpoints) is undone — the old set goes on serving, nothing new is published — and counted
as a failure in the master's stats."""

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from flexjob.master.main import MasterHandle, start_master
from flexjob.ps.checkpoint_io import file_name, read_snapshot
from flexjob.trainer.ps_set import PsSet
from tests.support.masters import master_config, serving
from tests.support.polling import wait_until

from .conftest import MODEL, Replicas, set_version
from .test_ps_set_change import IDS


@pytest.fixture
def master(tmp_path: Path) -> Iterator[MasterHandle]:
    config = master_config(
        "ps-driver", tmp_path / "master", ps__num_ps=2, ps__checkpoint_interval=0.5
    )
    yield from serving(start_master(config, token=""))


def checkpointed_version(directory: Path, index: int) -> int:
    try:
        return read_snapshot(directory / file_name(index, 2)).version
    except (OSError, ValueError, KeyError):
        return -1


def test_the_master_asks_every_ps_for_checkpoints_on_its_interval(
    master: MasterHandle, replicas: Replicas
) -> None:
    replicas.first_set(2)  # each PS's own interval is an hour: only the master asks
    ps = PsSet.from_master(master.address)
    ps.configure(MODEL.optimizer, MODEL.tables, MODEL.dense)
    for version in (1, 2):
        ps.push_dense({"w": np.ones((2, 3), dtype=np.float32)})[0][1].result()
        owner = ps.dense_plan["w"]
        wait_until(
            lambda v=version, o=owner: checkpointed_version(replicas.directory, o) == v,
            timeout=30,
            what=f"a checkpoint at dense version {version}",
        )
    assert checkpointed_version(replicas.directory, 1 - owner) == 0  # the other PS too
    ps.close()


def test_a_change_that_cannot_run_leaves_the_old_set_serving_and_is_counted(
    master: MasterHandle, replicas: Replicas
) -> None:
    replicas.first_set(2, checkpoints=False)
    ps = PsSet.from_master(master.address)
    ps.configure(MODEL.optimizer, MODEL.tables, MODEL.dense)
    before, _ = ps.lookup("user", IDS)
    replicas.start(2, 3, checkpoints=False)

    def failed() -> bool:
        nodes, _ = master.service.stats_snapshot()
        record = nodes.get("ps-set")
        return record is not None and "failed at checkpoint" in record.last_failure

    wait_until(failed, timeout=30, what="the failed change in the master's stats")
    nodes, _ = master.service.stats_snapshot()
    assert "checkpoint_dir: this PS has none" in nodes["ps-set"].last_failure
    after, _ = ps.lookup("user", IDS)  # the old set was resumed as it was
    np.testing.assert_array_equal(after, before)
    assert set_version(master.service) == 1 and ps.num_ps == 2
    ps.close()
