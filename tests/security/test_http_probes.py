"""Hostile HTTP clients of the flexjob server (v2alpha1, the DI v1 API), the brain and a
metrics endpoint, each with a token: a non-ASCII token, a DI key that is not ASCII, deeply
nested or ever-growing profilings, bodies and ids that are not what the API takes. Each gets a
4xx naming the problem (never a 500 or a dropped connection) and the job's status, the brain's
jobs and the metrics stay as they were."""

from __future__ import annotations

import json
import socket
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from flexjob.api.limits import MAX_PROFILINGS_BYTES
from flexjob.brain.app import create_app as brain_app
from flexjob.brain.db.engine import open_database
from flexjob.brain.stats_store import BrainStore
from flexjob.observe.metrics_http import MetricsServer, serve
from flexjob.platform.local import LocalPlatform
from flexjob.server.app import create_app
from tests.support.local_jobs import local_job

from .conftest import books_unchanged

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

TOKEN = "s3cret"
GOOD = {"authorization": f"Bearer {TOKEN}"}
JOB_ID = "default.victim.1"
PROFILINGS = f"/v2alpha1/{JOB_ID}/profilings"


def nested(depth: int) -> dict[str, Any]:
    data: dict[str, Any] = {"leaf": 1}
    for _ in range(depth - 1):
        data = {"n": data}
    return data


def nested_text(depth: int) -> bytes:
    """``{"data": {"n": {"n": ...}}}`` ``depth`` levels deep, written without recursion."""
    return b'{"data": ' + b'{"n": ' * depth + b"1" + b"}" * depth + b"}"


