"""OOM on the local platform, for real: a replica's ``limits.memory`` is enforced (a memory
cgroup where this machine allows one), a worker that allocates past it dies ``OOMKilled``, and
the operator relaunches it with more memory until the job finishes."""

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from flexjob.platform.cgroups import CgroupRoot
from flexjob.platform.local import LocalPlatform
from tests.support.local_jobs import local_job
from tests.support.polling import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(90)]

#: What the worker needs: more than its first limit, less than that limit x 1.5.
NEED_MIB = 300
LIMIT_MIB = 256


def hungry_worker(out_dir: Path) -> str:
    """Record the memory this incarnation was given, then touch ``NEED_MIB`` MiB and exit 0."""
    return (
        "import os, pathlib\n"
        f"out = pathlib.Path({str(out_dir)!r}) / ('mem-' + os.environ['FLEXJOB_REPLICA_INDEX'])\n"
        "with out.open('a') as f: f.write(os.environ.get('FLEXJOB_MEMORY_MIB', 'unset') + '\\n')\n"
        f"block = bytearray({NEED_MIB} * 2**20)\n"
        "for i in range(0, len(block), 4096): block[i] = 1\n"
        "print('allocated', len(block) >> 20, 'MiB')\n"
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
        [sys.executable, "-m", "flexjob", *args], env=env, capture_output=True, text=True,
        timeout=30,
    )  # fmt: skip


def status_of(home: Path, name: str) -> dict[str, object]:
    out = flexjob(home, "get", name, "-o", "json")
    return dict(json.loads(out.stdout)["status"]) if out.returncode == 0 else {}


def test_a_worker_over_its_memory_limit_is_relaunched_with_more_and_the_job_finishes(
    tmp_path: Path, home: Path
) -> None:
    if not CgroupRoot(own_dir=False).available():
        pytest.skip("no writable memory cgroup here (RLIMIT_AS fallback is unit-tested)")
    job = local_job("oom", master=None, worker=hungry_worker(tmp_path), workers=1, backoff=2)
    wire = job.to_wire()
    container = wire["spec"]["replicaSpecs"]["worker"]["template"]["spec"]["containers"][0]
    container["resources"] = {
        "requests": {"memory": f"{LIMIT_MIB}Mi"},
        "limits": {"memory": f"{LIMIT_MIB}Mi"},
    }
    spec = tmp_path / "oom.yaml"
    spec.write_text(yaml.safe_dump(wire))
    out = flexjob(home, "submit", "--detach", str(spec))
    assert out.returncode == 0, out.stdout + out.stderr

    wait_until(lambda: status_of(home, "oom").get("phase") in ("Succeeded", "Failed"), timeout=60)
    status = status_of(home, "oom")
    assert status["phase"] == "Succeeded", status
    # The first incarnation ran under 256 MiB and was killed; the second got 384 MiB.
    assert (tmp_path / "mem-0").read_text().split() == [str(LIMIT_MIB), str(LIMIT_MIB * 3 // 2)]
    assert status["migratedReplicas"] == {"worker-0": {"memory": LIMIT_MIB * 3 // 2}}
    assert status["restartCount"] == 1
    described = " ".join(flexjob(home, "describe", "oom").stdout.split())  # unwrap the table
    assert "exit code 137 (OOMKilled)" in described, described
    assert f"relaunched with {LIMIT_MIB * 3 // 2} MiB" in described, described
