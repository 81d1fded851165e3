import os
import subprocess
import sys
from pathlib import Path

from flexjob.api import ReplicaType
from flexjob.platform.local import LocalPlatform
from tests.support.local_jobs import local_job


def _flexjob(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "FLEXJOB_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "flexjob", "allocator", "--platform", "local", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


def test_allocator_once_places_a_local_job_on_the_given_nodes(tmp_path: Path) -> None:
    home = tmp_path / "home"
    platform = LocalPlatform(home)
    try:
        platform.create_job(local_job("a", master=None, worker="pass", workers=2))
    finally:
        platform.close()
    out = _flexjob(home, "--policy", "pack", "--node", "n0:cpu=4", "--once")
    assert out.returncode == 0, out.stderr
    assert "default/a/worker: n0, n0" in out.stdout
    platform = LocalPlatform(home)
    try:
        status = platform.get_job("default", "a").status
        assert status is not None and status.allocation[ReplicaType.WORKER] == ["n0", "n0"]
    finally:
        platform.close()


def test_allocator_on_the_local_platform_needs_nodes(tmp_path: Path) -> None:
    out = _flexjob(tmp_path / "home", "--once")
    assert out.returncode == 2
    assert "--node: required" in out.stderr
