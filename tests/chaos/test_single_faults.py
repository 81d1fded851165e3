"""The short chaos suite: real jobs, real signals at random points, every sample checked.

One ``flexjob run`` job survives a SIGKILLed master, a SIGKILLed agent and a SIGSTOPped
(hung) trainer, in random order; one ``flexjob submit`` job survives a SIGKILLed master,
trainer, agent and local operator (restarted with ``flexjob operator --platform local``), in
random order. Each ends with exit code 0 (Succeeded), every (epoch, index) trained exactly once,
the accuracy of a fault-free run within 1%, and no process left behind. The long form is
``benchmarks/chaos.py``.
"""

import random
from pathlib import Path

import pytest

from tests.chaos.harness import (
    ChaosJob,
    Fault,
    check_samples,
    run_faults,
    start_run,
    start_submit,
    wait_no_orphans,
)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

#: Accuracy of the fault-free run of ``chaos_train.py`` (3 epochs, 2 nodes): 0.9222, measured
#: with ``benchmarks/chaos.py --faults 0``.
FAULT_FREE_ACCURACY = 0.9222


def assert_nothing_lost(job: ChaosJob, code: int) -> None:
    context = f"faults: {job.faults}\n{job.output()[-4000:]}"
    assert code == 0, context
    check = check_samples(job.log_dir, job.epochs)
    assert (check.lost, check.duplicated) == (0, 0), f"{check}; {context}"
    accuracy = job.accuracy()
    assert accuracy is not None and accuracy >= FAULT_FREE_ACCURACY - 0.01, context
    assert wait_no_orphans(job.log_dir) == [], context


def test_run_survives_a_killed_master_a_killed_agent_and_a_hung_trainer(
    tmp_path: Path, rng: random.Random, cleanup: list[ChaosJob]
) -> None:
    job = start_run(tmp_path)
    cleanup.append(job)
    faults = [Fault.KILL_MASTER, Fault.KILL_AGENT, Fault.STOP_TRAINER]
    rng.shuffle(faults)
    run_faults(job, faults, rng)
    assert len(job.faults) == 3, job.faults
    code = job.wait(240)
    assert_nothing_lost(job, code)
    out = job.output()
    assert "job master" in out and "restarting it" in out  # the launcher restarted them
    assert "killing it as hung" in out


def test_submit_survives_a_killed_master_trainer_agent_and_operator(
    tmp_path: Path, rng: random.Random, cleanup: list[ChaosJob]
) -> None:
    job = start_submit(tmp_path)
    cleanup.append(job)
    faults = [Fault.KILL_MASTER, Fault.KILL_TRAINER, Fault.KILL_AGENT, Fault.KILL_OPERATOR]
    rng.shuffle(faults)
    run_faults(job, faults, rng)
    assert len(job.faults) == 4, job.faults
    code = job.wait(240)
    assert_nothing_lost(job, code)
    assert "Succeeded" in job.output()


def test_a_rank_killed_after_its_all_reduce_before_its_report_is_not_trained_again(
    tmp_path: Path, cleanup: list[ChaosJob]
) -> None:
    """worker-1's trainer dies right after step 5's all-reduce: its samples are in the update
    the survivor applied, its shard unreported. The survivor reports the shard for it
    (``trainer.peer_shards``), so nobody trains those samples again."""
    job = start_run(tmp_path, epochs=1, env={"CHAOS_DIE_AFTER_STEP": "5"})
    cleanup.append(job)
    code = job.wait(240)
    context = job.output()[-4000:]
    assert (tmp_path / "samples" / "died-after-step").exists(), context
    assert code == 0, context
    check = check_samples(job.log_dir, job.epochs)
    assert (check.lost, check.duplicated) == (0, 0), f"{check}; {context}"
