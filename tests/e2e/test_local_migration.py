"""A ScalePlan's ``migratePods`` on the local platform: real processes relaunched with new
resources, seen by the process through ``FLEXJOB_MEMORY_MIB``, and the job still succeeds."""

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from flexjob.api import ObjectMeta, PodRef, ResourceSpec, ScalePlan, ScalePlanSpec
from flexjob.platform.local import LocalPlatform
from tests.support.local_jobs import local_job
from tests.support.polling import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(60)]


def worker_code(out_dir: Path, stop: Path) -> str:
    """Append this run's FLEXJOB_MEMORY_MIB to ``out_dir/mem-<index>``; exit 0 once ``stop``
    exists."""
    return (
        "import os, pathlib, time\n"
        f"out = pathlib.Path({str(out_dir)!r}) / ('mem-' + os.environ['FLEXJOB_REPLICA_INDEX'])\n"
        "with out.open('a') as f: f.write(os.environ.get('FLEXJOB_MEMORY_MIB', 'unset') + '\\n')\n"
        f"stop = pathlib.Path({str(stop)!r}); end = time.time() + 40\n"
        "while not stop.exists() and time.time() < end: time.sleep(0.05)\n"
    )


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "home"
    yield path
    platform = LocalPlatform(path)
    for job in platform.list_jobs(None):
        platform.delete_job(job.namespace, job.name)


def flexjob(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "FLEXJOB_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "flexjob", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )


def status_of(home: Path, name: str) -> dict[str, object]:
    out = flexjob(home, "get", name, "-o", "json")
    return dict(json.loads(out.stdout)["status"]) if out.returncode == 0 else {}


def lines(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


def test_migrate_pods_relaunches_a_worker_with_new_memory(tmp_path: Path, home: Path) -> None:
    stop = tmp_path / "stop"
    job = local_job("mig", master=None, worker=worker_code(tmp_path, stop), workers=2, backoff=0)
    spec = tmp_path / "mig.yaml"
    spec.write_text(yaml.safe_dump(job.to_wire()))
    out = flexjob(home, "submit", "--detach", str(spec))
    assert out.returncode == 0, out.stdout + out.stderr
    wait_until(lambda: status_of(home, "mig").get("phase") == "Running", timeout=20)
    wait_until(lambda: lines(tmp_path / "mem-1"), timeout=20, what="worker-1 started")

    LocalPlatform(home).create_scale_plan(
        ScalePlan(
            metadata=ObjectMeta(name="oom-worker-1"),
            spec=ScalePlanSpec(
                owner_job="mig",
                migrate_pods=[PodRef(name="worker-1", resource=ResourceSpec(memory=1536))],
            ),
        )
    )
    wait_until(lambda: len(lines(tmp_path / "mem-1")) == 2, timeout=20, what="a relaunch")
    stop.touch()
    wait_until(lambda: status_of(home, "mig").get("phase") == "Succeeded", timeout=20)

    assert lines(tmp_path / "mem-1") == ["unset", "1536"]
    assert lines(tmp_path / "mem-0") == ["unset"]
    status = status_of(home, "mig")
    assert status.get("restartCount", 0) == 0
    assert status["migratedReplicas"] == {"worker-1": {"memory": 1536}}
