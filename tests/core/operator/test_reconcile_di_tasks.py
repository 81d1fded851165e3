"""Several DIJob v2 tasks of one type through the operator: each replica created from its own
task's template, carrying its task's name in its labels and environment, and the job
Succeeded only when every task's replicas have."""

from flexjob.api import JobPhase, ReplicaType
from flexjob.api.defaults import apply_defaults
from flexjob.api.load import job_from_dict
from flexjob.api.names import ENV_TASK_NAME, LABEL_TASK_NAME
from flexjob.core.operator.actions import CreateReplica
from flexjob.core.replicas import ReplicaRequest
from tests.api.specs import two_collector_tasks
from tests.core.operator.reconcile_sim import Sim


def settled() -> Sim:
    sim = Sim(apply_defaults(job_from_dict(two_collector_tasks())))
    sim.settle()
    return sim


def collectors(sim: Sim) -> dict[str, ReplicaRequest]:
    created = [a.request for step in sim.history for a in step if isinstance(a, CreateReplica)]
    return {r.name: r for r in created if r.type is ReplicaType.COLLECTOR}


def test_each_task_gets_its_own_replicas_named_in_labels_and_env() -> None:
    made = collectors(settled())
    tasks = {n: (r.labels[LABEL_TASK_NAME], r.env[ENV_TASK_NAME]) for n, r in made.items()}
    assert tasks == {
        f"gobigger-test-collector-{i}": (t, t)
        for i, t in enumerate(["collector"] * 2 + ["collector-b"] * 3)
    }


def test_each_replica_runs_its_own_tasks_template() -> None:
    made = collectors(settled())
    images = [made[f"gobigger-test-collector-{i}"].image for i in range(5)]
    assert images == ["opendilab/ding:nightly"] * 2 + ["b"] * 3


def test_a_one_task_type_carries_its_tasks_name() -> None:
    sim = settled()
    (learner,) = [
        a.request
        for step in sim.history
        for a in step
        if isinstance(a, CreateReplica) and a.request.type is ReplicaType.LEARNER
    ]
    assert learner.labels[LABEL_TASK_NAME] == "learner"


def test_the_job_succeeds_only_when_every_tasks_replicas_have() -> None:
    sim = settled()
    for name in [n for n in sim.replicas if "-collector-" not in n]:
        sim.finish(name, 0)
    for i in range(4):  # collector-b's replicas are collectors 2..4: one still runs
        sim.finish(f"gobigger-test-collector-{i}", 0)
    sim.step()
    assert sim.phase is not JobPhase.SUCCEEDED
    sim.finish("gobigger-test-collector-4", 0)
    sim.step()
    assert sim.phase is JobPhase.SUCCEEDED
