"""OOM on the local platform, for real: a replica's ``limits.memory`` is enforced (a memory
cgroup where this machine allows one), a worker that allocates past it dies ``OOMKilled``, and
the operator relaunches it with more memory until the job finishes."""

from pathlib import Path

import pytest
import yaml

from flexjob.platform.cgroups import CgroupRoot
from tests.support.local_jobs import job_status, local_job, run_flexjob
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


def test_a_worker_over_its_memory_limit_is_relaunched_with_more_and_the_job_finishes(
    tmp_path: Path, env: dict[str, str]
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
    out = run_flexjob(env, "submit", "--detach", str(spec))
    assert out.returncode == 0, out.stdout + out.stderr

    wait_until(lambda: job_status(env, "oom").get("phase") in ("Succeeded", "Failed"), timeout=60)
    status = job_status(env, "oom")
    assert status["phase"] == "Succeeded", status
    # The first incarnation ran under 256 MiB and was killed; the second got 384 MiB.
    assert (tmp_path / "mem-0").read_text().split() == [str(LIMIT_MIB), str(LIMIT_MIB * 3 // 2)]
    assert status["migratedReplicas"] == {"worker-0": {"memory": LIMIT_MIB * 3 // 2}}
    assert status["restartCount"] == 1
    described = " ".join(run_flexjob(env, "describe", "oom").stdout.split())  # unwrap the table
    assert "exit code 137 (OOMKilled)" in described, described
    assert f"relaunched with {LIMIT_MIB * 3 // 2} MiB" in described, described
