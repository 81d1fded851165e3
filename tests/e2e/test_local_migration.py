"""A ScalePlan's ``migratePods`` on the local platform: real processes relaunched with new
resources, seen by the process through ``FLEXJOB_MEMORY_MIB``, and the job still succeeds."""

from pathlib import Path

import pytest
import yaml

from flexjob.api import ObjectMeta, PodRef, ResourceSpec, ScalePlan, ScalePlanSpec
from flexjob.platform.local import LocalPlatform
from tests.support.local_jobs import job_status, local_job, run_flexjob
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


def lines(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


def test_migrate_pods_relaunches_a_worker_with_new_memory(
    tmp_path: Path, home: Path, env: dict[str, str]
) -> None:
    stop = tmp_path / "stop"
    job = local_job("mig", master=None, worker=worker_code(tmp_path, stop), workers=2, backoff=0)
    spec = tmp_path / "mig.yaml"
    spec.write_text(yaml.safe_dump(job.to_wire()))
    out = run_flexjob(env, "submit", "--detach", str(spec))
    assert out.returncode == 0, out.stdout + out.stderr
    wait_until(lambda: job_status(env, "mig").get("phase") == "Running", timeout=20)
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
    wait_until(lambda: job_status(env, "mig").get("phase") == "Succeeded", timeout=20)

    assert lines(tmp_path / "mem-1") == ["unset", "1536"]
    assert lines(tmp_path / "mem-0") == ["unset"]
    status = job_status(env, "mig")
    assert status.get("restartCount", 0) == 0
    assert status["migratedReplicas"] == {"worker-1": {"memory": 1536}}
