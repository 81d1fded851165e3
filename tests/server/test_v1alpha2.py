import json

import pytest
from fastapi.testclient import TestClient

from flexjob.api import ReplicaPhase, ReplicaType
from flexjob.api.bounds import DI_MAX_REPLICAS
from flexjob.platform.contract import Replica

from .jobs import created, di_v1_job
from .memory_platform import MemoryPlatform

BASE = {"namespace": "default", "coordinator": "cartpole-coordinator-0"}


def _replica(name: str, rtype: ReplicaType, index: int, phase: ReplicaPhase) -> Replica:
    return Replica("default", "cartpole", name, rtype, index, phase)


def _add_running(memory: MemoryPlatform, rtype: ReplicaType, index: int, address: str) -> None:
    """A running replica ``cartpole-<type>-<index>`` that others reach at ``address``."""
    replica = _replica(f"cartpole-{rtype.value}-{index}", rtype, index, ReplicaPhase.RUNNING)
    memory.add_replica(replica, address=address)


def test_post_adds_collectors_and_learners_and_names_the_new_replicas(
    client: TestClient, memory: MemoryPlatform
) -> None:
    memory.create_job(di_v1_job())
    body = {**BASE, "collectors": {"replicas": 2}, "learners": {"replicas": 1}}
    data = created(client, body)
    assert data["collectors"] == ["cartpole-collector-0", "cartpole-collector-1"]
    assert data["learners"] == ["cartpole-learner-0"]
    status = memory.get_job("default", "cartpole").status
    assert status.replicas == {ReplicaType.COLLECTOR: 2, ReplicaType.LEARNER: 1}


def test_a_learner_with_more_than_one_gpu_gets_an_aggregator_in_front(
    client: TestClient, memory: MemoryPlatform
) -> None:
    memory.create_job(di_v1_job())
    body = {**BASE, "learners": {"replicas": 2, "gpus": "4"}}
    data = created(client, body)
    assert data["aggregators"] == ["cartpole-aggregator-0", "cartpole-aggregator-1"]
    assert data["learners"] == data["aggregators"]
    status = memory.get_job("default", "cartpole").status
    assert status.replicas[ReplicaType.AGGREGATOR] == 2


def test_multi_gpu_learners_without_an_aggregator_spec_are_409(
    client: TestClient, memory: MemoryPlatform
) -> None:
    memory.create_job(di_v1_job(aggregator=False))
    resp = client.post("/v1alpha2/replicas", json={**BASE, "learners": {"replicas": 1, "gpus": 2}})
    assert resp.status_code == 409
    assert "aggregator" in resp.json()["message"]


def test_delete_removes_the_highest_indices(client: TestClient, memory: MemoryPlatform) -> None:
    memory.create_job(di_v1_job())
    client.post("/v1alpha2/replicas", json={**BASE, "collectors": {"replicas": 2}})
    resp = client.request(
        "DELETE", "/v1alpha2/replicas", json={**BASE, "collectors": {"replicas": 1}}
    )
    assert resp.status_code == 200, resp.text
    assert resp.json()["data"]["collectors"] == ["cartpole-collector-1"]


def test_a_coordinator_may_ask_up_to_the_on_request_bound_and_give_all_back(
    client: TestClient, memory: MemoryPlatform
) -> None:
    memory.create_job(di_v1_job())
    most = {**BASE, "collectors": {"replicas": DI_MAX_REPLICAS}}
    assert client.post("/v1alpha2/replicas", json=most).status_code == 200
    resp = client.post("/v1alpha2/replicas", json={**BASE, "collectors": {"replicas": 1}})
    assert resp.status_code == 409
    assert resp.json()["message"].endswith(f"above maxReplicas {DI_MAX_REPLICAS}")
    assert client.request("DELETE", "/v1alpha2/replicas", json=most).status_code == 200
    resp = client.request(
        "DELETE", "/v1alpha2/replicas", json={**BASE, "collectors": {"replicas": 1}}
    )
    assert resp.status_code == 409
    assert resp.json()["message"].endswith("below minReplicas 0")
    assert memory.get_job("default", "cartpole").status.replicas[ReplicaType.COLLECTOR] == 0