@dataclass
class Server:
    client: TestClient
    platform: LocalPlatform

    def books(self) -> tuple[Any, ...]:
        job = self.platform.get_job("default", "victim")
        status = job.status.model_dump(mode="json") if job.status else None
        return status, [j.name for j in self.platform.list_jobs(None)]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One server for every probe (each compares the books itself)."""
    platform = LocalPlatform(tmp_path_factory.mktemp("server-home"))
    platform.create_job(local_job("victim", None, "pass", workers=1))
    with TestClient(create_app(platform, TOKEN), base_url="http://server") as client:
        client.post(PROFILINGS, json={"data": {"localBatch": 32}}, headers=GOOD)
        yield Server(client, platform)
    platform.close()


def _grow(server: Server) -> None:
    """Profilings that fill most of the bound in posts that each pass."""
    chunk = MAX_PROFILINGS_BYTES // 4
    for i in range(3):
        resp = server.client.post(PROFILINGS, json={"data": {f"k{i}": "x" * chunk}}, headers=GOOD)
        assert resp.status_code == 200


@dataclass(frozen=True)
class HttpProbe:
    name: str
    method: str
    path: str
    headers: dict[str, Any]
    body: bytes | None
    status: int
    says: str
    setup: Any = None


def _json(data: object) -> bytes:
    return json.dumps(data).encode()


NON_ASCII = {"authorization": "Bearer sécrét✓".encode()}
SERVER_PROBES = [
    HttpProbe(
        "non-ASCII bearer token",
        "GET",
        f"/v2alpha1/{JOB_ID}/replicas",
        NON_ASCII,
        None,
        401,
        "bearer",
    ),
    HttpProbe(
        "wrong bearer token",
        "GET",
        f"/v2alpha1/{JOB_ID}/replicas",
        {"authorization": "Bearer nope"},
        None,
        401,
        "bearer",
    ),
    HttpProbe(
        "no token",
        "POST",
        f"/v2alpha1/{JOB_ID}/replicas",
        {},
        _json({"replicas": 1}),
        401,
        "bearer",
    ),
    HttpProbe(
        "a scheme other than Bearer",
        "GET",
        f"/v2alpha1/{JOB_ID}/replicas",
        {"authorization": f"Basic {TOKEN}"},
        None,
        401,
        "bearer",
    ),
    HttpProbe(
        "non-ASCII DI key in the URL",
        "GET",
        "/di/%C3%A9%E2%9C%93/v1alpha2/replicas",
        {},
        None,
        200,
        '"data":[]',  # a key of no job: no job listed
    ),
    HttpProbe(
        "DI key of another job",
        "GET",
        "/di/0123456789abcdef0123456789abcdef/v1alpha2/replicas?namespace=default&coordinator=victim",
        {},
        None,
        404,
        "",
    ),
    HttpProbe(
        "profilings nested 900 deep",
        "POST",
        PROFILINGS,
        GOOD,
        _json({"data": nested(900)}),
        422,
        "nested more than",
    ),
    HttpProbe(
        "profilings nested 17 deep",
        "POST",
        PROFILINGS,
        GOOD,
        _json({"data": nested(17)}),
        422,
        "nested more than",
    ),
    HttpProbe(
        "profilings nested 100000 deep", "POST", PROFILINGS, GOOD, nested_text(100_000), 400, ""
    ),
    HttpProbe(
        "profilings of 300 KB in one post",
        "POST",
        PROFILINGS,
        GOOD,
        _json({"data": {"x": "y" * 300_000}}),
        400,
        "status.profilings",
    ),
    HttpProbe(
        "profilings growing past the bound",
        "POST",
        PROFILINGS,
        GOOD,
        _json({"data": {"k9": "x" * (MAX_PROFILINGS_BYTES // 4)}}),
        400,
        str(MAX_PROFILINGS_BYTES),
        _grow,
    ),
    HttpProbe(
        "profilings that are a list", "POST", PROFILINGS, GOOD, _json({"data": [1, 2]}), 422, "data"
    ),
    HttpProbe(
        "profilings with an unknown field",
        "POST",
        PROFILINGS,
        GOOD,
        _json({"data": {}, "extra": 1}),
        422,
        "extra",
    ),
    HttpProbe("a body that is not JSON", "POST", PROFILINGS, GOOD, b"{data: 1", 422, "JSON"),
    HttpProbe(
        "a body over 4 MiB",
        "POST",
        PROFILINGS,
        GOOD,
        b'{"data": {"x": "' + b"y" * (5 * 1024 * 1024) + b'"}}',
        413,
        "too large",
    ),
    HttpProbe(
        "a job id with a path in it",
        "GET",
        "/v2alpha1/default.%2e%2e%2f%2e%2e%2fx.1/replicas",
        GOOD,
        None,
        404,
        "",
    ),
    HttpProbe(
        "a job id that is not ns.name.gen",
        "GET",
        "/v2alpha1/victim/replicas",
        GOOD,
        None,
        422,
        "job_id",
    ),
    HttpProbe(
        "a non-ASCII job id",
        "GET",
        "/v2alpha1/default.vïctim.1/replicas",
        GOOD,
        None,
        404,
        "not found",
    ),
    HttpProbe(
        "a stale generation",
        "GET",
        "/v2alpha1/default.victim.99/replicas",
        GOOD,
        None,
        404,
        "stale",
    ),
    HttpProbe(
        "scale by zero replicas",
        "POST",
        f"/v2alpha1/{JOB_ID}/replicas",
        GOOD,
        _json({"replicas": 0}),
        422,
        "replicas",
    ),
    HttpProbe(
        "scale by 10^12 replicas",
        "POST",
        f"/v2alpha1/{JOB_ID}/replicas",
        GOOD,
        _json({"replicas": 10**12}),
        422,
        "replicas",
    ),
    HttpProbe(
        "scale an unknown replica type",
        "POST",
        f"/v2alpha1/{JOB_ID}/replicas",
        GOOD,
        _json({"replicas": 1, "type": "miner"}),
        422,
        "type",
    ),
    HttpProbe(
        "scale a job that is not preemptible",
        "POST",
        f"/v2alpha1/{JOB_ID}/replicas",
        GOOD,
        _json({"replicas": 1}),
        409,
        "",
    ),
]


def _send(client: TestClient, probe: HttpProbe) -> Any:
    headers = {"content-type": "application/json", **probe.headers}
    return client.request(probe.method, probe.path, content=probe.body, headers=headers)


@pytest.mark.parametrize("probe", SERVER_PROBES, ids=[p.name for p in SERVER_PROBES])
def test_the_server_refuses_a_hostile_request_with_a_4xx_and_changes_nothing(
    server: Server, probe: HttpProbe
) -> None:
    with books_unchanged(server, probe.setup):
        resp = _send(server.client, probe)
        assert resp.status_code == probe.status, resp.text[:500]
        assert probe.says.lower() in resp.text.lower(), resp.text[:500]


@pytest.fixture(scope="module")
def brain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, BrainStore]]:
    engine = open_database(f"sqlite:///{tmp_path_factory.mktemp('brain')}/brain.sqlite")
    store = BrainStore(engine)
    with TestClient(brain_app(store, token=TOKEN), base_url="http://brain") as client:
        yield client, store
    engine.dispose()


NODES = "/api/v1/cluster/nodes"
BRAIN_PROBES = [
    HttpProbe("non-ASCII bearer token", "GET", "/api/v1/jobs", NON_ASCII, None, 401, "bearer"),
    HttpProbe(
        "wrong bearer token",
        "GET",
        "/api/v1/jobs",
        {"authorization": "Bearer x"},
        None,
        401,
        "bearer",
    ),
    HttpProbe(
        "non-ASCII token on a report", "POST", NODES, NON_ASCII, _json({"nodes": []}), 401, "bearer"
    ),
    HttpProbe(
        "metrics of a job that is not JSON",
        "POST",
        "/api/v1/jobs/j/metrics",
        GOOD,
        b"{",
        422,
        "json",
    ),
    HttpProbe(
        "metrics nested 100000 deep",
        "POST",
        "/api/v1/jobs/j/metrics",
        GOOD,
        nested_text(100_000),
        400,
        "",
    ),
    HttpProbe(
        "a node report over 4 MiB",
        "POST",
        NODES,
        GOOD,
        b'{"nodes": ["' + b"x" * (5 * 1024 * 1024) + b'"]}',
        413,
        "too large",
    ),
    HttpProbe(
        "a node report of the wrong shape",
        "POST",
        NODES,
        GOOD,
        _json({"nodes": "all"}),
        422,
        "nodes",
    ),
]


@pytest.mark.parametrize("probe", BRAIN_PROBES, ids=[p.name for p in BRAIN_PROBES])
def test_the_brain_refuses_a_hostile_request_with_a_4xx_and_changes_nothing(
    brain: tuple[TestClient, BrainStore], probe: HttpProbe
) -> None:
    client, store = brain
    before = (store.job_names(), client.get(NODES, headers=GOOD).json())
    resp = _send(client, probe)
    assert resp.status_code == probe.status, resp.text[:500]
    assert probe.says.lower() in resp.text.lower(), resp.text[:500]
    assert (store.job_names(), client.get(NODES, headers=GOOD).json()) == before


@pytest.fixture
def metrics() -> Iterator[MetricsServer]:
    server = serve("127.0.0.1", 0, token=TOKEN, render=lambda: b"flexjob_probe_total 1\n")
    yield server
    server.server.shutdown()
    server.server.server_close()


def raw_get(address: tuple[str, int], path: bytes, headers: bytes) -> bytes:
    """The whole answer to one hand-written GET (headers as raw bytes: any byte at all)."""
    with socket.create_connection(address, timeout=10) as sock:
        sock.sendall(
            b"GET "
            + path
            + b" HTTP/1.1\r\nHost: probe\r\n"
            + headers
            + b"Connection: close\r\n\r\n"
        )
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return answer


METRICS_PROBES = {
    "non-ASCII bearer token": (b"/metrics", "Authorization: Bearer sécrét\r\n".encode(), b"401"),
    "non-Latin-1 bearer token": (b"/metrics", "Authorization: Bearer 秘密\r\n".encode(), b"401"),
    "wrong bearer token": (b"/metrics", b"Authorization: Bearer nope\r\n", b"401"),
    "no token": (b"/metrics", b"", b"401"),
    "an unknown path": (b"/../../etc/passwd", b"", b"404"),
}


@pytest.mark.parametrize(
    ("path", "headers", "status"), METRICS_PROBES.values(), ids=METRICS_PROBES.keys()
)
def test_a_metrics_endpoint_answers_a_hostile_scrape_with_a_4xx(
    metrics: MetricsServer, path: bytes, headers: bytes, status: bytes
) -> None:
    address = (metrics.host, metrics.port)
    answer = raw_get(address, path, headers)
    assert answer.split(b"\r\n", 1)[0].split(b" ")[1] == status, answer[:200]
    assert b"flexjob_probe_total" not in answer
    good = raw_get(address, b"/metrics", f"Authorization: Bearer {TOKEN}\r\n".encode())
    assert b"flexjob_probe_total 1" in good  # still serving
