"""ScalePlan resources: per-type resources for new replicas, migratePods relaunches."""

import pytest

from flexjob.api import (
    JobPhase,
    ObjectMeta,
    PodRef,
    ReplicaResourceSpec,
    ReplicaType,
    ResourceSpec,
    ScalePlan,
    ScalePlanPhase,
    ScalePlanSpec,
)
from flexjob.core.operator.actions import CreateReplica, RecordEvent
from flexjob.core.operator.replica_resources import requirements
from tests.core.operator.reconcile_sim import Sim, kinds, make_job


def resource_plan(
    workers: int | None = None,
    resource: ResourceSpec | None = None,
    migrate: dict[str, ResourceSpec] | None = None,
    name: str = "p1",
) -> ScalePlan:
    specs = {}
    if workers is not None:
        specs[ReplicaType.WORKER] = ReplicaResourceSpec(
            replicas=workers, resource=resource or ResourceSpec()
        )
    return ScalePlan(
        metadata=ObjectMeta(name=name, namespace="ns"),
        spec=ScalePlanSpec(
            owner_job="demo",
            replica_resource_specs=specs,
            migrate_pods=[PodRef(name=n, resource=r) for n, r in (migrate or {}).items()],
        ),
    )


def created(actions: tuple[object, ...]) -> dict[str, CreateReplica]:
    return {a.request.name: a for a in actions if isinstance(a, CreateReplica)}


def main_resources(action: CreateReplica) -> tuple[dict[str, object], dict[str, object]]:
    res = action.request.template.spec.containers[0].resources
    return dict(res.requests), dict(res.limits)


@pytest.fixture
def running() -> Sim:
    sim = Sim(make_job(workers=2))
    sim.settle()
    assert sim.phase is JobPhase.RUNNING
    return sim


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (ResourceSpec(cpu=2), {"cpu": "2"}),
        (ResourceSpec(cpu=1.5, memory=1536), {"cpu": "1.5", "memory": "1536Mi"}),
        (ResourceSpec(gpu=1), {"nvidia.com/gpu": "1"}),
        (ResourceSpec(), {}),
    ],
    ids=["cores", "cores-and-mib", "gpu", "nothing"],
)
def test_resource_spec_renders_as_kubernetes_quantities(
    spec: ResourceSpec, expected: dict[str, str]
) -> None:
    assert requirements(spec) == expected


def test_plan_resources_apply_to_new_replicas_of_that_type(running: Sim) -> None:
    new = created(running.step(resource_plan(workers=3, resource=ResourceSpec(cpu=2, memory=2048))))
    assert list(new) == ["demo-worker-2"]
    requests, limits = main_resources(new["demo-worker-2"])
    assert requests == limits == {"cpu": "2", "memory": "2048Mi"}
    assert new["demo-worker-2"].request.resources == {"cpu": "2", "memory": "2048Mi"}


def test_plan_resources_are_kept_in_job_status(running: Sim) -> None:
    running.step(resource_plan(workers=2, resource=ResourceSpec(memory=2048)))
    running.step(resource_plan(workers=2, resource=ResourceSpec(cpu=4), name="p2"))
    assert running.job.status is not None
    assert running.job.status.replica_resources == {
        ReplicaType.WORKER: ResourceSpec(cpu=4, memory=2048)
    }


def test_plan_resources_leave_running_replicas_alone(running: Sim) -> None:
    actions = running.step(resource_plan(workers=2, resource=ResourceSpec(memory=2048)))
    assert kinds(actions) == ["plan p1 Succeeded"]


def test_migrate_pods_relaunches_exactly_the_named_replica(running: Sim) -> None:
    first = running.step(resource_plan(migrate={"worker-1": ResourceSpec(memory=1536)}))
    assert kinds(first) == ["delete demo-worker-1", "plan p1 Succeeded"]
    second = created(running.step())
    assert list(second) == ["demo-worker-1"]
    requests, limits = main_resources(second["demo-worker-1"])
    assert requests["memory"] == limits["memory"] == "1536Mi"


def test_migrated_replica_keeps_its_index(running: Sim) -> None:
    running.step(resource_plan(migrate={"demo-worker-0": ResourceSpec(cpu=3)}))
    new = created(running.step())["demo-worker-0"]
    assert new.request.index == 0
    assert main_resources(new)[0]["cpu"] == "3"


def test_migration_counts_no_restart(running: Sim) -> None:
    running.step(resource_plan(migrate={"worker-1": ResourceSpec(memory=1536)}))
    running.settle()
    assert running.job.status is not None
    assert running.job.status.restart_count == 0
    assert running.phase is JobPhase.RUNNING


def test_migrating_a_failed_replica_counts_no_restart(running: Sim) -> None:
    running.finish("demo-worker-1", 137)
    running.step(resource_plan(migrate={"worker-1": ResourceSpec(memory=1536)}))
    running.settle()
    assert running.job.status is not None
    assert running.job.status.restart_count == 0


def test_job_is_rescheduling_while_a_replica_migrates(running: Sim) -> None:
    running.step(resource_plan(migrate={"worker-1": ResourceSpec(memory=1536)}))
    assert running.phase is JobPhase.RESCHEDULING
    running.step()
    assert running.phase is JobPhase.RESCHEDULING
    running.settle()
    assert running.phase is JobPhase.RUNNING


def test_migration_is_idempotent(running: Sim) -> None:
    plan = resource_plan(migrate={"worker-1": ResourceSpec(memory=1536)})
    running.step(plan)
    running.settle()
    again = running.step(plan)  # the plan seen again (its Succeeded status not stored yet)
    assert kinds(again) == ["plan p1 Succeeded"]
    assert [a for a in running.step() if not isinstance(a, RecordEvent)] == []


def test_migrate_pods_naming_an_unknown_replica_fails_the_plan(running: Sim) -> None:
    actions = running.step(resource_plan(migrate={"worker-7": ResourceSpec(memory=1536)}))
    assert kinds(actions) == ["plan p1 Failed"]
    update = running.plan_updates[-1]
    assert update.phase is ScalePlanPhase.FAILED
    assert "worker-7" in update.message
    assert running.job.status is not None
    assert running.job.status.migrated_replicas == {}


def test_migrate_pods_cannot_relaunch_the_master(running: Sim) -> None:
    actions = running.step(resource_plan(migrate={"master-0": ResourceSpec(memory=1536)}))
    assert kinds(actions) == ["plan p1 Failed"]
    assert "master" in running.plan_updates[-1].message


def test_a_later_type_resource_change_replaces_a_migrated_replicas_resources(
    running: Sim,
) -> None:
    running.step(resource_plan(migrate={"worker-1": ResourceSpec(memory=1536)}))
    running.settle()
    running.step(resource_plan(workers=2, resource=ResourceSpec(memory=4096), name="p2"))
    running.finish("demo-worker-1", 137)
    running.step()
    new = created(running.step())["demo-worker-1"]
    assert main_resources(new)[0]["memory"] == "4096Mi"


def test_a_plan_restating_the_type_resources_keeps_a_migrated_replicas_resources(
    running: Sim,
) -> None:
    running.step(resource_plan(workers=2, resource=ResourceSpec(memory=1024)))
    running.step(resource_plan(migrate={"worker-1": ResourceSpec(memory=1536)}, name="p2"))
    running.settle()
    running.step(resource_plan(workers=2, resource=ResourceSpec(memory=1024), name="p3"))
    assert running.job.status is not None
    assert running.job.status.migrated_replicas == {"worker-1": ResourceSpec(memory=1536)}
