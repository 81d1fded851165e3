"""Whether the kernel's OOM killer ended a process of this container: its memory cgroup's
``oom_kill`` counter (cgroup v2 ``memory.events``, v1 ``memory.oom_control``).

On Kubernetes the container's cgroup holds the agent and its workers, so a worker killed for
going over the container's memory limit shows there; the agent then reports the failure as an
OOM kill, which the master's planner answers with more memory (``master.optimizing``). Not
for limits or usage; None where no memory cgroup can be read (not Linux, no cgroupfs).
"""

import contextlib
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")


def parse_oom_kills(text: str) -> int:
    """The ``oom_kill N`` line of ``memory.events`` or ``memory.oom_control`` (0 if none)."""
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if key == "oom_kill" and value.strip().isdigit():
            return int(value)
    return 0


def _own_cgroup_files(proc_cgroup: str, root: Path) -> list[Path]:
    files = []
    for line in proc_cgroup.splitlines():
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            files.append(root / "memory" / path.lstrip("/") / "memory.oom_control")
        elif line.startswith("0::"):
            files.append(root / path.lstrip("/") / "memory.events")
    return files


def oom_kills(root: Path = CGROUP_ROOT) -> int | None:
    """OOM kills so far in this process's memory cgroup, None when it cannot be read."""
    with contextlib.suppress(OSError, ValueError):
        proc_cgroup = Path("/proc/self/cgroup").read_text()
        for path in _own_cgroup_files(proc_cgroup, root):
            with contextlib.suppress(OSError):
                return parse_oom_kills(path.read_text())
    return None
