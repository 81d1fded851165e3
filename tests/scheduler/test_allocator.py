from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from flexjob.api import ElasticJob, JobPhase, JobPriority, ObjectMeta, ReplicaSpec, ReplicaType
from flexjob.core.allocator import GoodputPolicy, JobInfo, NodeInfo, Resources, StaticPolicy
from flexjob.operator.local.loop import LocalJobLoop
from flexjob.platform.local import LocalPlatform
from flexjob.scheduler.allocator import Allocator, StaticNodes
from tests.server.memory_platform import MemoryPlatform
from tests.support.local_jobs import local_job, wait_for_file_then_exit
from tests.support.polling import wait_until

W = ReplicaType.WORKER


def _nodes(count: int = 2, gpus: int = 4) -> StaticNodes:
    return StaticNodes([NodeInfo(f"node-{i}", Resources(gpu=gpus)) for i in range(count)])


def _job(name: str, replicas: int, *, preemptible: bool, hi: int = 8) -> ElasticJob:
    template = {"spec": {"containers": [{"resources": {"limits": {"nvidia.com/gpu": 1}}}]}}
    return ElasticJob(
        metadata=ObjectMeta(name=name),
        spec={
            "preemptible": preemptible,
            "replicaSpecs": {
                "worker": ReplicaSpec(
                    replicas=replicas, min_replicas=1, max_replicas=hi, template=template
                )
            },
        },
    )


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def _allocation(platform: MemoryPlatform, name: str) -> list[str]:
    status = platform.get_job("default", name).status
    assert status is not None
    return status.allocation.get(W, [])


def test_a_new_job_gets_one_node_per_replica_in_status_allocation() -> None:
    platform = MemoryPlatform()
    platform.create_job(_job("a", 3, preemptible=False))
    Allocator(platform, StaticPolicy(), _nodes()).step()
    assert _allocation(platform, "a") == ["node-0", "node-0", "node-0"]


def test_a_non_preemptible_job_keeps_its_nodes_when_preemptible_jobs_are_reoptimised() -> None:
    platform, clock = MemoryPlatform(), Clock()
    platform.create_job(_job("fixed", 3, preemptible=False))
    allocator = Allocator(platform, GoodputPolicy(), _nodes(), period=60, clock=clock)
    allocator.step()
    placed = _allocation(platform, "fixed")
    for i in range(3):
        platform.create_job(_job(f"elastic-{i}", 4, preemptible=True))
        clock.now += timedelta(seconds=61)
        allocator.step()
        assert _allocation(platform, "fixed") == placed


def test_goodput_resizes_preemptible_jobs_to_share_the_cluster() -> None:
    platform, clock = MemoryPlatform(), Clock()
    platform.create_job(_job("first", 8, preemptible=True))
    allocator = Allocator(platform, GoodputPolicy(), _nodes(), period=60, clock=clock)
    allocator.step()
    assert len(_allocation(platform, "first")) == 8
    platform.create_job(_job("second", 8, preemptible=True))
    clock.now += timedelta(seconds=61)
    allocator.step()
    first, second = _allocation(platform, "first"), _allocation(platform, "second")
    assert first and second and len(first) + len(second) <= 8
    status = platform.get_job("default", "second").status
    assert status is not None and status.replicas[W] == len(second)


def test_finished_jobs_are_left_alone() -> None:
    platform = MemoryPlatform()
    platform.create_job(_job("done", 2, preemptible=True))
    platform.patch_job_status("default", "done", {"phase": JobPhase.SUCCEEDED})
    assert Allocator(platform, StaticPolicy(), _nodes()).step() == {}


def test_period_must_be_positive() -> None:
    with pytest.raises(ValueError, match="period must be > 0"):
        Allocator(MemoryPlatform(), StaticPolicy(), _nodes(), period=0)


def test_the_local_operator_places_each_replica_on_its_allocated_node(tmp_path: Path) -> None:
    platform = LocalPlatform(tmp_path / "home")
    stop = tmp_path / "stop"
    try:
        job = local_job("placed", master=None, worker=wait_for_file_then_exit(stop), workers=3)
        job.spec.preemptible = True
        platform.create_job(job)
        nodes = StaticNodes([NodeInfo(f"n{i}", Resources(cpu=2.0)) for i in range(2)])
        assert Allocator(platform, StaticPolicy(), nodes).step()
        loop = LocalJobLoop(platform, "default", "placed", interval=0.05)
        wait_until(lambda: len([r for r in loop.step().replicas if r.active]) == 3, timeout=20)
        status = platform.get_job("default", "placed").status
        assert status is not None
        by_index = {r.index: r.node for r in platform.list_replicas("default", "placed")}
        assert [by_index[i] for i in range(3)] == status.allocation[W]
        stop.touch()
        loop.run()
    finally:
        platform.close()


def test_a_job_resized_by_hand_is_placed_afresh_with_its_new_count() -> None:
    platform = MemoryPlatform()
    platform.create_job(_job("a", 2, preemptible=True))
    allocator = Allocator(platform, StaticPolicy(), _nodes())
    allocator.step()
    platform.patch_job_status("default", "a", {"replicas": {W: 5}})
    allocator.step()
    assert len(_allocation(platform, "a")) == 5


def test_a_high_priority_job_is_placed_before_an_older_normal_one() -> None:
    platform, clock = MemoryPlatform(), Clock()
    older = _job("older", 8, preemptible=False)
    older.metadata.creation_timestamp = "2025-12-31T00:00:00Z"
    urgent = _job("urgent", 8, preemptible=False)
    urgent.metadata.creation_timestamp = "2025-12-31T23:00:00Z"
    urgent.spec.priority = JobPriority.HIGH
    platform.create_job(older)
    platform.create_job(urgent)
    Allocator(platform, StaticPolicy(), _nodes(count=2, gpus=4), clock=clock).step()
    assert len(_allocation(platform, "urgent")) == 8
    assert _allocation(platform, "older") == []


def test_attained_service_grows_with_the_replicas_a_job_holds() -> None:
    platform, clock = MemoryPlatform(), Clock()
    platform.create_job(_job("small", 1, preemptible=False))
    platform.create_job(_job("big", 4, preemptible=False))
    allocator = Allocator(platform, StaticPolicy(), _nodes(), period=60, clock=clock)
    allocator.step()
    assert allocator.attained == {}  # nothing held yet
    clock.now += timedelta(seconds=100)
    allocator.step()
    assert allocator.attained == {"default/small": 100.0, "default/big": 400.0}
    platform.patch_job_status("default", "big", {"phase": JobPhase.SUCCEEDED})
    clock.now += timedelta(seconds=10)
    allocator.step()
    assert allocator.attained == {"default/small": 110.0}  # finished jobs are forgotten


def test_the_policy_sees_each_jobs_attained_service() -> None:
    seen: dict[str, float] = {}

    class Recording(StaticPolicy):
        def optimize(
            self,
            jobs: Sequence[JobInfo],
            nodes: Sequence[NodeInfo],
            previous: Mapping[str, Sequence[str]],
        ) -> dict[str, list[str]]:
            seen.update({job.id: job.attained for job in jobs})
            return super().optimize(jobs, nodes, previous)

    platform, clock = MemoryPlatform(), Clock()
    platform.create_job(_job("a", 2, preemptible=True))
    allocator = Allocator(platform, Recording(), _nodes(), period=60, clock=clock)
    allocator.step()
    clock.now += timedelta(seconds=61)
    allocator.step()
    assert seen["default/a/worker"] == 122.0  # 2 replicas x 61 s
