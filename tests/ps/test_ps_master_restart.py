"""A job master SIGKILLed in the middle of a PS-set change (held before a step by the
``ENV_PS_CHANGE_HOLD`` test hook) and restarted on the same job directory ends the change it
finds in its journaled KV store: the paused PS serve again, the change 2 -> 3 is done, and a
trainer's rows are all there, row by row, with every push it made before the kill."""

import os
from pathlib import Path

import numpy as np
import pytest

from flexjob.api import names
from flexjob.core.ps.set_change import ChangeStep
from flexjob.master.launch import MasterProcess, spawn_master
from flexjob.platform.ports import free_port
from flexjob.rpc.client import MasterClient
from flexjob.trainer.ps_set import PsSet
from tests.support.masters import master_config
from tests.support.polling import wait_until

from .conftest import MODEL, Replicas, set_version
from .test_ps_set_change import IDS, every_row

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize(
    ("held", "how"),
    [
        (ChangeStep.CHECKPOINT, "resume-old"),
        (ChangeStep.VERIFY, "reload-old"),
        (ChangeStep.RESUME, "resume-new"),
    ],
    ids=["killed-after-pause", "killed-after-load", "killed-after-publish"],
)
def test_a_master_killed_mid_change_finishes_it_after_a_restart(
    tmp_path: Path, held: ChangeStep, how: str
) -> None:
    job_dir = tmp_path / "master"
    config = master_config("ps-restart", job_dir, port=free_port(), ps__num_ps=2)
    log = job_dir / "master.log"
    hold_env = {**os.environ, names.ENV_PS_CHANGE_HOLD: held.value}
    masters: list[MasterProcess] = [spawn_master(config, env=hold_env)]
    address = masters[0].address
    probe = MasterClient(address, "probe")
    replicas = Replicas(address, probe, tmp_path / "ps")
    ps: PsSet | None = None
    try:
        replicas.first_set(2)
        ps = PsSet.from_master(address)
        ps.configure(MODEL.optimizer, MODEL.tables, MODEL.dense)
        one = np.ones((IDS.size, 4), dtype=np.float32)
        pushes = 5
        for _ in range(pushes):  # SGD lr 0.5, init 0: each push takes 0.5 off every row
            _, split = ps.lookup("user", IDS)
            for call in ps.push_rows("user", split, one[: split.unique.size]):
                call.result()
        replicas.start(2, 3)
        wait_until(
            lambda: f"event=ps_set_change_held step={held.value}" in log.read_text(),
            timeout=60,
            what=f"the change held before {held.value}",
        )
        assert masters[0].kill() == -9
        masters.append(spawn_master(config, env={**os.environ, names.ENV_PS_CHANGE_HOLD: ""}))
        wait_until(lambda: set_version(probe) == 2, timeout=60, what="the set of 3 published")
        wait_until(
            lambda: not probe.kv_get(names.KV_PS_CHANGE), timeout=60, what="the change ended"
        )
        text = log.read_text()
        assert f"found unfinished at {held.value} (published set" in text
        assert f"; {how}" in text
        np.testing.assert_array_equal(every_row(ps), np.full((IDS.size, 4), -0.5 * pushes))
        assert ps.num_ps == 3  # the trainer re-resolved to the new set
        _, split = ps.lookup("user", IDS)
        for call in ps.push_rows("user", split, one[: split.unique.size]):
            call.result()
        np.testing.assert_array_equal(every_row(ps), np.full((IDS.size, 4), -0.5 * (pushes + 1)))
    finally:
        if ps is not None:
            ps.close()
        replicas.stop_all()
        probe.close()
        for m in masters:
            m.stop()
