"""What a replica asks for (``core.operator.replica_resources.replica_asks``): its main container's
requests, and its limits where it requests nothing; the Allocator and the DI logic-learner rule
count the same GPUs from it."""

from typing import Any

import pytest

from flexjob.api import ElasticJob, ObjectMeta, PodTemplateSpec, ReplicaSpec, ReplicaType
from flexjob.core.allocator import Resources
from flexjob.core.operator.logic_learners import learner_gpus
from flexjob.core.operator.replica_resources import replica_asks
from flexjob.scheduler.jobview import replica_resources


def template(**resources: dict[str, Any]) -> PodTemplateSpec:
    container = {"name": "main", "image": "x", "resources": resources}
    side = {"name": "side", "image": "x", "resources": {"requests": {"cpu": "8"}}}
    return PodTemplateSpec.model_validate({"spec": {"containers": [container, side]}})


def learner_job(**resources: dict[str, Any]) -> ElasticJob:
    spec = ReplicaSpec(replicas=1, template=template(**resources))
    return ElasticJob(metadata=ObjectMeta(name="j"), spec={"replicaSpecs": {"learner": spec}})


def test_a_replica_asks_for_its_requests_and_its_limits_where_it_requests_nothing() -> None:
    asks = replica_asks(template(requests={"cpu": "1"}, limits={"cpu": "4", "memory": "2Gi"}))
    assert asks == {"cpu": "1", "memory": "2Gi"}


def test_a_replica_without_containers_asks_for_nothing() -> None:
    assert replica_asks(PodTemplateSpec.model_validate({"spec": {"containers": []}})) == {}


@pytest.mark.parametrize(
    ("resources", "gpus"),
    [
        ({"limits": {"nvidia.com/gpu": 2}}, 2),
        ({"requests": {"nvidia.com/gpu": 2}}, 2),
        ({"requests": {"nvidia.com/gpu": 1}, "limits": {"nvidia.com/gpu": 1}}, 1),
        ({"requests": {"cpu": "2"}}, 0),
    ],
)
def test_the_allocator_and_the_logic_learner_rule_count_the_same_gpus(
    resources: dict[str, dict[str, Any]], gpus: int
) -> None:
    job = learner_job(**resources)
    assert learner_gpus(job) == gpus
    assert replica_resources(job, ReplicaType.LEARNER).gpu == gpus


def test_the_allocator_counts_a_replica_s_cpu_and_memory_from_what_it_asks() -> None:
    job = learner_job(requests={"cpu": "1.5"}, limits={"cpu": "4", "memory": "2Gi"})
    assert replica_resources(job, ReplicaType.LEARNER) == Resources(gpu=0, cpu=1.5, memory=2048)
