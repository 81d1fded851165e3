from typing import Any

import pytest
import yaml
from fastapi.testclient import TestClient

from flexjob.api import ElasticJob, ReplicaPhase, ReplicaType
from flexjob.api.bounds import DI_MAX_REPLICAS
from flexjob.api.defaults import apply_defaults
from flexjob.api.load import job_from_dict
from flexjob.platform.contract import Replica
from flexjob.scheduler.profilings import goodput_model
from tests.api.specs import EXAMPLES, two_collector_tasks

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


def test_the_documented_profilings_example_is_what_the_allocator_fits(
    client: TestClient, memory: MemoryPlatform
) -> None:
    memory.create_job(elastic_job())
    schema = client.get("/openapi.json").json()["components"]["schemas"]["ProfilingsRequest"]
    [example] = schema["examples"]
    assert client.post(f"{JOB}/profilings", json=example).status_code == 200
    model = goodput_model(memory.get_job("default", "mnist").status.profilings)
    assert model.noise_scale == 800.0 and model.local_batch == 32
    assert model.params.step_time(1, 2, 32) == pytest.approx(0.21)


def test_profilings_without_data_is_422_naming_data(
    client: TestClient, memory: MemoryPlatform
) -> None:
    memory.create_job(elastic_job())
    resp = client.post(f"{JOB}/profilings", json={"values": {}})
    assert resp.status_code == 422
    assert "data" in resp.json()["message"]


DI_V2 = "/v2alpha1/default.gobigger-test.1/replicas"
RUNNING = ReplicaPhase.RUNNING


def scale_di_v2(
    client: TestClient, method: str, replicas: int, rtype: str
) -> tuple[int, dict[str, Any]]:
    """Scale the stored DIJob v2 example's ``rtype`` task; the status code and the body."""
    resp = client.request(method, DI_V2, json={"replicas": replicas, "type": rtype})
    return resp.status_code, resp.json()


def di_v2_job(preemptible: bool) -> ElasticJob:
    """The DIJob v2 example as the operator stores it (read, defaulted)."""
    raw = yaml.safe_load((EXAMPLES / "dijob-v2.yaml").read_text())
    raw["spec"]["preemptible"] = preemptible
    return apply_defaults(job_from_dict(raw))


def test_a_converted_preemptible_dijob_v2_scales_within_its_bounds(
    client: TestClient, memory: MemoryPlatform
) -> None:
    memory.create_job(di_v2_job(preemptible=True))
    code, body = scale_di_v2(client, "POST", 2, "collector")
    assert code == 200, body
    assert (body["data"]["previous"], body["data"]["replicas"]) == (2, 4)
    assert scale_di_v2(client, "DELETE", 3, "collector")[0] == 200
    code, body = scale_di_v2(client, "DELETE", 1, "collector")
    assert (code, body["message"].endswith("below minReplicas 1")) == (409, True)
    code, body = scale_di_v2(client, "POST", DI_MAX_REPLICAS, "learner")
    assert (code, body["message"].endswith(f"above maxReplicas {DI_MAX_REPLICAS}")) == (409, True)


def test_a_converted_dijob_v2_that_is_not_preemptible_keeps_its_counts(
    client: TestClient, memory: MemoryPlatform
) -> None:
    memory.create_job(di_v2_job(preemptible=False))
    code, body = scale_di_v2(client, "POST", 1, "collector")
    assert code == 409
    assert "not preemptible" in body["message"]


def test_a_replica_of_one_of_several_tasks_of_a_type_is_listed_with_its_task(
    client: TestClient, memory: MemoryPlatform
) -> None:
    memory.create_job(apply_defaults(job_from_dict(two_collector_tasks())))
    for i in (1, 2):
        name = f"gobigger-test-collector-{i}"
        replica = Replica(
            "default", "gobigger-test", name, ReplicaType.COLLECTOR, i, ReplicaPhase.RUNNING
        )
        memory.add_replica(replica, address=f"10.0.0.{i}:2222")
    data = client.get(DI_V2).json()["data"]
    assert [(r["index"], r["task"]) for r in data] == [(1, "collector"), (2, "collector-b")]
