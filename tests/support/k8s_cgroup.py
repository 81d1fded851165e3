"""Memory cgroups for the process kubelet's containers: a limit, OOM kills, kill-all.

Each container runs in its own memory cgroup under this process's own (v1 ``memory`` or v2
unified), so its limit is enforced by the kernel's OOM killer as on a node, and the kubelet
reads whether an OOM kill happened there (containerd reports such a container ``OOMKilled``).
``available()`` says whether cgroups can be made here (root, cgroupfs writable); without them
containers run unlimited and OOM tests skip.
"""

import contextlib
import os
import signal
import uuid
from pathlib import Path

from flexjob.agent.oom import parse_oom_kills

_ROOT = Path("/sys/fs/cgroup")


def _own_memory_cgroup() -> Path | None:
    """This process's memory cgroup directory (v1 ``memory`` controller or v2), if any."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            return _ROOT / "memory" / path.lstrip("/")
    for line in lines:
        if line.startswith("0::") and (_ROOT / "cgroup.controllers").exists():
            return _ROOT / line[3:].lstrip("/")
    return None


def _v2(directory: Path) -> bool:
    return (directory / "memory.max").exists() or (directory / "cgroup.controllers").exists()


class MemoryCgroup:
    """One container's cgroup: ``limit`` bytes (None: none), its OOM-kill count, its pids."""

    def __init__(self, directory: Path, limit: int | None) -> None:
        self.directory = directory
        directory.mkdir()
        self.v2 = _v2(directory)
        if limit is not None:
            name = "memory.max" if self.v2 else "memory.limit_in_bytes"
            (directory / name).write_text(str(limit))

    @property
    def procs_file(self) -> Path:
        return self.directory / "cgroup.procs"

    def oom_kills(self) -> int:
        """How many processes the kernel's OOM killer ended in this cgroup."""
        name = "memory.events" if self.v2 else "memory.oom_control"
        with contextlib.suppress(OSError):
            return parse_oom_kills((self.directory / name).read_text())
        return 0

    def peak_bytes(self) -> int:
        """The most memory the container used (for calibrating tests)."""
        name = "memory.peak" if self.v2 else "memory.max_usage_in_bytes"
        with contextlib.suppress(OSError, ValueError):
            return int((self.directory / name).read_text())
        return 0

    def pids(self) -> list[int]:
        with contextlib.suppress(OSError):
            return [int(p) for p in self.procs_file.read_text().split()]
        return []

    def kill_all(self) -> None:
        for pid in self.pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def remove(self) -> None:
        """Remove the (empty) cgroup; processes still in it are killed first."""
        self.kill_all()
        with contextlib.suppress(OSError):
            self.directory.rmdir()


class CgroupRoot:
    """A parent cgroup for one kubelet's containers, under this process's own."""

    def __init__(self) -> None:
        own = _own_memory_cgroup()
        self.directory: Path | None = None
        if own is None or not os.access(own, os.W_OK):
            return
        directory = own / f"flexjob-kubelet-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        try:
            directory.mkdir()
        except OSError:
            return
        self.directory = directory

    def available(self) -> bool:
        return self.directory is not None

    def container(self, name: str, limit: int | None) -> MemoryCgroup | None:
        if self.directory is None:
            return None
        return MemoryCgroup(self.directory / name, limit)

    def remove(self) -> None:
        if self.directory is None:
            return
        for child in self.directory.iterdir():
            if child.is_dir():
                MemoryCgroup.remove(_existing(child))
        with contextlib.suppress(OSError):
            self.directory.rmdir()


def _existing(directory: Path) -> MemoryCgroup:
    cgroup = MemoryCgroup.__new__(MemoryCgroup)
    cgroup.directory, cgroup.v2 = directory, _v2(directory)
    return cgroup