def test_get_filters_by_namespace_and_coordinator(
    client: TestClient, memory: MemoryPlatform
) -> None:
    memory.create_job(di_v1_job())
    _add_running(memory, ReplicaType.COLLECTOR, 0, "10.0.0.1:22270")
    memory.add_replica(  # no address yet: not listed (DI's client splits entries at ':')
        _replica("cartpole-collector-1", ReplicaType.COLLECTOR, 1, ReplicaPhase.PENDING)
    )
    resp = client.get("/v1alpha2/replicas", params=BASE)
    assert resp.status_code == 200
    job = resp.json()["data"]
    assert job["collectors"] == ["10.0.0.1:22270"]
    listed = client.get("/v1alpha1/replicas", params={"namespace": "default"}).json()["data"]
    assert [j["collectors"] for j in listed] == [["10.0.0.1:22270"]]
    assert client.get("/v1alpha2/replicas", params={"namespace": "other"}).json()["data"] == []


def test_get_by_aggregator_lists_the_learner_it_serves(
    client: TestClient, memory: MemoryPlatform
) -> None:
    memory.create_job(di_v1_job())
    _add_running(memory, ReplicaType.AGGREGATOR, 0, "10.0.0.9:22272")
    for i in (0, 1):
        _add_running(memory, ReplicaType.LEARNER, i, f"10.0.0.{i + 1}:22271")
    params = {"namespace": "default", "aggregator": "cartpole-aggregator-0"}
    job = client.get("/v1alpha2/replicas", params=params).json()["data"]
    assert job["learners"] == ["10.0.0.1:22271"]
    assert job["aggregators"] == ["10.0.0.9:22272"]


def test_failed_replicas_are_removed_for_the_operator_to_recreate(
    client: TestClient, memory: MemoryPlatform
) -> None:
    memory.create_job(di_v1_job())
    memory.add_replica(_replica("cartpole-learner-0", ReplicaType.LEARNER, 0, ReplicaPhase.FAILED))
    resp = client.post(
        "/v1alpha2/replicas/failed", json={**BASE, "learners": ["cartpole-learner-0"]}
    )
    assert resp.status_code == 200, resp.text
    assert memory.deleted == ["cartpole-learner-0"]


def test_recreating_a_running_replica_is_409(client: TestClient, memory: MemoryPlatform) -> None:
    memory.create_job(di_v1_job())
    memory.add_replica(_replica("cartpole-learner-0", ReplicaType.LEARNER, 0, ReplicaPhase.RUNNING))
    resp = client.post(
        "/v1alpha2/replicas/failed", json={**BASE, "learners": ["cartpole-learner-0"]}
    )
    assert resp.status_code == 409
    assert resp.json()["message"].startswith("learners[0]:")


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        (
            {"namespace": "default", "coordinator": "ghost", "collectors": {"replicas": 1}},
            404,
            "coordinator:",
        ),
        ({**BASE, "learners": {"replicas": 1, "gpus": "lots"}}, 422, "learners.gpus"),
    ],
    ids=["an-unknown-coordinator-is-404", "a-non-numeric-gpu-count-is-422"],
)
def test_a_post_that_cannot_be_served_is_refused_naming_the_field(
    client: TestClient, memory: MemoryPlatform, body: dict[str, object], status: int, field: str
) -> None:
    memory.create_job(di_v1_job())
    resp = client.post("/v1alpha2/replicas", json=body)
    assert resp.status_code == status
    assert resp.json()["message"].startswith(field), resp.text


def test_a_body_without_content_type_is_read_as_json_as_di_engines_client_sends_it(
    client: TestClient, memory: MemoryPlatform
) -> None:
    memory.create_job(di_v1_job())
    body = json.dumps({**BASE, "collectors": {"replicas": 1}})
    resp = client.post("/v1alpha1/replicas", content=body)
    assert resp.status_code == 200, resp.text
    assert resp.json()["data"]["collectors"] == ["cartpole-collector-0"]
