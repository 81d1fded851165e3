"""A DI create request's ``cpus`` / ``memory`` / ``gpus`` are what each replica it creates
asks for, as di-server sets them: the main container's requests and limits. The server records
them with the new count; the operator (``reconcile``, through the test simulator) renders them."""

from typing import Any

import pytest
from fastapi.testclient import TestClient

from flexjob.api import ReplicaPhase, ReplicaType, ResourceSpec
from flexjob.core.operator.actions import CreateReplica
from flexjob.core.replicas import ReplicaRequest
from flexjob.platform.contract import Replica
from tests.core.operator.reconcile_sim import Sim

from .jobs import created, di_v1_job
from .memory_platform import MemoryPlatform

BASE = {"namespace": "default", "coordinator": "cartpole-coordinator-0"}


def _rendered(memory: MemoryPlatform) -> dict[str, ReplicaRequest]:
    """The replicas the operator creates for the stored job, by name."""
    sim = Sim(memory.get_job("default", "cartpole"))
    sim.settle()
    return {
        a.request.name: a.request
        for step in sim.history
        for a in step
        if isinstance(a, CreateReplica)
    }


def _main(request: ReplicaRequest) -> tuple[dict[str, Any], dict[str, Any]]:
    resources = request.template.spec.containers[0].resources
    return dict(resources.requests), dict(resources.limits)


def test_a_created_replica_requests_and_is_limited_to_what_its_request_asked(
    client: TestClient, memory: MemoryPlatform
) -> None:
    memory.create_job(di_v1_job())
    body = {
        **BASE,
        "collectors": {"replicas": 2, "cpus": "500m", "memory": "1Gi"},
        "learners": {"replicas": 1, "cpus": 2, "memory": 536870912, "gpus": 1},
    }
    created(client, body)
    rendered = _rendered(memory)
    collector = {"cpu": "0.5", "memory": "1024Mi"}
    assert _main(rendered["cartpole-collector-0"]) == (collector, collector)
    assert _main(rendered["cartpole-collector-1"]) == (collector, collector)
    learner = {"cpu": "2", "memory": "512Mi", "nvidia.com/gpu": "1"}
    assert _main(rendered["cartpole-learner-0"]) == (learner, learner)


def test_a_logic_learner_gets_its_gpus_and_its_aggregator_keeps_its_template(
    client: TestClient, memory: MemoryPlatform
) -> None:
    memory.create_job(di_v1_job())
    created(client, {**BASE, "learners": {"replicas": 1, "gpus": 2}})
    rendered = _rendered(memory)
    assert _main(rendered["cartpole-learner-0"]) == ({"nvidia.com/gpu": "2"},) * 2
    assert _main(rendered["cartpole-aggregator-0"]) == ({}, {})


def test_replicas_asked_for_without_quantities_keep_their_templates_resources(
    client: TestClient, memory: MemoryPlatform
) -> None:
    memory.create_job(di_v1_job(learner_gpus=1))
    created(client, {**BASE, "learners": {"replicas": 1, "cpus": 0}})
    (request,) = [r for n, r in _rendered(memory).items() if "learner" in n]
    assert _main(request) == ({}, {"nvidia.com/gpu": 1})


def test_each_request_gives_its_own_replicas_their_resources_and_a_removed_one_loses_them(
    client: TestClient, memory: MemoryPlatform
) -> None:
    memory.create_job(di_v1_job())
    created(client, {**BASE, "collectors": {"replicas": 1, "cpus": 1}})
    created(client, {**BASE, "collectors": {"replicas": 1, "memory": "256Mi"}})
    status = memory.get_job("default", "cartpole").status
    assert status.migrated_replicas == {
        "collector-0": ResourceSpec(cpu=1.0),
        "collector-1": ResourceSpec(memory=256),
    }
    gone = client.request(
        "DELETE", "/v1alpha2/replicas", json={**BASE, "collectors": {"replicas": 1}}
    )
    assert gone.status_code == 200, gone.text
    status = memory.get_job("default", "cartpole").status
    assert status.migrated_replicas == {"collector-0": ResourceSpec(cpu=1.0)}
    assert status.replicas[ReplicaType.COLLECTOR] == 1


@pytest.mark.parametrize(
    ("quantity", "field"),
    [
        ({"cpus": "lots"}, "collectors.cpus"),
        ({"cpus": "-1"}, "collectors.cpus"),
        ({"memory": "1Qi"}, "collectors.memory"),
        ({"memory": 1000}, "collectors.memory"),
        ({"gpus": "two"}, "collectors.gpus"),
    ],
)
def test_a_quantity_that_is_not_one_is_refused_naming_its_field(
    client: TestClient, memory: MemoryPlatform, quantity: dict[str, Any], field: str
) -> None:
    memory.create_job(di_v1_job())
    resp = client.post(
        "/v1alpha2/replicas", json={**BASE, "collectors": {"replicas": 1, **quantity}}
    )
    assert resp.status_code == 422, resp.text
    assert field in resp.text
    status = memory.get_job("default", "cartpole").status
    assert not (status and status.replicas)  # nothing was asked


def test_an_aggregator_lists_one_address_per_gpu_its_learner_was_asked_for(
    client: TestClient, memory: MemoryPlatform
) -> None:
    memory.create_job(di_v1_job())  # the template asks for no GPU
    created(client, {**BASE, "learners": {"replicas": 1, "gpus": 3}})
    for name, rtype, address in (
        ("cartpole-aggregator-0", ReplicaType.AGGREGATOR, "10.0.0.9:22272"),
        ("cartpole-learner-0", ReplicaType.LEARNER, "10.0.0.1:22271"),
    ):
        replica = Replica("default", "cartpole", name, rtype, 0, ReplicaPhase.RUNNING)
        memory.add_replica(replica, address=address)
    params = {"namespace": "default", "aggregator": "cartpole-aggregator-0"}
    data = client.get("/v1alpha2/replicas", params=params).json()["data"]
    assert data["learners"] == ["10.0.0.1:22271", "10.0.0.1:22272", "10.0.0.1:22273"]
