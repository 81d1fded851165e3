import pytest
from fastapi.testclient import TestClient

from flexjob.rpc.auth import InsecureBindError, check_bind
from flexjob.server.app import create_app

from .jobs import elastic_job
from .memory_platform import MemoryPlatform


@pytest.fixture
def secured(memory: MemoryPlatform) -> TestClient:
    memory.create_job(elastic_job())
    return TestClient(create_app(memory, token="s3cret", di_address_wait=0))


def test_requests_without_the_token_get_401(secured: TestClient) -> None:
    resp = secured.get("/v2alpha1/default.mnist.1/replicas")
    assert resp.status_code == 401
    assert resp.headers["www-authenticate"] == "Bearer"


def test_requests_with_a_wrong_token_get_401(secured: TestClient) -> None:
    resp = secured.get("/metrics", headers={"Authorization": "Bearer nope"})
    assert resp.status_code == 401


def test_requests_with_the_token_pass(secured: TestClient) -> None:
    resp = secured.get(
        "/v2alpha1/default.mnist.1/replicas", headers={"Authorization": "Bearer s3cret"}
    )
    assert resp.status_code == 200


def test_healthz_needs_no_token(secured: TestClient) -> None:
    assert secured.get("/healthz").json()["status"] == "ok"


@pytest.mark.parametrize("host", ["0.0.0.0", "10.1.2.3", "::", "example.com"])
def test_binding_beyond_loopback_without_a_token_is_refused(host: str) -> None:
    with pytest.raises(InsecureBindError, match="without a bearer token"):
        check_bind(host, None)


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1"])
def test_binding_to_loopback_needs_no_token(host: str) -> None:
    check_bind(host, None)


def test_metrics_count_requests_by_route(client: TestClient, memory: MemoryPlatform) -> None:
    memory.create_job(elastic_job())
    client.post("/v2alpha1/default.mnist.1/replicas", json={"replicas": 1})
    text = client.get("/metrics").text
    assert 'flexjob_server_requests_total{method="POST",route="/v2alpha1/{job_id}/replicas"' in text
    assert 'flexjob_server_scale_requests_total{api="v2alpha1",direction="up"} 1.0' in text


def test_openapi_schema_is_published(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    assert {"/v2alpha1/{job_id}/replicas", "/v1alpha2/replicas", "/healthz"} <= set(paths)
