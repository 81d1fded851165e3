"""Failures that cannot fix themselves end the job at once, and every failure says why once."""

from dataclasses import replace

import pytest

from flexjob.api import JobPhase, RestartPolicy
from flexjob.core.operator.actions import RecordEvent
from tests.core.operator.reconcile_sim import Sim, make_job


def fail(sim: Sim, code: int, message: str = "", name: str = "demo-worker-1") -> None:
    sim.finish(name, code)
    sim.replicas[name] = replace(sim.replicas[name], message=message)
    sim.step()


def events(sim: Sim, reason: str) -> list[str]:
    return [
        a.message
        for actions in sim.history
        for a in actions
        if isinstance(a, RecordEvent) and a.reason == reason
    ]


@pytest.mark.parametrize("code", [126, 127])
def test_a_command_that_cannot_run_fails_the_job_without_a_restart(code: int) -> None:
    sim = Sim(make_job(backoff=5))
    sim.settle()
    fail(sim, code, "error: script not found: train.py (looked in /home/me)")
    assert sim.phase is JobPhase.FAILED
    assert sim.job.status is not None and sim.job.status.restart_count == 0
    assert "script not found: train.py" in sim.job.status.message
    assert "not retried" in sim.job.status.message


def test_exit_code_policy_may_still_list_127_as_retryable() -> None:
    sim = Sim(make_job(restart=RestartPolicy.EXIT_CODE, exit_codes=[127]))
    sim.settle()
    fail(sim, 127)
    assert sim.phase is JobPhase.RESTARTING


def test_each_failure_is_one_replica_failed_event_naming_the_last_error_line() -> None:
    sim = Sim(make_job(backoff=3))
    sim.settle()
    fail(sim, 1, "Traceback (most recent call last):\nRuntimeError: boom")
    sim.settle()
    fail(sim, 1, "RuntimeError: boom again")
    failed = events(sim, "ReplicaFailed")
    assert len(failed) == 2, failed
    assert "exit code 1: RuntimeError: boom; restart 1 of 3" in failed[0]
    assert "RuntimeError: boom again; restart 2 of 3" in failed[1]


def test_backoff_limit_message_carries_the_root_cause() -> None:
    sim = Sim(make_job(backoff=0))
    sim.settle()
    fail(sim, 1, "ModuleNotFoundError: No module named 'typer'")
    assert sim.phase is JobPhase.FAILED
    assert sim.job.status is not None
    assert "No module named 'typer'" in sim.job.status.message
