"""A replica the platform reports OOMKilled is relaunched with more memory, bounded; the same
rule for every platform (the local runtime and Kubernetes both report ``Replica.reason``)."""

from dataclasses import replace

import pytest

from flexjob.api import (
    JobPhase,
    ObjectMeta,
    PodRef,
    ReplicaType,
    ResourceSpec,
    ScalePlan,
    ScalePlanSpec,
)
from flexjob.api.job import ElasticJob
from flexjob.core.operator.actions import CreateReplica, DeleteReplica, RecordEvent
from flexjob.core.planner import mentions_oom
from flexjob.core.replicas import OOM_KILLED
from tests.core.operator.reconcile_sim import Sim, make_job


def limited_job(limit: str | None = "256Mi", backoff: int = 10) -> ElasticJob:
    job = make_job(backoff=backoff)
    if limit is not None:
        worker = job.spec.replica_specs[ReplicaType.WORKER]
        worker.template.spec.containers[0].resources.limits = {"memory": limit}
    return job


def oom_kill(sim: Sim, name: str = "demo-worker-1", reason: str = OOM_KILLED) -> None:
    sim.finish(name, 137)
    sim.replicas[name] = replace(sim.replicas[name], reason=reason, message="Killed")
    sim.step()


def memory_of_new(sim: Sim, name: str = "demo-worker-1") -> str | None:
    for actions in reversed(sim.history):
        for a in actions:
            if isinstance(a, CreateReplica) and a.request.name == name:
                return a.request.template.spec.containers[0].resources.limits.get("memory")
    return None


def test_an_oom_killed_replica_comes_back_with_half_again_its_memory() -> None:
    sim = Sim(limited_job())
    sim.settle()
    oom_kill(sim)
    sim.settle()
    assert memory_of_new(sim) == "384Mi"
    assert sim.job.status is not None
    assert sim.job.status.migrated_replicas == {"worker-1": ResourceSpec(memory=384)}
    assert sim.job.status.restart_count == 1
    [failed] = [
        a.message
        for actions in sim.history
        for a in actions
        if isinstance(a, RecordEvent) and a.reason == "ReplicaFailed"
    ]
    assert "exit code 137 (OOMKilled): Killed" in failed
    assert "relaunched with 384 MiB" in failed
    assert sim.phase is JobPhase.RUNNING


def test_repeated_ooms_grow_the_memory_up_to_four_times_the_declared_limit() -> None:
    sim = Sim(limited_job())
    sim.settle()
    grown = []
    for _ in range(6):
        oom_kill(sim)
        sim.settle()
        grown.append(memory_of_new(sim))
    assert grown == ["384Mi", "576Mi", "864Mi", "1024Mi", "1024Mi", "1024Mi"]


def test_a_replica_without_a_memory_limit_is_restarted_as_it_was() -> None:
    sim = Sim(limited_job(limit=None))
    sim.settle()
    oom_kill(sim)
    sim.settle()
    assert memory_of_new(sim) is None
    assert sim.job.status is not None and sim.job.status.migrated_replicas == {}


def test_an_ordinary_failure_keeps_the_memory() -> None:
    sim = Sim(limited_job())
    sim.settle()
    oom_kill(sim, reason="Error")
    sim.settle()
    assert memory_of_new(sim) == "256Mi"


def test_an_oom_relaunch_still_counts_against_backoff() -> None:
    sim = Sim(limited_job(backoff=0))
    sim.settle()
    oom_kill(sim)
    assert sim.phase is JobPhase.FAILED
    assert sim.job.status is not None and "(OOMKilled)" in sim.job.status.message


def test_a_masters_plan_for_the_same_oom_relaunches_nothing_more() -> None:
    sim = Sim(limited_job())
    sim.settle()
    oom_kill(sim)
    sim.settle()
    plan = ScalePlan(
        metadata=ObjectMeta(name="oom-plan", namespace="ns"),
        spec=ScalePlanSpec(
            owner_job="demo",
            migrate_pods=[PodRef(name="worker-1", resource=ResourceSpec(memory=384))],
        ),
    )
    actions = sim.step(plan)
    assert not [a for a in actions if isinstance(a, DeleteReplica)]
    bigger = plan.model_copy(deep=True)
    bigger.metadata.name = "bigger"
    bigger.spec.migrate_pods[0].resource = ResourceSpec(memory=600)
    actions = sim.step(bigger)
    assert [a.name for a in actions if isinstance(a, DeleteReplica)] == ["demo-worker-1"]


@pytest.mark.parametrize(
    ("text", "oom"),
    [
        ("worker 0 was OOMKilled (exit code 137)", True),
        ("worker 0 exited with 1: MemoryError", True),
        ("RuntimeError: DefaultCPUAllocator: can't allocate memory (Cannot allocate memory)", True),
        ("CUDA out of memory. Tried to allocate 2.00 GiB", True),
        ("worker 0 exited with 1: RuntimeError: boom", False),
        ("room for one more", False),
    ],
)
def test_out_of_memory_texts(text: str, oom: bool) -> None:
    assert mentions_oom(text) is oom
