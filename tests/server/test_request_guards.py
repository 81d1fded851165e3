"""The server refuses oversized bodies (413, before the route sees them) and names the field,
not a byte offset, when a body is not JSON or has a bad field."""

from collections.abc import Iterator

from fastapi.testclient import TestClient

from flexjob.api.limits import MAX_HTTP_BODY_BYTES

from .jobs import elastic_job
from .memory_platform import MemoryPlatform

JOB = "/v2alpha1/default.mnist.1"
BIG = 64 * 1024 * 1024


def test_a_64_mb_profilings_body_is_413_and_status_stays_small(
    client: TestClient, memory: MemoryPlatform
) -> None:
    memory.create_job(elastic_job())
    body = b'{"data": {"blob": "' + b"x" * BIG + b'"}}'
    resp = client.post(
        f"{JOB}/profilings", content=body, headers={"content-type": "application/json"}
    )
    assert resp.status_code == 413
    assert resp.json()["message"] == f"request body too large: at most {MAX_HTTP_BODY_BYTES} bytes"
    status = memory.get_job("default", "mnist").status
    assert status is None or not status.profilings


def test_a_body_without_content_length_is_cut_off_at_the_bound(
    client: TestClient, memory: MemoryPlatform
) -> None:
    memory.create_job(elastic_job())

    def chunks() -> Iterator[bytes]:
        yield b'{"data": {"blob": "'
        for _ in range(BIG // (1024 * 1024)):
            yield b"x" * 1024 * 1024
        yield b'"}}'

    resp = client.post(
        f"{JOB}/profilings", content=chunks(), headers={"content-type": "application/json"}
    )
    assert resp.status_code == 413


def test_a_body_that_is_not_json_is_422_at_line_and_column_not_a_byte_offset(
    client: TestClient, memory: MemoryPlatform
) -> None:
    memory.create_job(elastic_job())
    resp = client.post(
        f"{JOB}/profilings",
        content=b'{"data":\n  {"a": nope}}',
        headers={"content-type": "application/json"},
    )
    assert resp.status_code == 422
    body = resp.json()
    assert body["data"][0]["field"] == "body"
    assert body["message"].startswith("body: invalid JSON at line 2 column 9")


def test_a_bad_field_is_named_by_its_json_path(client: TestClient, memory: MemoryPlatform) -> None:
    memory.create_job(elastic_job())
    resp = client.post(f"{JOB}/profilings", json={"data": [1, 2]})
    assert resp.status_code == 422
    assert [e["field"] for e in resp.json()["data"]] == ["data"]
