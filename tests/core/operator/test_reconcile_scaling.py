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
from flexjob.core.operator.actions import CreateReplica
from tests.core.operator.reconcile_sim import Sim, kinds, make_job


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
    sim.settle()
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


def ps_plan(hosts: list[str], ps: int | None = None) -> ScalePlan:
    out = plan()
    out.spec.ps_hosts = hosts
    if ps is not None:
        out.spec.replica_resource_specs = {ReplicaType.PS: ReplicaResourceSpec(replicas=ps)}
    return out


@pytest.fixture
def with_ps() -> Sim:
    sim = Sim(make_job(workers=1, ps=3))
    sim.settle()
    return sim


@pytest.mark.parametrize(
    "hosts",
    [["demo-ps-0", "demo-ps-1"], ["ps-1:2222", "ps-0:2222"]],
    ids=["replica-names", "short-names-with-ports"],
)
def test_ps_hosts_keep_the_ps_they_name_and_remove_the_others(
    with_ps: Sim, hosts: list[str]
) -> None:
    actions = kinds(with_ps.step(ps_plan(hosts)))
    assert "plan p1 Succeeded" in actions
    assert [a for a in actions if a.startswith("delete")] == ["delete demo-ps-2"]
    assert with_ps.job.status is not None
    assert with_ps.job.status.replicas[ReplicaType.PS] == 2
    with_ps.settle()
    assert sorted(r for r in with_ps.replicas if "-ps-" in r) == ["demo-ps-0", "demo-ps-1"]


def test_ps_hosts_naming_a_ps_to_come_grows_the_set(with_ps: Sim) -> None:
    actions = kinds(with_ps.step(ps_plan(["demo-ps-0", "demo-ps-1", "demo-ps-2", "demo-ps-3"])))
    assert "plan p1 Succeeded" in actions
    assert not [a for a in actions if a.startswith("delete")]
    with_ps.settle()
    assert sorted(r for r in with_ps.replicas if "-ps-" in r) == [f"demo-ps-{i}" for i in range(4)]


@pytest.mark.parametrize(
    ("hosts", "ps", "says"),
    [
        (["other-ps-0"], None, "'other-ps-0' is not a ps replica of job demo"),
        (["demo-worker-0"], None, "'demo-worker-0' is not a ps replica of job demo"),
        (["ps-0", "ps-2"], None, "names ps [0, 2]; a PS set of 2 is ps 0 .. 1"),
        (["ps-0", "ps-0"], None, "names ps [0, 0]"),
        (["ps-0", "ps-1"], 3, "names 2 ps, replicaResourceSpecs.ps.replicas asks for 3"),
    ],
)
def test_ps_hosts_naming_unknown_ps_reject_the_plan_and_change_nothing(
    with_ps: Sim, hosts: list[str], ps: int | None, says: str
) -> None:
    assert kinds(with_ps.step(ps_plan(hosts, ps))) == ["plan p1 Failed"]
    message = with_ps.plan_updates[-1].message
    assert message.startswith("psHosts: ") and says in message
    assert with_ps.job.status is not None
    assert with_ps.job.status.replicas.get(ReplicaType.PS, 3) == 3


def test_ps_hosts_in_a_job_without_ps_are_rejected(running: Sim) -> None:
    assert kinds(running.step(ps_plan(["ps-0"]))) == ["plan p1 Failed"]
    assert running.plan_updates[-1].message == "psHosts: job demo has no ps replicas"


@pytest.mark.parametrize(("asked", "kept"), [(9, 4), (0, 2), (3, 3)])
def test_a_folded_scale_plan_is_kept_within_the_declared_bounds(asked: int, kept: int) -> None:
    job = make_job(workers=3)
    spec = job.spec.replica_specs[ReplicaType.WORKER]
    spec.min_replicas, spec.max_replicas = 2, 4
    sim = Sim(job)
    sim.settle()
    sim.step(plan(workers=asked))
    assert sim.job.status is not None
    assert sim.job.status.replicas == {ReplicaType.WORKER: kept}
    sim.settle()
    assert sum(1 for r in sim.replicas if "-worker-" in r) == kept
