"""The agent tells an OOM kill from its container's memory cgroup (v1 and v2 layouts)."""

from pathlib import Path

import pytest

from flexjob.agent import oom
from flexjob.agent.config import default_node_id, default_replica_type


@pytest.mark.parametrize(
    ("text", "kills"),
    [
        ("oom_kill_disable 0\nunder_oom 0\noom_kill 3\n", 3),  # v1 memory.oom_control
        ("low 0\nhigh 0\nmax 5\noom 2\noom_kill 2\noom_group_kill 0\n", 2),  # v2 memory.events
        ("oom_kill_disable 0\nunder_oom 0\n", 0),  # an old kernel without the counter
    ],
)
def test_the_oom_kill_counter_is_read_from_either_cgroup_version(text: str, kills: int) -> None:
    assert oom.parse_oom_kills(text) == kills


def _fake_cgroupfs(root: Path, version: int, kills: int) -> None:
    """This process's own cgroup path, under ``root``, with an OOM-kill counter."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if version == 1 and "memory" in controllers.split(","):
            own = root / "memory" / path.lstrip("/")
            own.mkdir(parents=True)
            (own / "memory.oom_control").write_text(f"oom_kill_disable 0\noom_kill {kills}\n")
            return
        if version == 2 and line.startswith("0::"):
            own = root / path.lstrip("/")
            own.mkdir(parents=True, exist_ok=True)
            (own / "memory.events").write_text(f"oom 0\noom_kill {kills}\n")
            return
    pytest.skip(f"this process has no cgroup v{version} memory entry")


@pytest.mark.parametrize("version", [1, 2])
def test_oom_kills_reads_this_process_s_own_memory_cgroup(tmp_path: Path, version: int) -> None:
    _fake_cgroupfs(tmp_path, version, kills=4)
    assert oom.oom_kills(tmp_path) == 4


def test_without_a_memory_cgroup_nothing_is_known(tmp_path: Path) -> None:
    assert oom.oom_kills(tmp_path) is None


def test_an_agent_started_by_an_operator_is_named_for_its_replica() -> None:
    env = {"FLEXJOB_REPLICA_TYPE": "ps", "FLEXJOB_REPLICA_INDEX": "2"}
    assert default_node_id(env) == "ps-2"
    assert default_replica_type(env) == "ps"
    assert default_node_id({}).rsplit("-", 1)[1].isdigit()  # by hand: HOST-PID
    assert default_replica_type({}) == "worker"
