"""The agent's half of flash checkpoints, with a real worker process: it writes a copy to
storage when the worker asks, writes the last complete copy after the worker is killed, and
frees the shared memory when it stops."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from flexjob.agent.flash_saver import FlashSaver
from flexjob.trainer import flash_files
from tests.support.polling import wait_until

pytestmark = pytest.mark.timeout(120)

WORKER = Path(__file__).resolve().parent / "flash_worker.py"


def stored_step(ckpt: Path) -> int | None:
    header = flash_files.read_header(ckpt / flash_files.FLASH_FILE)
    return header.step if header is not None and header.sealed else None


def test_agent_writes_asked_copies_and_a_killed_workers_last_copy(tmp_path: Path) -> None:
    ckpt = tmp_path / "ckpt"
    saver = FlashSaver("node-a")
    env, fd = saver.worker_env(0, str(ckpt))
    shm = Path(env["FLEXJOB_FLASH_SHM_DIR"])
    proc = subprocess.Popen(
        [sys.executable, str(WORKER), str(ckpt)],
        env={**{k: v for k, v in os.environ.items() if not k.startswith("FLEXJOB_")}, **env},
        pass_fds=(fd,),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    FlashSaver.started(fd)
    try:
        assert proc.stdin is not None and proc.stdout is not None
        assert proc.stdout.readline().strip() == "saved 2"
        wait_until(lambda: stored_step(ckpt) == 2, 30, 0.05, "the background write of step 2")
        assert saver.written == 1
        proc.stdin.write("go\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == "saved 3"
        assert stored_step(ckpt) == 2  # step 3 asked for no storage: only in memory
        proc.kill()
        proc.wait(10)
        saver.worker_failed(0)
        wait_until(lambda: stored_step(ckpt) == 3, 30, 0.05, "the killed worker's last copy")
        assert shm.is_dir()  # a restarted worker restores from memory
    finally:
        if proc.poll() is None:
            proc.kill()
        saver.close()
    assert not shm.exists()  # the agent freed the shared memory when it stopped
    assert stored_step(ckpt) == 3
