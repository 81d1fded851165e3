"""The brain guards itself like the server: a token beyond loopback (``flexjob brain --token-file``
or ``$FLEXJOB_BRAIN_TOKEN``), bounded request bodies (413) and field-named JSON errors."""

import os
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from flexjob.api.errors import FlexjobError
from flexjob.brain.app import create_app
from flexjob.brain.stats_store import BrainStore
from flexjob.rpc import brain_messages as schemas
from flexjob.rpc.brain_client import BrainClient
from tests.brain import reports
from tests.support.local_jobs import run_flexjob

NODES = "/api/v1/cluster/nodes"


@pytest.fixture
def guarded(store: BrainStore) -> Iterator[TestClient]:
    with TestClient(create_app(store, token="s3cret"), base_url="http://brain") as client:
        yield client


def test_unauthenticated_cluster_reports_are_refused(guarded: TestClient) -> None:
    resp = guarded.post(NODES, json={"nodes": []})
    assert resp.status_code == 401
    assert resp.json() == {"detail": "missing or wrong bearer token"}
    assert resp.headers["www-authenticate"] == "Bearer"
    assert guarded.get("/healthz").status_code == 200


def test_the_client_with_the_token_is_served(guarded: TestClient) -> None:
    brain = BrainClient("http://brain", http=guarded, token="s3cret")
    brain.persist_metrics("job", schemas.MetricsReport(job=reports.job_info("job")))
    assert brain.list_jobs() == ["job"]
    with pytest.raises(FlexjobError, match="401"):
        BrainClient("http://brain", http=TestClient(guarded.app), token="wrong").list_jobs()


def test_a_64_mb_body_is_413(http: TestClient) -> None:
    body = b'{"nodes": ["' + b"x" * (64 * 1024 * 1024) + b'"]}'
    resp = http.post(NODES, content=body, headers={"content-type": "application/json"})
    assert resp.status_code == 413
    assert "request body too large" in resp.json()["detail"]


def test_a_body_that_is_not_json_names_line_and_column(http: TestClient) -> None:
    resp = http.post(NODES, content=b"{nodes: 1}", headers={"content-type": "application/json"})
    assert resp.status_code == 422
    assert resp.json()["errors"][0]["field"] == "body"
    assert resp.json()["detail"].startswith("body: invalid JSON at line 1 column 2")


def test_flexjob_brain_beyond_loopback_without_a_token_exits_naming_the_option() -> None:
    env = {k: v for k, v in os.environ.items() if k != "FLEXJOB_BRAIN_TOKEN"}
    out = run_flexjob(env, "brain", "--host", "0.0.0.0", "--db", "sqlite://", timeout=60)
    assert out.returncode == 2
    assert "refusing to listen on 0.0.0.0 without a bearer token" in out.stderr
    assert "--token-file or set FLEXJOB_BRAIN_TOKEN" in out.stderr
