"""A DIJob v1 without an AggregatorConfig of its own uses the cluster's: the server accepts a
logic learner once one is applied, and ``GET ?aggregator=`` lists the learner processes it
serves (one per GPU)."""

from fastapi.testclient import TestClient

from flexjob.api import ReplicaPhase, ReplicaType
from flexjob.platform.contract import Replica
from tests.support.manifests import manifest

from .jobs import di_v1_job
from .memory_platform import MemoryPlatform

BASE = {"namespace": "default", "coordinator": "cartpole-coordinator-0"}
AGGREGATOR = {"name": "aggregator", "image": "agg:1", "command": ["agg"]}
CONFIG = manifest(
    "AggregatorConfig",
    "aggregator-config",
    {"aggregator": {"template": {"spec": {"containers": [AGGREGATOR]}}}},
    api_version="diengine.opendilab.org/v1alpha1",
    namespace="di-system",
)


def test_a_logic_learner_needs_the_clusters_aggregator_config(
    client: TestClient, memory: MemoryPlatform
) -> None:
    memory.create_job(di_v1_job(aggregator=False))
    body = {**BASE, "learners": {"replicas": 1, "gpus": 2}}
    refused = client.post("/v1alpha2/replicas", json=body)
    assert refused.status_code == 409
    assert "flexjob apply" in refused.json()["message"]

    memory.apply_cluster_object(CONFIG)
    resp = client.post("/v1alpha2/replicas", json=body)
    assert resp.status_code == 200, resp.text
    assert resp.json()["data"]["learners"] == ["cartpole-aggregator-0"]
    status = memory.get_job("default", "cartpole").status
    assert status is not None
    assert status.replicas == {ReplicaType.LEARNER: 1, ReplicaType.AGGREGATOR: 1}


def test_get_by_aggregator_lists_one_address_per_gpu_of_its_learner(
    client: TestClient, memory: MemoryPlatform
) -> None:
    memory.create_job(di_v1_job(learner_gpus=2))

    def add(name: str, rtype: ReplicaType, index: int, address: str) -> None:
        replica = Replica("default", "cartpole", name, rtype, index, ReplicaPhase.RUNNING)
        memory.add_replica(replica, address=address)

    add("cartpole-aggregator-1", ReplicaType.AGGREGATOR, 1, "10.0.0.9:22272")
    add("cartpole-learner-0", ReplicaType.LEARNER, 0, "10.0.0.1:22271")
    add("cartpole-learner-1", ReplicaType.LEARNER, 1, "10.0.0.2:22271")
    params = {"namespace": "default", "aggregator": "cartpole-aggregator-1"}
    data = client.get("/v1alpha2/replicas", params=params).json()["data"]
    assert data["learners"] == ["10.0.0.2:22271", "10.0.0.2:22272"]
    assert data["aggregators"] == ["10.0.0.9:22272"]
