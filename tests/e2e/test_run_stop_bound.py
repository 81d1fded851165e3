"""A SIGTERM to ``flexjob run --nnodes 2`` ends every process of the run within a bound, even
when its trainers ignore SIGTERM and each agent has more than one (issue 37, item 15): the run
stops its agents, each agent stops its trainers at once with one grace period, and what is
still there after the run's grace is killed with its whole process group."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

import psutil
import pytest

from flexjob.runner.launcher import MIN_STOP_GRACE_S, STOP_BOUND_S
from tests.e2e.jobs import poll
from tests.e2e.test_run_user_path import SCRIPTS, family, gone, start

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(150)]
#: The longest a run may take to end everything after a stop signal (``STOP_BOUND_S``: the
#: agents' grace, then what is left for the master), with room for the main thread to notice
#: the signal on a loaded machine.
BOUND_S = STOP_BOUND_S + 2 * MIN_STOP_GRACE_S + 5.0


def test_sigterm_ends_every_process_even_trainers_that_ignore_it(tmp_path: Path) -> None:
    env = {**os.environ, "CKPT_DIR": str(tmp_path)}
    script = str(SCRIPTS / "ignores_term.py")
    cmd = ["run", "--nnodes", "2", "--nproc-per-node", "3", "--no-progress", script]
    proc = start(cmd, env, tmp_path / "run.out")
    everyone: list[psutil.Process] = []
    try:
        poll("six trainers running", lambda: len(list(tmp_path.glob("*.ready"))) == 6, 100)
        everyone = family(proc)
        trainers = {int(p.read_text()) for p in tmp_path.glob("*.ready")}
        assert trainers <= {p.pid for p in everyone}
        sent = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(BOUND_S) == 128 + signal.SIGTERM
        poll("no process of the run left", lambda: gone(everyone), 5)
        assert time.monotonic() - sent < BOUND_S
    finally:
        for p in [*everyone, *family(proc)]:  # what outlived the run too
            with contextlib.suppress(psutil.Error):
                p.kill()
