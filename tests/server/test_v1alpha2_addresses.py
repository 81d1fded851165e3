"""DI's create request is answered as di-server answers it: with the new replicas' addresses
(``host:port``), once the operator has created them; a delete with the removed replicas'
addresses. A thread plays the operator on the in-memory platform."""

import threading
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from flexjob.api import ReplicaPhase, ReplicaType
from flexjob.platform.contract import Replica
from flexjob.server.app import create_app
from tests.support.polling import wait_until

from .jobs import created, di_v1_job
from .memory_platform import MemoryPlatform

BASE = {"namespace": "default", "coordinator": "cartpole-coordinator-0"}
PORTS = {ReplicaType.COLLECTOR: 22270, ReplicaType.LEARNER: 22271}


def _operator(memory: MemoryPlatform, stop: threading.Event) -> None:
    """Create each replica ``status.replicas`` asks for, with an address of its own."""
    while not stop.wait(0.05):
        status = memory.get_job("default", "cartpole").status
        for rtype, count in (status.replicas if status else {}).items():
            for i in range(count):
                name = f"cartpole-{rtype.value}-{i}"
                if ("default", name) not in memory.replicas:
                    replica = Replica("default", "cartpole", name, rtype, i, ReplicaPhase.RUNNING)
                    memory.add_replica(replica, f"10.0.{PORTS[rtype] % 100}.{i}:{PORTS[rtype]}")


@pytest.fixture
def operated(memory: MemoryPlatform) -> Iterator[TestClient]:
    memory.create_job(di_v1_job())
    stop = threading.Event()
    thread = threading.Thread(target=_operator, args=(memory, stop), daemon=True)
    thread.start()
    try:
        with TestClient(create_app(memory, di_address_wait=20)) as client:
            yield client
    finally:
        stop.set()
        thread.join(timeout=5)


def test_a_create_is_answered_with_the_new_replicas_addresses(operated: TestClient) -> None:
    body = {**BASE, "collectors": {"replicas": 2}, "learners": {"replicas": 1}}
    data = created(operated, body)
    assert data["collectors"] == ["10.0.70.0:22270", "10.0.70.1:22270"]
    assert data["learners"] == ["10.0.71.0:22271"]


def test_a_delete_is_answered_with_the_removed_replicas_addresses(
    operated: TestClient, memory: MemoryPlatform
) -> None:
    body = {**BASE, "collectors": {"replicas": 2}}
    assert operated.post("/v1alpha2/replicas", json=body).status_code == 200
    wait_until(lambda: ("default", "cartpole-collector-1") in memory.replicas, timeout=10)
    resp = operated.request(
        "DELETE", "/v1alpha2/replicas", json={**BASE, "collectors": {"replicas": 1}}
    )
    assert resp.status_code == 200, resp.text
    assert resp.json()["data"]["collectors"] == ["10.0.70.1:22270"]


def test_a_replica_not_created_in_time_is_answered_by_its_name(memory: MemoryPlatform) -> None:
    memory.create_job(di_v1_job())
    with TestClient(create_app(memory, di_address_wait=0.3)) as client:  # no operator
        resp = client.post("/v1alpha2/replicas", json={**BASE, "collectors": {"replicas": 1}})
    assert resp.json()["data"]["collectors"] == ["cartpole-collector-0"]
