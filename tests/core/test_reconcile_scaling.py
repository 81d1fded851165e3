"""ScalePlans, status.replicas and allocation: what reconcile creates and removes."""

import pytest

from flexjob.api import (
    JobPhase,
    ObjectMeta,
    PodRef,
    ReplicaResourceSpec,
    ReplicaType,
    ScalePlan,
    ScalePlanPhase,
    ScalePlanSpec,
    ScalePlanStatus,
)
from flexjob.core.actions import CreateReplica
from tests.core.reconcile_sim import Sim, kinds, make_job


def plan(
    workers: int | None = None,
    remove: list[str] | None = None,
    owner: str = "demo",
    phase: ScalePlanPhase | None = None,
) -> ScalePlan:
    specs = {} if workers is None else {ReplicaType.WORKER: ReplicaResourceSpec(replicas=workers)}
    return ScalePlan(
        metadata=ObjectMeta(name="p1", namespace="ns"),
        spec=ScalePlanSpec(
            owner_job=owner,
            replica_resource_specs=specs,
            remove_pods=[PodRef(name=n) for n in remove or []],
        ),
        status=None if phase is None else ScalePlanStatus(phase=phase),
    )


@pytest.fixture
def running() -> Sim:
    sim = Sim(make_job(workers=3))
    sim.settle()
    return sim


def test_scale_plan_adds_workers(running: Sim) -> None:
    assert kinds(running.step(plan(workers=5))) == [
        "plan p1 Succeeded",
        "create demo-worker-3",
        "create demo-worker-4",
    ]
    assert running.phase is JobPhase.RESCHEDULING


def test_scale_plan_folds_into_status_replicas(running: Sim) -> None:
    running.step(plan(workers=4))
    assert running.job.status is not None
    assert running.job.status.replicas == {ReplicaType.WORKER: 4}


def test_job_returns_to_running_after_rescheduling(running: Sim) -> None:
    running.step(plan(workers=4))
    running.settle()
    assert running.phase is JobPhase.RUNNING


def test_scale_plan_shrinks_from_the_highest_index(running: Sim) -> None:
    assert kinds(running.step(plan(workers=1))) == [
        "plan p1 Succeeded",
        "delete demo-worker-2",
        "delete demo-worker-1",
    ]


@pytest.mark.parametrize(
    "ref",
    ["demo-worker-1", "worker-1"],
    ids=["full-name", "short-name"],
)
def test_remove_pods_removes_exactly_the_named_replica(running: Sim, ref: str) -> None:
    actions = kinds(running.step(plan(remove=[ref])))
    assert [a for a in actions if a.startswith("delete")] == ["delete demo-worker-1"]
    running.settle()
    assert sorted(running.replicas) == ["demo-master-0", "demo-worker-0", "demo-worker-2"]


def test_remove_pods_never_removes_a_replica_of_another_job(running: Sim) -> None:
    actions = kinds(running.step(plan(remove=["other-worker-0"])))
    assert [a for a in actions if a.startswith("delete")] == []


def test_plan_of_another_job_is_ignored(running: Sim) -> None:
    assert kinds(running.step(plan(workers=9, owner="other"))) == []


def test_finished_plan_is_ignored(running: Sim) -> None:
    assert kinds(running.step(plan(workers=9, phase=ScalePlanPhase.SUCCEEDED))) == []


def test_status_replicas_override_the_spec() -> None:
    job = make_job(master=False, workers=1)
    sim = Sim(job)
    sim.step()
    assert sim.job.status is not None
    sim.job.status.replicas = {ReplicaType.WORKER: 2}
    assert kinds(sim.step()) == ["create demo-worker-1"]


def test_allocation_places_replicas_on_their_nodes() -> None:
    sim = Sim(make_job(master=False, workers=2))
    sim.step()
    assert sim.job.status is not None
    sim.replicas.clear()
    sim.job.status.allocation = {ReplicaType.WORKER: ["n1", "n2"]}
    creates = [a.request for a in sim.step() if isinstance(a, CreateReplica)]
    assert [r.node for r in creates] == ["n1", "n2"]
    assert creates[1].template.spec.node_selector == {"kubernetes.io/hostname": "n2"}


def test_changed_allocation_moves_the_replica_and_reschedules() -> None:
    sim = Sim(make_job(master=False, workers=2))
    sim.job = sim.job.model_copy(deep=True)
    sim.step()
    assert sim.job.status is not None
    sim.job.status.allocation = {ReplicaType.WORKER: ["n1", "n2"]}
    sim.replicas.clear()
    sim.settle()
    sim.job.status.allocation = {ReplicaType.WORKER: ["n1", "n3"]}
    assert kinds(sim.step()) == ["delete demo-worker-1"]
    assert sim.phase is JobPhase.RESCHEDULING
    creates = [a.request for a in sim.step() if isinstance(a, CreateReplica)]
    assert [r.node for r in creates] == ["n3"]


def test_deleting_replica_keeps_its_name_until_gone(running: Sim) -> None:
    from dataclasses import replace

    running.finish("demo-worker-1", 1)
    running.step()
    gone = running.history[-1]
    assert "delete demo-worker-1" in kinds(gone)
    running.replicas["demo-worker-1"] = replace(
        running.replicas.get("demo-worker-0"),  # type: ignore[arg-type]
        name="demo-worker-1",
        index=1,
        deleting=True,
    )
    assert kinds(running.step()) == []


def test_stale_plan_seen_again_does_not_shrink_twice(running: Sim) -> None:
    stale = plan(remove=["worker-1"])
    before = dict(running.replicas)
    running.step(stale)
    running.replicas = before  # the delete is not observed yet; the plan is passed again
    running.step(stale)
    assert running.job.status is not None
    assert running.job.status.replicas == {ReplicaType.WORKER: 2}


def test_plan_for_a_type_the_job_lacks_is_rejected(running: Sim) -> None:
    bad = plan()
    bad.spec.replica_resource_specs = {ReplicaType.PS: ReplicaResourceSpec(replicas=2)}
    assert kinds(running.step(bad)) == ["plan p1 Failed"]
    assert "ps cannot be scaled" in running.plan_updates[-1].message
