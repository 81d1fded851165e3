"""Local-platform specifics: logs, environment, command errors, sharing state between processes."""

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from flexjob.api import Container, ReplicaPhase, ReplicaType
from flexjob.platform.contract import NotFoundError
from flexjob.platform.local import LocalPlatform
from tests.platform.contract import NS, contract_job, replica_named, worker_request
from tests.support.polling import wait_until


@pytest.fixture
def platform(tmp_path: Path) -> Iterator[LocalPlatform]:
    local = LocalPlatform(tmp_path)
    yield local
    local.close()


def run_python(platform: LocalPlatform, code: str, index: int = 0) -> str:
    job = contract_job()
    spec = job.spec.replica_specs[next(iter(job.spec.replica_specs))]
    spec.template.spec.containers = [Container(command=[sys.executable, "-c", code])]
    return platform.create_replica(worker_request(job, index)).name


def finished(platform: LocalPlatform, name: str) -> bool:
    replica = replica_named(platform, name)
    return replica is not None and not replica.active


def test_replica_output_lands_in_the_job_log_directory(
    platform: LocalPlatform, tmp_path: Path
) -> None:
    name = run_python(platform, "print('hello from worker')")
    wait_until(lambda: finished(platform, name))
    log = tmp_path / "jobs" / NS / "cj" / "logs" / "worker-0.log"
    assert "hello from worker" in log.read_text()
    assert "hello from worker\n" in list(platform.read_logs(NS, name))


def test_replica_runs_with_the_flexjob_environment(platform: LocalPlatform) -> None:
    code = (
        "import os; print(os.environ['FLEXJOB_REPLICA_TYPE'], os.environ['FLEXJOB_REPLICA_INDEX'])"
    )
    name = run_python(platform, code, index=1)
    wait_until(lambda: finished(platform, name))
    assert list(platform.read_logs(NS, name)) == ["worker 1\n"]


def test_following_logs_ends_when_the_replica_exits(platform: LocalPlatform) -> None:
    name = run_python(
        platform, "import time\nfor i in range(3): print(i, flush=True); time.sleep(0.1)"
    )
    lines = list(platform.read_logs(NS, name, follow=True, timeout=20))
    assert lines == ["0\n", "1\n", "2\n"]


def test_logs_stay_readable_after_the_replica_is_deleted(platform: LocalPlatform) -> None:
    name = run_python(platform, "print('kept')")
    wait_until(lambda: finished(platform, name))
    platform.delete_replica(NS, name)
    assert list(platform.read_logs(NS, name)) == ["kept\n"]


def test_logs_of_an_unknown_replica_raise_not_found(platform: LocalPlatform) -> None:
    with pytest.raises(NotFoundError):
        list(platform.read_logs(NS, "nobody-worker-0"))


def test_missing_command_fails_the_replica_with_code_127(platform: LocalPlatform) -> None:
    job = contract_job()
    spec = job.spec.replica_specs[next(iter(job.spec.replica_specs))]
    spec.template.spec.containers = [Container(command=["/nonexistent/program"])]
    replica = platform.create_replica(worker_request(job))
    assert (replica.phase, replica.exit_code) == (ReplicaPhase.FAILED, 127)


def test_killed_replica_reports_128_plus_the_signal(platform: LocalPlatform) -> None:
    name = run_python(platform, "import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
    wait_until(lambda: finished(platform, name))
    replica = replica_named(platform, name)
    assert replica is not None and replica.exit_code == 137


def test_another_platform_on_the_same_home_sees_the_replicas(
    platform: LocalPlatform, tmp_path: Path
) -> None:
    name = run_python(platform, "print('x')")
    wait_until(lambda: finished(platform, name))
    other = LocalPlatform(tmp_path)
    replica = replica_named(other, name)
    assert replica is not None and replica.phase is ReplicaPhase.SUCCEEDED


def test_deleting_a_job_stops_its_replicas(platform: LocalPlatform) -> None:
    platform.create_job(contract_job())
    name = run_python(platform, "import time; time.sleep(60)")
    platform.delete_job(NS, "cj")
    assert replica_named(platform, name) is None


PATCHER = (
    "import sys\n"
    "from flexjob.platform.local import LocalPlatform\n"
    "platform = LocalPlatform(sys.argv[1])\n"
    "for i in range(20):\n"
    "    platform.patch_job_status('default', 'cj', {'profilings': {f'{sys.argv[2]}{i}': i}})\n"
)


def test_status_patches_from_concurrent_processes_all_survive(
    platform: LocalPlatform, tmp_path: Path
) -> None:
    platform.create_job(contract_job())
    writers = [
        subprocess.Popen([sys.executable, "-c", PATCHER, str(tmp_path), prefix])
        for prefix in ("a", "b")
    ]
    for i in range(20):
        platform.patch_job_status(NS, "cj", {"replicas": {"worker": i}})
    assert [w.wait(timeout=60) for w in writers] == [0, 0]
    status = platform.get_job(NS, "cj").status
    assert status is not None
    assert set(status.profilings) == {f"{p}{i}" for p in "ab" for i in range(20)}
    assert status.replicas == {ReplicaType.WORKER: 19}
