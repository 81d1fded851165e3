"""cleanPodPolicy, ttlSecondsAfterFinished, suspend and activeDeadlineSeconds."""

import pytest

from flexjob.api import CleanPodPolicy, JobPhase
from tests.core.operator.reconcile_sim import Sim, kinds, make_job


def finished_with(policy: CleanPodPolicy | None) -> tuple[Sim, list[str]]:
    sim = Sim(make_job(clean=policy, workers=2))
    sim.settle()
    sim.finish("demo-worker-0", 0)
    sim.finish("demo-master-0", 0)
    return sim, sorted(kinds(sim.step()))


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        (None, ["delete demo-worker-1"]),
        (CleanPodPolicy.RUNNING, ["delete demo-worker-1"]),
        (
            CleanPodPolicy.ALL,
            [
                "delete demo-master-0",
                "delete demo-worker-0",
                "delete demo-worker-1",
                "unservice demo-master-0",
            ],
        ),
        (CleanPodPolicy.NONE, []),
    ],
)
def test_clean_pod_policy_decides_what_is_deleted_on_completion(
    policy: CleanPodPolicy | None, expected: list[str]
) -> None:
    sim, actions = finished_with(policy)
    assert sim.phase is JobPhase.SUCCEEDED
    assert actions == expected


@pytest.mark.parametrize("policy", list(CleanPodPolicy))
def test_cleanup_is_idempotent(policy: CleanPodPolicy) -> None:
    sim, _ = finished_with(policy)
    assert kinds(sim.step()) == []


def test_finished_job_ignores_later_failures() -> None:
    sim, _ = finished_with(CleanPodPolicy.NONE)
    sim.finish("demo-worker-1", 1)
    sim.step()
    assert sim.phase is JobPhase.SUCCEEDED


@pytest.mark.parametrize(("elapsed", "deleted"), [(5, False), (10, True), (60, True)])
def test_ttl_after_finished_deletes_the_job(elapsed: float, deleted: bool) -> None:
    sim = Sim(make_job(ttl=10))
    sim.settle()
    sim.finish("demo-master-0", 0)
    sim.step()
    sim.advance(elapsed)
    sim.step()
    assert sim.job_deleted is deleted


def test_ttl_deletes_every_replica_and_service() -> None:
    sim = Sim(make_job(ttl=0, clean=CleanPodPolicy.NONE))
    sim.settle()
    sim.finish("demo-master-0", 0)
    sim.step()
    sim.step()
    assert sim.replicas == {}
    assert sim.services == {}


def test_suspend_deletes_the_active_replicas_and_pends() -> None:
    sim = Sim(make_job())
    sim.settle()
    sim.job.spec.suspend = True
    actions = kinds(sim.step())
    assert sorted(actions) == [
        "delete demo-master-0",
        "delete demo-worker-0",
        "delete demo-worker-1",
    ]
    assert sim.phase is JobPhase.PENDING
    assert kinds(sim.step()) == []


def test_submitted_suspended_job_creates_nothing() -> None:
    sim = Sim(make_job(suspend=True))
    assert kinds(sim.step()) == []
    assert sim.phase is JobPhase.PENDING


def test_resumed_job_starts_again() -> None:
    sim = Sim(make_job(suspend=True))
    sim.step()
    sim.job.spec.suspend = False
    sim.settle()
    assert sim.phase is JobPhase.RUNNING


@pytest.mark.parametrize(("elapsed", "phase"), [(29, JobPhase.RUNNING), (30, JobPhase.FAILED)])
def test_active_deadline_fails_the_job(elapsed: float, phase: JobPhase) -> None:
    sim = Sim(make_job(deadline=30))
    sim.settle()
    sim.advance(elapsed)
    sim.step()
    assert sim.phase is phase


def test_deadline_failure_stops_running_replicas_and_says_why() -> None:
    sim = Sim(make_job(deadline=1, master=False))
    sim.settle()
    sim.advance(2)
    assert sorted(kinds(sim.step())) == [
        "delete demo-worker-0",
        "delete demo-worker-1",
        "unservice demo-worker-0",
    ]
    assert sim.job.status is not None
    assert sim.job.status.conditions[-1].reason == "DeadlineExceeded"


def test_suspended_job_clock_restarts_on_resume() -> None:
    sim = Sim(make_job(deadline=30, master=False))
    sim.settle()
    sim.advance(25)
    sim.job.spec.suspend = True
    sim.step()
    sim.job.spec.suspend = False
    sim.settle()
    sim.advance(25)
    sim.step()
    assert sim.phase is JobPhase.RUNNING
