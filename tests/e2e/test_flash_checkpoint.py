"""Flash checkpoints through a real agent: the worker is SIGKILLed with nothing recent on
disk, and its restart resumes from the last copy in shared memory; the agent writes that copy
to storage after the kill, and every sample of the job is done. Real master, agent, gloo."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from flexjob.api import names
from flexjob.core.training.flash import SlotHeader, newest_sealed
from flexjob.core.training.master_config import MasterConfig
from flexjob.master.main import MasterHandle, start_master
from flexjob.rpc.client import MasterClient
from flexjob.trainer import flash_files
from tests.support.polling import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

SCRIPT = Path(__file__).resolve().parent / "scripts" / "flash_train.py"
NODE = "worker-0"


@pytest.fixture
def master(tmp_path: Path) -> Iterator[MasterHandle]:
    config = MasterConfig(job_name="flash", job_dir=str(tmp_path / "job"))
    with start_master(config, token="") as handle:
        yield handle


def newest(shm: Path) -> SlotHeader | None:
    headers = [flash_files.read_header(p) for p in flash_files.slot_paths(shm)]
    best = newest_sealed(headers)
    return headers[best] if best is not None else None


def test_a_killed_worker_resumes_from_its_last_flash_copy(
    master: MasterHandle, tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    out = tmp_path / "agent.out"
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLEXJOB_")}
    env[names.ENV_FLASH_CHECKPOINT] = "1"  # the switch a user sets for `flexjob run` / agent
    cmd = [
        sys.executable, "-m", "flexjob", "agent", "--master", master.address,
        "--node-id", NODE, "--job-name", "flash", "--run-dir", str(run_dir),
        str(SCRIPT), "0.05",
    ]  # fmt: skip
    with out.open("wb") as f:
        agent = subprocess.Popen(cmd, env=env, stdout=f, stderr=subprocess.STDOUT)
    try:
        with MasterClient(master.address, "probe", token="") as probe:
            incarnation = wait_until(lambda: probe.kv_get(names.KV_INCARNATION), 30)
        ckpt = run_dir / "checkpoints" / incarnation.decode()
        shm = flash_files.default_shm_dir(run_dir, NODE, 0)
        wait_until(lambda: (h := newest(shm)) is not None and h.step >= 8, 90, 0.05, "8 steps")

        workers = [
            p
            for p in psutil.Process(agent.pid).children()
            if "flexjob.agent.bootstrap" in " ".join(p.cmdline())
        ]
        assert len(workers) == 1
        workers[0].send_signal(signal.SIGSTOP)  # no further save: the newest copy is final
        last = newest(shm)
        assert last is not None
        on_disk = flash_files.read_header(ckpt / flash_files.FLASH_FILE)
        assert on_disk is None and not (ckpt / "checkpoint.pt").exists()  # nothing on disk
        workers[0].send_signal(signal.SIGKILL)

        assert agent.wait(180) == 0, out.read_text()
        text = out.read_text()
        resumed = re.findall(r"resumed step=(\d+) from=(\w+)", text)
        assert resumed[0] == ("0", "None"), text
        assert resumed[1] == (str(last.step), "memory"), text  # the last flash copy
        stored = flash_files.read_header(ckpt / flash_files.FLASH_FILE)
        assert stored is not None and stored.sealed and stored.step > last.step  # the end
        assert not shm.exists()  # the agent freed the shared memory when it stopped
        with MasterClient(master.address, "probe", token="") as probe:
            progress = probe.get_progress()
        assert progress.samples_done == progress.samples_total == 240
    finally:
        if agent.poll() is None:
            agent.kill()
            agent.wait()
