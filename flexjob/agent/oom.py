"""Whether the kernel's OOM killer ended a process of this replica: its memory cgroup's
``oom_kill`` counter (cgroup v2 ``memory.events``, v1 ``memory.oom_control``), and whether that
cgroup has a memory limit at all.

The replica's cgroup (a pod's container on Kubernetes, the local platform's per-replica cgroup)
holds the agent and its workers, so a worker killed for going over the replica's memory limit
shows there; the agent then reports the failure as ``OOMKilled`` and, since restarting it under
the same limit would only be killed again, ends the node with exit code 137 so that the
operator relaunches the replica with more memory (``core.operator.replica_resources.oom_memory``).
None where no memory cgroup can be read (not Linux, no cgroupfs). The files' format is
``platform.cgroups``'.
"""

import contextlib
from pathlib import Path

from flexjob.platform.cgroups import (
    CGROUP_ROOT,
    limit_in,
    memory_cgroup_candidates,
    oom_kills_in,
    parse_oom_kills,
)

__all__ = ["CGROUP_ROOT", "memory_limited", "oom_kills", "parse_oom_kills"]


def _candidates(root: Path) -> list[Path]:
    with contextlib.suppress(OSError, ValueError):
        return memory_cgroup_candidates(root, Path("/proc/self/cgroup").read_text())
    return []


def oom_kills(root: Path = CGROUP_ROOT) -> int | None:
    """OOM kills so far in this process's memory cgroup, None when it cannot be read."""
    for directory in _candidates(root):
        kills = oom_kills_in(directory)
        if kills is not None:
            return kills
    return None


def memory_limited(root: Path = CGROUP_ROOT) -> bool:
    """Whether this process's memory cgroup has a memory limit (a replica with one)."""
    return any(limit_in(directory) is not None for directory in _candidates(root))
