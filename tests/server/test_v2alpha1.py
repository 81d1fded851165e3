from fastapi.testclient import TestClient

from flexjob.api import ReplicaPhase, ReplicaType
from flexjob.platform.api import Replica

from .jobs import elastic_job
from .memory_platform import MemoryPlatform

JOB = "/v2alpha1/default.mnist.1"


def test_post_replicas_adds_to_the_preemptible_jobs_status_replicas(
    client: TestClient, memory: MemoryPlatform
) -> None:
    memory.create_job(elastic_job())
    resp = client.post(f"{JOB}/replicas", json={"replicas": 2})
    assert resp.status_code == 200, resp.text
    assert resp.json()["data"] == {
        "job_id": "default.mnist.1",
        "type": "worker",
        "previous": 2,
        "replicas": 4,
    }
    assert memory.get_job("default", "mnist").status.replicas == {ReplicaType.WORKER: 4}


def test_delete_replicas_removes_from_status_replicas(
    client: TestClient, memory: MemoryPlatform
) -> None:
    memory.create_job(elastic_job())
    resp = client.request("DELETE", f"{JOB}/replicas", json={"replicas": 1})
    assert resp.status_code == 200, resp.text
    assert memory.get_job("default", "mnist").status.replicas == {ReplicaType.WORKER: 1}


def test_scaling_a_non_preemptible_job_is_409_saying_why(
    client: TestClient, memory: MemoryPlatform
) -> None:
    memory.create_job(elastic_job(preemptible=False))
    resp = client.post(f"{JOB}/replicas", json={"replicas": 1})
    assert resp.status_code == 409
    assert "not preemptible" in resp.json()["message"]
    assert memory.get_job("default", "mnist").status.replicas == {}


def test_growing_past_max_replicas_is_409_naming_the_bound(
    client: TestClient, memory: MemoryPlatform
) -> None:
    memory.create_job(elastic_job(hi=3))
    resp = client.post(f"{JOB}/replicas", json={"replicas": 5})
    assert resp.status_code == 409
    assert "maxReplicas 3" in resp.json()["message"]


def test_a_bad_replicas_field_is_422_naming_it(client: TestClient, memory: MemoryPlatform) -> None:
    memory.create_job(elastic_job())
    resp = client.post(f"{JOB}/replicas", json={"replicas": 0})
    assert resp.status_code == 422
    assert resp.json()["message"].startswith("replicas:")


def test_an_unknown_replica_type_is_400_listing_the_jobs_types(
    client: TestClient, memory: MemoryPlatform
) -> None:
    memory.create_job(elastic_job())
    resp = client.post(f"{JOB}/replicas", json={"replicas": 1, "type": "learner"})
    assert resp.status_code == 400
    assert "allowed: worker" in resp.json()["message"]


def test_a_malformed_job_id_is_4xx_naming_the_format(client: TestClient) -> None:
    resp = client.get("/v2alpha1/mnist/replicas")
    assert resp.status_code == 422
    assert "job_id" in resp.json()["message"]


def test_an_unknown_job_is_404(client: TestClient) -> None:
    resp = client.get("/v2alpha1/default.nope.1/replicas")
    assert resp.status_code == 404
    assert "default/nope" in resp.json()["message"]


def test_a_stale_generation_is_404(client: TestClient, memory: MemoryPlatform) -> None:
    memory.create_job(elastic_job())
    resp = client.get("/v2alpha1/default.mnist.7/replicas")
    assert resp.status_code == 404
    assert "stale" in resp.json()["message"]


def test_get_replicas_lists_type_index_and_address(
    client: TestClient, memory: MemoryPlatform
) -> None:
    memory.create_job(elastic_job())
    memory.add_replica(
        Replica("default", "mnist", "mnist-worker-0", ReplicaType.WORKER, 0, ReplicaPhase.RUNNING),
        address="10.0.0.5:2222",
    )
    resp = client.get(f"{JOB}/replicas")
    assert resp.status_code == 200
    (replica,) = resp.json()["data"]
    assert (replica["type"], replica["index"], replica["address"]) == ("worker", 0, "10.0.0.5:2222")


def test_profilings_are_merged_into_status(client: TestClient, memory: MemoryPlatform) -> None:
    memory.create_job(elastic_job())
    client.post(f"{JOB}/profilings", json={"data": {"a": 1, "nested": {"x": 1}}})
    resp = client.post(f"{JOB}/profilings", json={"data": {"b": 2, "nested": {"y": 2}}})
    assert resp.status_code == 200
    expected = {"a": 1, "b": 2, "nested": {"x": 1, "y": 2}}
    assert memory.get_job("default", "mnist").status.profilings == expected


def test_profilings_without_data_is_422_naming_data(
    client: TestClient, memory: MemoryPlatform
) -> None:
    memory.create_job(elastic_job())
    resp = client.post(f"{JOB}/profilings", json={"values": {}})
    assert resp.status_code == 422
    assert "data" in resp.json()["message"]
