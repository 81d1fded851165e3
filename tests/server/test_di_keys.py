"""A server with a token answers DI-engine's client (which sends no header) through the job's
key in the path — for that job only — and still refuses everything else without the token."""

import json
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from flexjob.rpc.auth import di_job_key, di_server_url
from flexjob.server.app import create_app

from .jobs import di_v1_job, elastic_job
from .memory_platform import MemoryPlatform

TOKEN = "s3cret-token"
BODY = {
    "namespace": "default",
    "coordinator": "cartpole-coordinator-0",
    "collectors": {"replicas": 1},
}


@pytest.fixture
def keyed() -> Iterator[tuple[TestClient, MemoryPlatform]]:
    memory = MemoryPlatform()
    memory.create_job(di_v1_job())
    memory.create_job(di_v1_job("other"))
    memory.create_job(elastic_job())
    with TestClient(create_app(memory, TOKEN, di_address_wait=0)) as client:
        yield client, memory


def test_the_jobs_key_opens_its_v1_api_without_a_header(
    keyed: tuple[TestClient, MemoryPlatform],
) -> None:
    client, memory = keyed
    key = di_job_key(TOKEN, "default", "cartpole")
    for version in ("v1alpha1", "v1alpha2"):
        resp = client.post(f"/di/{key}/{version}/replicas", content=json.dumps(BODY))
        assert resp.status_code == 200, resp.text
    params = {"namespace": "default", "coordinator": "cartpole-coordinator-0"}
    assert client.get(f"/di/{key}/v1alpha2/replicas", params=params).status_code == 200
    listed = client.get(f"/di/{key}/v1alpha2/replicas", params={"namespace": "default"})
    assert [j["coordinator"] for j in listed.json()["data"]] == ["cartpole-coordinator-0"]
    status = memory.get_job("default", "cartpole").status
    assert status is not None and status.replicas["collector"] == 2


@pytest.mark.parametrize(
    ("path", "code"),
    [
        ("/di/{other}/v1alpha2/replicas", 404),  # another job's key
        ("/di/0000/v1alpha2/replicas", 404),  # a made-up key
        ("/di/{key}/v2alpha1/default.mnist.1/replicas", 401),  # a key opens only the v1 API
        ("/v1alpha2/replicas", 401),  # no key, no token
    ],
)
def test_a_key_reaches_nothing_else(
    keyed: tuple[TestClient, MemoryPlatform], path: str, code: int
) -> None:
    client, memory = keyed
    path = path.format(
        key=di_job_key(TOKEN, "default", "cartpole"), other=di_job_key(TOKEN, "default", "other")
    )
    resp = client.post(path, json=BODY if "v1" in path else {"replicas": 1})
    assert resp.status_code == code, resp.text
    status = memory.get_job("default", "cartpole").status
    assert status is not None and status.replicas.get("collector", 0) == 0


def test_the_bearer_token_still_works_and_the_url_names_the_key() -> None:
    memory = MemoryPlatform()
    memory.create_job(di_v1_job())
    with TestClient(create_app(memory, TOKEN, di_address_wait=0)) as client:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        assert client.post("/v1alpha2/replicas", json=BODY, headers=headers).status_code == 200
    url = di_server_url("http://10.0.0.1:8080/", TOKEN, "default", "cartpole")
    assert url == f"http://10.0.0.1:8080/di/{di_job_key(TOKEN, 'default', 'cartpole')}"
    assert (
        di_server_url("http://10.0.0.1:8080", None, "default", "cartpole") == "http://10.0.0.1:8080"
    )
