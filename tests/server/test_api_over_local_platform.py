"""The HTTP API over the local platform, with the local operator loop creating and deleting the
replicas it asks for (real processes, SQLite job store)."""

import contextlib
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from flexjob.api import JobPhase, ReplicaType
from flexjob.operator.local.loop import LocalJobLoop
from flexjob.platform.local import LocalPlatform
from flexjob.server.app import create_app
from tests.support.local_jobs import (
    local_job,
    local_platform,  # noqa: F401 (the fixture)
    wait_for_file_then_exit,
)
from tests.support.polling import wait_until
from tests.support.server_process import flexjob_server


@pytest.fixture
def client(platform: LocalPlatform) -> TestClient:
    """The HTTP API over ``platform``, called in this process."""
    return TestClient(create_app(platform))


def _start(platform: LocalPlatform, stop: Path, name: str, *, preemptible: bool) -> LocalJobLoop:
    job = local_job(name, master=None, worker=wait_for_file_then_exit(stop, timeout=50), workers=2)
    job.spec.preemptible = preemptible
    job.spec.replica_specs[ReplicaType.WORKER].min_replicas = 1
    job.spec.replica_specs[ReplicaType.WORKER].max_replicas = 4
    platform.create_job(job)
    loop = LocalJobLoop(platform, "default", name, interval=0.05)
    wait_until(lambda: loop.step().job.status.phase is JobPhase.RUNNING, timeout=20)  # type: ignore[union-attr]
    return loop


def _workers(loop: LocalJobLoop) -> list[str]:
    return sorted(r.name for r in loop.step().replicas if r.active and not r.deleting)


@contextlib.contextmanager
def _running(
    platform: LocalPlatform, tmp_path: Path, name: str, *, preemptible: bool
) -> Iterator[LocalJobLoop]:
    """Job ``name`` running two workers under the local operator loop; after, its workers exit
    and the loop runs the job to its end."""
    stop = tmp_path / "stop"
    loop = _start(platform, stop, name, preemptible=preemptible)
    try:
        yield loop
    finally:
        stop.touch()
        loop.run()


def test_scaling_a_preemptible_job_up_and_down_makes_the_operator_add_and_remove_replicas(
    platform: LocalPlatform, client: TestClient, tmp_path: Path
) -> None:
    with _running(platform, tmp_path, "elastic", preemptible=True) as loop:
        resp = client.post("/v2alpha1/default.elastic.1/replicas", json={"replicas": 2})
        assert resp.status_code == 200, resp.text
        wait_until(lambda: len(_workers(loop)) == 4, timeout=20, what="4 workers")
        listed = client.get("/v2alpha1/default.elastic.1/replicas").json()["data"]
        assert sorted(r["index"] for r in listed) == [0, 1, 2, 3]

        resp = client.request(
            "DELETE", "/v2alpha1/default.elastic.1/replicas", json={"replicas": 3}
        )
        assert resp.status_code == 200, resp.text
        wait_until(
            lambda: _workers(loop) == ["elastic-worker-0"], timeout=20, what="one worker left"
        )


def test_scaling_a_non_preemptible_job_is_409_and_changes_nothing(
    platform: LocalPlatform, client: TestClient, tmp_path: Path
) -> None:
    with _running(platform, tmp_path, "fixed", preemptible=False) as loop:
        resp = client.post("/v2alpha1/default.fixed.1/replicas", json={"replicas": 1})
        assert resp.status_code == 409
        assert "not preemptible" in resp.json()["message"]
        loop.step()
        assert len(_workers(loop)) == 2


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    """``flexjob server`` as a process over the local platform in ``tmp_path/home``."""
    with flexjob_server(tmp_path / "home", token="t0k") as url:
        yield url


def test_flexjob_server_process_scales_a_job_the_local_operator_runs(
    served: str, platform: LocalPlatform, tmp_path: Path
) -> None:
    with _running(platform, tmp_path, "remote", preemptible=True) as loop:
        url = f"{served}/v2alpha1/default.remote.1/replicas"
        assert httpx.post(url, json={"replicas": 1}).status_code == 401
        auth = {"Authorization": "Bearer t0k"}
        resp = httpx.post(url, json={"replicas": 1}, headers=auth)
        assert resp.status_code == 200, resp.text
        wait_until(lambda: len(_workers(loop)) == 3, timeout=20, what="3 workers")
        metrics = httpx.get(f"{served}/metrics", headers=auth).text
        assert 'flexjob_server_scale_requests_total{api="v2alpha1",direction="up"} 1.0' in metrics
