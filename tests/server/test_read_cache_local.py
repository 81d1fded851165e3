"""The server's read cache over the local platform, with the local operator loop creating and
deleting real replica processes: reads after the server's own writes see them, and repeated
reads reach the platform once per kept read (counted in the server's own metrics)."""

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from flexjob.api import JobPhase, ReplicaType
from flexjob.operator.local.loop import LocalJobLoop
from flexjob.platform.local import LocalPlatform
from flexjob.server.app import create_app
from flexjob.server.metrics import ServerMetrics
from tests.support.local_jobs import (
    local_job,
    local_platform,  # noqa: F401 (the fixture)
    wait_for_file_then_exit,
)
from tests.support.polling import wait_until

JOB = "/v2alpha1/default.cached.1/replicas"
#: Longer than any test here runs: only the server's own writes can refresh what it keeps.
LONG_TTL = 600.0


@pytest.fixture
def loop(platform: LocalPlatform, tmp_path: Path) -> Iterator[LocalJobLoop]:
    """Job ``cached``: two workers running under the local operator loop; after, they exit."""
    stop = tmp_path / "stop"
    job = local_job("cached", master=None, worker=wait_for_file_then_exit(stop, 50), workers=2)
    job.spec.preemptible = True
    job.spec.replica_specs[ReplicaType.WORKER].min_replicas = 1
    job.spec.replica_specs[ReplicaType.WORKER].max_replicas = 4
    platform.create_job(job)
    loop = LocalJobLoop(platform, "default", "cached", interval=0.05)
    wait_until(lambda: loop.step().job.status.phase is JobPhase.RUNNING, timeout=20)  # type: ignore[union-attr]
    try:
        yield loop
    finally:
        stop.touch()
        loop.run()


def _workers(loop: LocalJobLoop) -> list[str]:
    return sorted(r.name for r in loop.step().replicas if r.active and not r.deleting)


def _listed(client: TestClient) -> list[int]:
    resp = client.get(JOB)
    assert resp.status_code == 200, resp.text
    return sorted(r["index"] for r in resp.json()["data"])


def test_reads_after_the_servers_own_create_and_delete_are_the_platforms_state(
    platform: LocalPlatform, loop: LocalJobLoop
) -> None:
    with TestClient(create_app(platform, cache_ttl=LONG_TTL)) as client:
        assert _listed(client) == [0, 1]  # kept for LONG_TTL unless the server writes
        assert client.post(JOB, json={"replicas": 2}).status_code == 200
        wait_until(lambda: len(_workers(loop)) == 4, timeout=20, what="4 workers")
        assert _listed(client) == [0, 1, 2, 3]

        assert client.request("DELETE", JOB, json={"replicas": 3}).status_code == 200
        wait_until(lambda: _workers(loop) == ["cached-worker-0"], timeout=20, what="1 worker")
        assert _listed(client) == [0]


def _reads_of(requests: int, platform: LocalPlatform, ttl: float) -> tuple[int, int]:
    with TestClient(create_app(platform, cache_ttl=ttl)) as client:
        for _ in range(requests):
            assert _listed(client) == [0, 1]
        metrics: ServerMetrics = client.app.state.metrics  # type: ignore[attr-defined]
        return metrics.reads("platform"), metrics.reads("cache")


def test_repeated_reads_reach_the_platform_once_per_kept_read(
    platform: LocalPlatform, loop: LocalJobLoop
) -> None:
    # A GET of a job's replicas reads the job, its services and its replicas: 3 platform reads.
    assert _reads_of(50, platform, ttl=0) == (150, 0)
    assert _reads_of(50, platform, ttl=LONG_TTL) == (3, 147)
