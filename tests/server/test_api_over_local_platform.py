"""The HTTP API over the local platform, with the local operator loop creating and deleting the
replicas it asks for (real processes, SQLite job store)."""

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from flexjob.api import JobPhase, ReplicaType
from flexjob.operator.local.loop import LocalJobLoop
from flexjob.platform.local import LocalPlatform
from flexjob.server.app import create_app
from tests.support.local_jobs import local_job, wait_for_file_then_exit
from tests.support.polling import wait_until


@pytest.fixture
def platform(tmp_path: Path) -> Iterator[LocalPlatform]:
    local = LocalPlatform(tmp_path / "home")
    yield local
    local.close()


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


def _finish(loop: LocalJobLoop, stop: Path) -> None:
    stop.touch()
    loop.run()


def test_scaling_a_preemptible_job_up_and_down_makes_the_operator_add_and_remove_replicas(
    platform: LocalPlatform, tmp_path: Path
) -> None:
    stop = tmp_path / "stop"
    loop = _start(platform, stop, "elastic", preemptible=True)
    client = TestClient(create_app(platform))
    try:
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
    finally:
        _finish(loop, stop)


def test_scaling_a_non_preemptible_job_is_409_and_changes_nothing(
    platform: LocalPlatform, tmp_path: Path
) -> None:
    stop = tmp_path / "stop"
    loop = _start(platform, stop, "fixed", preemptible=False)
    client = TestClient(create_app(platform))
    try:
        resp = client.post("/v2alpha1/default.fixed.1/replicas", json={"replicas": 1})
        assert resp.status_code == 409
        assert "not preemptible" in resp.json()["message"]
        loop.step()
        assert len(_workers(loop)) == 2
    finally:
        _finish(loop, stop)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    """``flexjob server`` as a process over the local platform in ``tmp_path/home``."""
    port = _free_port()
    env = {**os.environ, "FLEXJOB_HOME": str(tmp_path / "home"), "FLEXJOB_SERVER_TOKEN": "t0k"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "flexjob",
            "server",
            "--port",
            str(port),
            "--platform",
            "local",
            "--log-level",
            "warning",
        ],
        env=env,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: _healthy(url), timeout=30, what="flexjob server /healthz")
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}/healthz", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def test_flexjob_server_process_scales_a_job_the_local_operator_runs(
    served: str, platform: LocalPlatform, tmp_path: Path
) -> None:
    stop = tmp_path / "stop"
    loop = _start(platform, stop, "remote", preemptible=True)
    try:
        url = f"{served}/v2alpha1/default.remote.1/replicas"
        assert httpx.post(url, json={"replicas": 1}).status_code == 401
        auth = {"Authorization": "Bearer t0k"}
        resp = httpx.post(url, json={"replicas": 1}, headers=auth)
        assert resp.status_code == 200, resp.text
        wait_until(lambda: len(_workers(loop)) == 3, timeout=20, what="3 workers")
        metrics = httpx.get(f"{served}/metrics", headers=auth).text
        assert 'flexjob_server_scale_requests_total{api="v2alpha1",direction="up"} 1.0' in metrics
    finally:
        _finish(loop, stop)
