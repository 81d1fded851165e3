"""A local replica's memory limit is enforced for real and an OOM kill is told apart: in a
memory cgroup where this machine allows one, by ``RLIMIT_AS`` otherwise; the reason survives the
process that started the replica (it is in the exit file)."""

import sys
from pathlib import Path

import pytest

from flexjob.api import Container, PodSpec, PodTemplateSpec, ResourceRequirements
from flexjob.core.replicas import OOM_KILLED
from flexjob.platform.cgroups import CgroupRoot, parse_limit
from flexjob.platform.kubernetes.bodies import replica_from_pod
from flexjob.platform.local import memory_limits, processes

MIB = 2**20
ALLOCATE_300_MIB = (
    "block = bytearray(300 * 2**20)\n"
    "for i in range(0, len(block), 4096): block[i] = 1\n"
    "print('survived')\n"
)


def run(tmp_path: Path, code: str, limit: int | None) -> tuple[int, str]:
    exits = tmp_path / "exits" / "uid-1"
    enforcement = memory_limits.enforce(limit, exits, "test-uid-1")
    proc = processes.spawn(
        [sys.executable, "-c", code], {}, tmp_path / "log", exits, None,
        enforcement.cgroup, enforcement.rlimit_bytes,
    )  # fmt: skip
    code_ = processes.exit_code(proc.wait(timeout=60))
    tail = (tmp_path / "log").read_text()
    reason = memory_limits.exit_reason(exits, code_ != 0, tail)
    memory_limits.release(exits)
    if enforcement.cgroup is not None:
        assert not enforcement.cgroup.directory.exists()
    return code_, reason


def test_memory_limit_is_the_main_containers_limits_memory() -> None:
    def template(limits: dict[str, str]) -> PodTemplateSpec:
        resources = ResourceRequirements(requests={"memory": "1Gi"}, limits=limits)
        return PodTemplateSpec(spec=PodSpec(containers=[Container(name="m", resources=resources)]))

    assert memory_limits.memory_limit_bytes(template({"memory": "256Mi"})) == 256 * MIB
    assert memory_limits.memory_limit_bytes(template({})) is None  # requests are not limits
    assert memory_limits.memory_limit_bytes(template({"memory": "lots"})) is None


def test_a_replica_over_its_cgroup_limit_is_oom_killed(tmp_path: Path) -> None:
    if not CgroupRoot(own_dir=False).available():
        pytest.skip("no writable memory cgroup here")
    assert run(tmp_path, ALLOCATE_300_MIB, 128 * MIB) == (137, OOM_KILLED)
    assert processes.read_exit(tmp_path / "exits" / "uid-1") == 137


def test_a_replica_within_its_limit_runs_and_is_not_oom(tmp_path: Path) -> None:
    assert run(tmp_path, ALLOCATE_300_MIB, 1024 * MIB) == (0, "")
    assert run(tmp_path, "raise SystemExit(3)", None) == (3, "")


def test_without_cgroups_the_limit_is_rlimit_as_and_memory_error_reads_oom_killed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(CgroupRoot, "available", lambda self: False)
    monkeypatch.setattr(CgroupRoot, "container", lambda self, name, limit: None)
    code, reason = run(tmp_path, ALLOCATE_300_MIB, 200 * MIB)
    assert (code, reason) == (1, OOM_KILLED)
    assert "MemoryError" in (tmp_path / "log").read_text()


@pytest.mark.parametrize(("text", "limit"), [("max\n", None), ("268435456\n", 256 * MIB)])
def test_cgroup_limits_read_in_either_layout(text: str, limit: int | None) -> None:
    assert parse_limit(text) == limit
    assert parse_limit("9223372036854771712") is None  # v1's "unlimited"


def test_kubernetes_reports_the_containers_termination_reason() -> None:
    pod = {
        "metadata": {"name": "j-worker-0", "namespace": "ns", "labels": {}},
        "status": {
            "phase": "Failed",
            "containerStatuses": [
                {"state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}
            ],
        },
    }
    replica = replica_from_pod(pod)
    assert (replica.exit_code, replica.reason) == (137, OOM_KILLED)
