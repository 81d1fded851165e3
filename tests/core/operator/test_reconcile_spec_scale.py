"""The newest intent wins between a ScalePlan (or any ``status.replicas`` writer) and the spec's
count (``kubectl scale``, ``kubectl apply``): ``core.operator.replica_plan.follow_spec``."""

import pytest

from flexjob.api import (
    ElasticJob,
    ObjectMeta,
    ReplicaResourceSpec,
    ReplicaType,
    ScalePlan,
    ScalePlanSpec,
)
from flexjob.core.operator.replica_plan import follow_spec
from tests.core.operator.reconcile_sim import Sim, kinds, make_job

WORKER = ReplicaType.WORKER


def plan(workers: int, name: str = "p1") -> ScalePlan:
    return ScalePlan(
        metadata=ObjectMeta(name=name, namespace="ns"),
        spec=ScalePlanSpec(
            owner_job="demo",
            replica_resource_specs={WORKER: ReplicaResourceSpec(replicas=workers)},
        ),
    )


def elastic(workers: int) -> ElasticJob:
    """The sim's job with ``workers`` workers between 1 and 6."""
    job = make_job(workers=workers)
    job.spec.replica_specs[WORKER].min_replicas = 1
    job.spec.replica_specs[WORKER].max_replicas = 6
    return job


def scale_spec(sim: Sim, workers: int) -> None:
    """What ``kubectl scale --replicas N`` does: the spec's count changes, nothing else."""
    job = sim.job.model_copy(deep=True)
    job.spec.replica_specs[WORKER].replicas = workers
    sim.job = job


def workers(sim: Sim) -> list[str]:
    return sorted(n for n in sim.replicas if "-worker-" in n)


@pytest.fixture
def planned() -> Sim:
    """Three workers scaled to five by a ScalePlan, settled."""
    sim = Sim(elastic(3))
    sim.settle()
    sim.step(plan(5))
    sim.settle()
    return sim


def test_the_plans_count_stays_while_the_spec_is_unchanged(planned: Sim) -> None:
    planned.settle()
    assert len(workers(planned)) == 5


def test_a_spec_scaled_after_a_plan_wins(planned: Sim) -> None:
    scale_spec(planned, 2)
    assert kinds(planned.step()) == [
        "delete demo-worker-4",
        "delete demo-worker-3",
        "delete demo-worker-2",
    ]
    assert planned.job.status is not None and WORKER not in planned.job.status.replicas


def test_a_plan_after_the_spec_was_scaled_wins(planned: Sim) -> None:
    scale_spec(planned, 2)
    planned.settle()
    planned.step(plan(4, "p2"))
    planned.settle()
    assert workers(planned) == [f"demo-worker-{i}" for i in range(4)]


def test_a_spec_scaled_after_a_server_request_wins() -> None:
    sim = Sim(elastic(2))
    sim.settle()
    sim.ask(worker=4)
    sim.settle()
    scale_spec(sim, 3)
    sim.settle()
    assert workers(sim) == ["demo-worker-0", "demo-worker-1", "demo-worker-2"]


def test_a_status_without_the_seen_spec_counts_keeps_its_replicas() -> None:
    """A job from before ``specReplicas`` existed: its first pass records the spec's counts
    and drops nothing."""
    job = elastic(3)
    sim = Sim(job)
    sim.settle()
    sim.ask(worker=5)
    assert sim.job.status is not None
    status = sim.job.status.model_copy(update={"spec_replicas": {}})
    followed = follow_spec(sim.job, status)
    assert (followed.replicas, followed.spec_replicas) == ({WORKER: 5}, {WORKER: 3})


def test_the_master_is_not_followed(planned: Sim) -> None:
    """Only scalable types are followed: the master always follows the spec by itself."""
    assert planned.job.status is not None
    assert set(planned.job.status.spec_replicas) == {WORKER}
