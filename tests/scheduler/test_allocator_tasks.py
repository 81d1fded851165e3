"""The Allocator places every task of a job (a DIJob v2's learner, collector and evaluator),
each keyed ``namespace/name/type``; when tasks of two jobs want the same nodes, the job with
less attained service (summed over all its tasks) wins under ``tiresias``."""

from datetime import timedelta
from typing import Any

from flexjob.api import ReplicaType
from flexjob.api.defaults import apply_defaults
from flexjob.api.load import job_from_dict
from flexjob.core.allocator import NodeInfo, Resources, StaticPolicy, TiresiasPolicy
from flexjob.scheduler.allocator import Allocator, StaticNodes
from tests.scheduler.test_allocator import Clock
from tests.server.memory_platform import MemoryPlatform

L, C, E = ReplicaType.LEARNER, ReplicaType.COLLECTOR, ReplicaType.EVALUATOR


def task(kind: str, replicas: int, **requests: Any) -> dict[str, Any]:
    container = {"name": kind, "image": "x", "resources": {"requests": requests}}
    return {"type": kind, "replicas": replicas, "template": {"spec": {"containers": [container]}}}


def dijob_v2(name: str, *tasks: dict[str, Any], preemptible: bool = False) -> Any:
    raw = {
        "apiVersion": "diengine.opendilab.org/v2alpha1",
        "kind": "DIJob",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"preemptible": preemptible, "tasks": list(tasks)},
    }
    return apply_defaults(job_from_dict(raw))


def allocation(platform: MemoryPlatform, name: str) -> dict[ReplicaType, list[str]]:
    status = platform.get_job("default", name).status
    assert status is not None
    return dict(status.allocation)


def test_every_task_of_a_dijob_v2_gets_one_node_per_replica() -> None:
    platform = MemoryPlatform()
    platform.create_job(
        dijob_v2(
            "gobigger",
            task("learner", 1, **{"nvidia.com/gpu": 1, "cpu": 6}),
            task("collector", 2, cpu=2),
            task("evaluator", 1, cpu=1),
        )
    )
    nodes = [NodeInfo("gpu-0", Resources(gpu=1, cpu=8)), NodeInfo("cpu-0", Resources(cpu=4))]
    changed = Allocator(platform, StaticPolicy(), StaticNodes(nodes)).step()
    assert set(changed) == {
        "default/gobigger/learner",
        "default/gobigger/collector",
        "default/gobigger/evaluator",
    }
    placed = allocation(platform, "gobigger")
    assert placed[L] == ["gpu-0"]
    assert len(placed[C]) == 2 and len(placed[E]) == 1
    # 8 + 4 cores hold 6 + 2x2 + 1: the learner's node keeps room for at most one more core
    used = {"gpu-0": 6, "cpu-0": 0}
    for node in placed[C]:
        used[node] += 2
    used[placed[E][0]] += 1
    assert used["gpu-0"] <= 8 and used["cpu-0"] <= 4


def test_the_job_with_less_attained_service_takes_the_contested_gpu() -> None:
    platform, clock = MemoryPlatform(), Clock()
    nodes = StaticNodes([NodeInfo("n0", Resources(gpu=1, cpu=4))])
    allocator = Allocator(platform, TiresiasPolicy(thresholds=[3600]), nodes, clock=clock)

    def job(name: str) -> Any:
        learner = task("learner", 1, **{"nvidia.com/gpu": 1})
        return dijob_v2(name, learner, task("collector", 1, cpu=2), preemptible=True)

    platform.create_job(job("old"))
    allocator.step()
    assert allocation(platform, "old") == {L: ["n0"], C: ["n0"]}
    clock.now += timedelta(seconds=10)
    platform.create_job(job("new"))
    allocator.step()  # the GPU is taken: the new job's learner waits, its collector fits
    assert allocation(platform, "new").get(L, []) == []
    assert allocation(platform, "new")[C] == ["n0"]
    clock.now += timedelta(seconds=1800)
    allocator.step()
    # the old job's learner and collector together passed 3600 GPU-seconds: it yields the GPU
    assert allocator.attained["default/old"] >= 3600 > allocator.attained["default/new"]
    assert allocation(platform, "new")[L] == ["n0"]
    assert allocation(platform, "old")[L] == []
