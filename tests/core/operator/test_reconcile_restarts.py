"""Failed replicas: restart policies, backoffLimit, Restarting and Failed."""

import pytest

from flexjob.api import JobPhase, RestartPolicy
from tests.core.operator.reconcile_sim import Sim, kinds, make_job


def fail_worker(sim: Sim, code: int = 1, name: str = "demo-worker-1") -> None:
    sim.finish(name, code)
    sim.step()


def restarts(sim: Sim) -> int:
    """The job's ``status.restartCount``."""
    assert sim.job.status is not None
    return sim.job.status.restart_count


def test_failed_worker_is_replaced_and_the_job_restarts() -> None:
    sim = Sim(make_job())
    sim.settle()
    sim.finish("demo-worker-1", 1)
    assert kinds(sim.step()) == ["delete demo-worker-1"]
    assert sim.phase is JobPhase.RESTARTING
    assert kinds(sim.step()) == ["create demo-worker-1"]
    sim.run_all()
    sim.step()
    assert sim.phase is JobPhase.RUNNING


@pytest.mark.parametrize(
    ("failures", "backoff", "phase"),
    [
        (1, 3, JobPhase.RUNNING),
        (2, 3, JobPhase.RUNNING),
        (3, 3, JobPhase.RUNNING),
        (4, 3, JobPhase.FAILED),
        (1, 0, JobPhase.FAILED),
        (2, 1, JobPhase.FAILED),
    ],
)
def test_backoff_limit_bounds_the_restarts(failures: int, backoff: int, phase: JobPhase) -> None:
    sim = Sim(make_job(backoff=backoff))
    sim.settle()
    for _ in range(failures):
        if sim.phase is JobPhase.FAILED:
            break
        fail_worker(sim)
        if sim.phase is not JobPhase.FAILED:
            sim.settle()
    assert sim.phase is phase


def test_backoff_limit_defaults_to_three() -> None:
    sim = Sim(make_job(backoff=None))
    sim.settle()
    for _ in range(3):
        fail_worker(sim)
        sim.settle()
    assert sim.phase is JobPhase.RUNNING
    fail_worker(sim)
    assert sim.phase is JobPhase.FAILED


def test_restart_count_is_recorded_in_status() -> None:
    sim = Sim(make_job())
    sim.settle()
    fail_worker(sim)
    assert restarts(sim) == 1


def test_seeing_the_same_failure_twice_counts_it_once() -> None:
    sim = Sim(make_job())
    sim.settle()
    sim.finish("demo-worker-1", 1)
    failed = dict(sim.replicas)
    sim.step()
    sim.replicas = failed  # the delete has not been observed yet
    sim.step()
    assert restarts(sim) == 1


def test_failed_job_message_names_the_replica_and_the_limit() -> None:
    sim = Sim(make_job(backoff=0))
    sim.settle()
    fail_worker(sim, code=3)
    assert sim.job.status is not None
    assert "demo-worker-1" in sim.job.status.message
    assert "backoffLimit 0" in sim.job.status.message


@pytest.mark.parametrize(
    ("policy", "code", "exit_codes", "phase"),
    [
        (RestartPolicy.NEVER, 1, None, JobPhase.FAILED),
        (RestartPolicy.ON_FAILURE, 1, None, JobPhase.RESTARTING),
        (RestartPolicy.ALWAYS, 1, None, JobPhase.RESTARTING),
        (RestartPolicy.EXIT_CODE, 1, None, JobPhase.FAILED),
        (RestartPolicy.EXIT_CODE, 137, None, JobPhase.RESTARTING),
        (RestartPolicy.EXIT_CODE, -9, None, JobPhase.RESTARTING),
        (RestartPolicy.EXIT_CODE, 3, [3, 4], JobPhase.RESTARTING),
        (RestartPolicy.EXIT_CODE, 137, [3], JobPhase.FAILED),
        (None, 1, None, JobPhase.RESTARTING),
    ],
)
def test_restart_policy_decides_whether_a_failure_is_retried(
    policy: RestartPolicy | None, code: int, exit_codes: list[int] | None, phase: JobPhase
) -> None:
    sim = Sim(make_job(restart=policy, exit_codes=exit_codes))
    sim.settle()
    fail_worker(sim, code=code)
    assert sim.phase is phase


def test_always_policy_restarts_a_worker_that_succeeded() -> None:
    sim = Sim(make_job(restart=RestartPolicy.ALWAYS))
    sim.settle()
    sim.finish("demo-worker-0", 0)
    assert kinds(sim.step()) == ["delete demo-worker-0"]
    assert kinds(sim.step()) == ["create demo-worker-0"]
    assert restarts(sim) == 0


def test_on_failure_policy_keeps_a_worker_that_succeeded() -> None:
    sim = Sim(make_job())
    sim.settle()
    sim.finish("demo-worker-0", 0)
    assert kinds(sim.step()) == []
    assert sim.phase is JobPhase.RUNNING


def test_failed_master_without_restarts_left_fails_the_job() -> None:
    sim = Sim(make_job(backoff=0))
    sim.settle()
    sim.finish("demo-master-0", 2)
    sim.step()
    assert sim.phase is JobPhase.FAILED


def test_failed_job_stops_the_running_replicas_but_keeps_the_failed_one() -> None:
    sim = Sim(make_job(backoff=0))
    sim.settle()
    sim.finish("demo-worker-1", 1)
    assert sorted(kinds(sim.step())) == [
        "delete demo-master-0",
        "delete demo-worker-0",
        "unservice demo-master-0",
    ]
    assert "demo-worker-1" in sim.replicas
