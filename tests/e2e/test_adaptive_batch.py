"""``spec.batch.adaptive``: a two-node digits run against a master whose job allows the
global batch to grow from 32 to 512 samples measures its own gradient noise scale, grows the
batch during training (the same epochs in fewer steps) with its learning rate scaled
(AdaScale), and finishes; with the same script and a fixed batch, the batch and the rate stay
what the user set."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from flexjob.core.training.batch import BatchPlan
from tests.e2e.fidelity import STARTUP_TIMEOUT, start_master, stop_all
from tests.e2e.jobs import Job, start_run

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

DONE = re.compile(r"digits: accuracy=([0-9.]+) steps=(\d+) .* global_batch=(\d+) lr=([0-9.e-]+)")
LR = 0.05


@pytest.fixture(autouse=True)
def replan_often(monkeypatch: pytest.MonkeyPatch) -> None:
    """Re-plan every second (default 30 s): the run lasts ~20 s, and the noise scale it
    measures first may still favour the base batch."""
    monkeypatch.setenv("FLEXJOB_BATCH_REPLAN_S", "1")


def _run(tmp: Path, batch: BatchPlan) -> tuple[float, int, int, float]:
    master = start_master(tmp, max_nodes=2, batch=batch)
    job: Job | None = None
    try:
        address = Job(master, tmp / "job", tmp / "master.out", []).master_address()
        args = ("--epochs", "6", "--batch-size", "16", "--momentum", "0", "--lr", str(LR))
        job = start_run(tmp, "--master", address, "--nnodes", "2", script_args=args)
        assert job.wait(STARTUP_TIMEOUT + 60) == 0, job.output()
        found = DONE.search(job.output())
        assert found, job.output()
        return float(found[1]), int(found[2]), int(found[3]), float(found[4])
    finally:
        stop_all(job, master)


def test_an_adaptive_batch_grows_with_its_lr_scaled_and_a_fixed_one_stays(tmp_path: Path) -> None:
    fixed = BatchPlan.for_global_batch(32, 16)
    accuracy, steps, batch, lr = _run(tmp_path / "fixed", fixed)
    assert (batch, lr) == (32, LR) and accuracy > 0.7
    adaptive = dataclasses.replace(fixed, max_global_batch_size=512)
    accuracy, fewer, batch, lr = _run(tmp_path / "adaptive", adaptive)
    # The same samples in fewer steps: some steps ran a bigger batch than 32. The batch in use
    # at the end is the last re-plan's, and its rate is AdaScale's: above the user's for a
    # bigger batch, the user's own for the base batch (as the fit of a later step may decide).
    assert fewer < steps, (fewer, steps)
    assert 32 <= batch <= 512 and batch % 16 == 0, batch
    assert lr > LR if batch > 32 else lr == LR, (batch, lr)
    assert accuracy > 0.7  # trains (an over-scaled rate would not)
