"""Phase transitions, replica rendering and idempotence of core.operator.reconcile."""

from dataclasses import replace

import pytest

from flexjob.api import JobPhase, ReplicaPhase, ReplicaType, names
from flexjob.core.operator.actions import CreateReplica, CreateService, RecordEvent
from flexjob.core.operator.reconcile import reconcile
from flexjob.core.replicas import Replica
from tests.core.operator.reconcile_sim import T0, Sim, kinds, make_job


def test_submitted_job_with_a_master_creates_the_master_service_first() -> None:
    sim = Sim(make_job())
    assert kinds(sim.step()) == ["service demo-master-0"]
    assert sim.phase is JobPhase.PENDING


def test_master_replica_is_created_before_the_workers() -> None:
    sim = Sim(make_job())
    sim.step()
    assert kinds(sim.step()) == [
        "create demo-master-0",
        "create demo-worker-0",
        "create demo-worker-1",
    ]
    assert sim.phase is JobPhase.STARTING


def test_job_without_master_creates_the_rank_0_service_then_every_worker() -> None:
    sim = Sim(make_job(master=False, workers=3))
    assert kinds(sim.step()) == ["service demo-worker-0"]
    assert kinds(sim.step()) == [f"create demo-worker-{i}" for i in range(3)]
    assert sim.phase is JobPhase.STARTING


@pytest.mark.parametrize(
    ("running", "phase"),
    [(0, JobPhase.STARTING), (2, JobPhase.STARTING), (3, JobPhase.RUNNING)],
)
def test_job_is_running_only_when_all_replicas_are(running: int, phase: JobPhase) -> None:
    sim = Sim(make_job())
    sim.step()
    sim.step()
    for name in sorted(sim.replicas)[:running]:
        sim.replicas[name] = replace(sim.replicas[name], phase=ReplicaPhase.RUNNING)
    sim.step()
    assert sim.phase is phase


def test_every_replica_gets_the_flexjob_environment() -> None:
    sim = Sim(make_job())
    sim.step()
    creates = [a.request for a in sim.step() if isinstance(a, CreateReplica)]
    worker = next(r for r in creates if r.name == "demo-worker-1")
    assert worker.env[names.ENV_MASTER] == "demo-master-0:50001"
    assert worker.env[names.ENV_JOB_NAME] == "demo"
    assert worker.env[names.ENV_REPLICA_TYPE] == "worker"
    assert worker.env[names.ENV_REPLICA_INDEX] == "1"
    assert worker.env["USER_VAR"] == "1"


def test_every_replica_gets_the_flexjob_labels() -> None:
    sim = Sim(make_job())
    sim.step()
    creates = [a.request for a in sim.step() if isinstance(a, CreateReplica)]
    labels = creates[2].labels
    assert labels[names.LABEL_JOB_NAME] == "demo"
    assert labels[names.LABEL_REPLICA_TYPE] == "worker"
    assert labels[names.LABEL_REPLICA_INDEX] == "1"
    assert creates[2].template.spec.restart_policy == "Never"


def test_replica_with_a_port_gets_a_service_and_its_address() -> None:
    sim = Sim(make_job(master=True, workers=1, ps=1))
    first = sim.step()
    assert "service demo-ps-0" in kinds(first)
    ps = [
        a.request
        for a in sim.step()
        if isinstance(a, CreateReplica) and a.request.type.value == "ps"
    ]
    assert ps[0].name == "demo-ps-0"
    assert ps[0].env["FLEXJOB_REPLICA_ADDRESS"] == "demo-ps-0:2222"
    assert ps[0].service == "demo-ps-0"


@pytest.mark.parametrize(
    ("master", "finished", "phase"),
    [
        (True, {"demo-master-0": 0}, JobPhase.SUCCEEDED),
        (True, {"demo-worker-0": 0, "demo-worker-1": 0}, JobPhase.RUNNING),
        (False, {"demo-worker-0": 0}, JobPhase.RUNNING),
        (False, {"demo-worker-0": 0, "demo-worker-1": 0}, JobPhase.SUCCEEDED),
    ],
    ids=["master-done", "workers-done-master-runs", "one-of-two-workers", "all-workers"],
)
def test_job_succeeds_when_the_master_or_every_worker_succeeded(
    master: bool, finished: dict[str, int], phase: JobPhase
) -> None:
    sim = Sim(make_job(master=master))
    sim.settle()
    for name, code in finished.items():
        sim.finish(name, code)
    sim.step()
    assert sim.phase is phase


def test_success_sets_the_completion_time_and_a_condition() -> None:
    sim = Sim(make_job())
    sim.settle()
    sim.finish("demo-master-0", 0)
    sim.step()
    assert sim.job.status is not None
    assert sim.job.status.completion_time is not None
    assert [c.type for c in sim.job.status.conditions if c.status == "True"] == [JobPhase.SUCCEEDED]


def test_phase_changes_are_recorded_as_events() -> None:
    sim = Sim(make_job())
    sim.step()
    events = [a.reason for a in sim.step() if isinstance(a, RecordEvent)]
    assert "ReplicasCreated" in events


def test_same_observation_twice_gives_no_new_actions() -> None:
    sim = Sim(make_job())
    sim.settle()
    assert sim.step() == ()
    assert sim.step() == ()


def test_reconcile_does_not_change_its_input_job() -> None:
    job = make_job()
    before = job.model_dump()
    reconcile(job, [], T0)
    assert job.model_dump() == before


def test_repeated_round_before_observing_repeats_the_same_creates() -> None:
    job = make_job(master=False)
    first = reconcile(job, [], T0)
    again = reconcile(job.model_copy(update={"status": first.status}), [], T0)
    assert kinds(again.actions) == kinds(first.actions)


def test_replicas_of_other_jobs_are_ignored() -> None:
    sim = Sim(make_job(master=False, workers=1))
    sim.foreign = [
        Replica("ns", "other", "demo-worker-7", ReplicaType.WORKER, 7, ReplicaPhase.FAILED, "x")
    ]
    sim.settle()
    assert all("demo-worker-7" not in k for acts in sim.history for k in kinds(acts))
    assert sim.phase is JobPhase.RUNNING


def test_naive_clock_is_rejected() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        reconcile(make_job(), [], T0.replace(tzinfo=None))


def test_no_replica_is_created_until_the_master_service_is_observed() -> None:
    job = make_job()
    first = reconcile(job, [], T0)
    again = reconcile(job.model_copy(update={"status": first.status}), [], T0)
    assert [type(a) for a in again.actions] == [CreateService]


def test_one_successful_create_event_per_replica_type_and_pass() -> None:
    sim = Sim(make_job(workers=12))
    sim.step()  # the master's service
    created = [a.message for a in sim.step() if isinstance(a, RecordEvent)]
    assert [m for m in created if m.startswith("created")] == [
        "created replica demo-master-0",
        "created 12 worker replicas: demo-worker-0, demo-worker-1, demo-worker-2, ..., "
        "demo-worker-11",
    ]
