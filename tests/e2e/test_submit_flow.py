"""docs/architecture.md's path of a job with ``flexjob submit``: the operator adds the job
master, the workers' agents train the digits example with it, and the job ends Succeeded."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from flexjob.platform.local import LocalPlatform
from tests.support.local_jobs import run_flexjob
from tests.support.polling import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(90)]
REPO = Path(__file__).resolve().parents[2]
SPEC = REPO / "examples" / "specs" / "digits-elastic.yaml"
NAME = "digits-elastic"
ACCURACY = re.compile(r"digits: accuracy=([0-9.]+) steps=\d+ world_size=(\d+)")


@pytest.fixture
def env(home: Path) -> dict[str, str]:
    """The user's shell: ``python`` on PATH is this interpreter, flexjob on PYTHONPATH."""
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    pythonpath = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
    return {
        **os.environ,
        "FLEXJOB_HOME": str(home),
        "PATH": path,
        "PYTHONPATH": pythonpath,
        "COLUMNS": "200",
    }


def flexjob(
    env: dict[str, str], *args: str, timeout: float = 30
) -> subprocess.CompletedProcess[str]:
    return run_flexjob(env, *args, timeout=timeout, cwd=REPO)


def results(env: dict[str, str], workers: int) -> list[tuple[float, int]]:
    """(accuracy, world size) printed by rank 0, read with ``flexjob logs``."""
    found = []
    for index in range(workers):
        out = flexjob(env, "logs", NAME, "--replica", f"worker-{index}")
        assert out.returncode == 0, out.stderr
        found += [(float(a), int(w)) for a, w in ACCURACY.findall(out.stdout)]
    return found


def test_submit_trains_digits_to_success_then_removes_the_implicit_master(
    env: dict[str, str], home: Path
) -> None:
    out = flexjob(env, "submit", str(SPEC), timeout=80)
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"job default/{NAME} Succeeded" in out.stdout
    [(accuracy, world_size)] = results(env, workers=2)
    assert accuracy >= 0.9
    assert world_size == 2
    replicas = LocalPlatform(home).list_replicas("default", NAME)
    assert sorted(r.name for r in replicas) == [f"{NAME}-worker-0", f"{NAME}-worker-1"]
    master_log = flexjob(env, "logs", NAME, "--replica", "master-0").stdout
    assert "event=master_started" in master_log
    assert "event=round_completed" in master_log


def slow_spec(tmp_path: Path) -> Path:
    """The example spec with slower steps, so there is time to scale it while it trains."""
    wire = yaml.safe_load(SPEC.read_text())
    main = wire["spec"]["replicaSpecs"]["worker"]["template"]["spec"]["containers"][0]
    main["args"] = [*main["args"], "--step-delay", "0.4"]
    path = tmp_path / "digits-slow.yaml"
    path.write_text(yaml.safe_dump(wire))
    return path


def phase(home: Path) -> str:
    job = LocalPlatform(home).get_job("default", NAME)
    return job.status.phase.value if job.status else ""


@pytest.mark.timeout(240)
def test_scaling_a_running_job_to_three_workers_grows_the_world(
    tmp_path: Path, env: dict[str, str], home: Path
) -> None:
    out = flexjob(env, "submit", "--detach", str(slow_spec(tmp_path)))
    assert out.returncode == 0, out.stdout + out.stderr
    master_log = home / "jobs" / "default" / NAME / "logs" / "master-0.log"
    wait_until(
        lambda: master_log.exists() and "world_size=2" in master_log.read_text(),
        timeout=40,
        interval=0.5,
        what="a world of two workers",
    )
    out = flexjob(env, "scale", NAME, "--worker", "3")
    assert out.returncode == 0, out.stdout + out.stderr
    wait_until(
        lambda: "world_size=3" in master_log.read_text(),
        timeout=90,  # a third process importing torch on a loaded 2-core machine
        interval=0.5,
        what="the third worker in the world",
    )
    wait_until(lambda: phase(home) in ("Succeeded", "Failed"), timeout=90, interval=0.5)
    assert phase(home) == "Succeeded"
    [(accuracy, world_size)] = results(env, workers=3)
    assert world_size == 3
    assert accuracy >= 0.9
