"""Memory cgroups: a replica's memory limit enforced by the kernel, and its OOM kills counted.

Both layouts are read: cgroup v1 (the ``memory`` controller, ``memory.limit_in_bytes``,
``memory.oom_control``) and v2 (``memory.max``, ``memory.events``). A ``MemoryCgroup`` is one
replica's (or one test kubelet container's) own cgroup under this process's memory cgroup: its
limit makes the kernel's OOM killer end the biggest process in it when the replica goes over,
and its ``oom_kill`` counter tells afterwards that this happened (``OOMKilled``, as containerd
reports it). ``available()`` says whether cgroups can be made here (root and a writable
cgroupfs); callers fall back to ``RLIMIT_AS`` (local platform) or no limit when not. Also here:
this process's own counter and limit, which the agent reads inside its replica. Not for CPU.
"""

import contextlib
import os
import signal
import uuid
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
#: v1's "no limit" is a huge page-aligned number; anything at or above this means unlimited.
_UNLIMITED_V1 = 2**62


def parse_oom_kills(text: str) -> int:
    """The ``oom_kill N`` line of ``memory.events`` or ``memory.oom_control`` (0 if none)."""
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if key == "oom_kill" and value.strip().isdigit():
            return int(value)
    return 0


def parse_limit(text: str) -> int | None:
    """A ``memory.max`` / ``memory.limit_in_bytes`` value in bytes; None when unlimited."""
    value = text.strip()
    if not value.isdigit():
        return None  # "max" (v2) or unreadable
    limit = int(value)
    return None if limit >= _UNLIMITED_V1 else limit


def memory_cgroup_candidates(root: Path, proc_cgroup: str) -> list[Path]:
    """The directories that may be this process's memory cgroup, v1's first (from the text of
    ``/proc/self/cgroup``)."""
    lines = proc_cgroup.splitlines()
    out = []
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            out.append(root / "memory" / path.lstrip("/"))
    out += [root / line[3:].lstrip("/") for line in lines if line.startswith("0::")]
    return out


def own_memory_cgroup(root: Path = CGROUP_ROOT, proc_cgroup: str | None = None) -> Path | None:
    """This process's memory cgroup directory (v1 ``memory`` controller, else v2), if any."""
    if proc_cgroup is None:
        try:
            proc_cgroup = Path("/proc/self/cgroup").read_text()
        except OSError:
            return None
    for directory in memory_cgroup_candidates(root, proc_cgroup):
        if directory.is_dir():
            return directory
    return None


def _file(directory: Path, v2: str, v1: str) -> Path:
    """``directory``'s file of this kind in its layout (v2 name when neither exists)."""
    return directory / v1 if (directory / v1).exists() else directory / v2


def _limit_file(directory: Path) -> Path:
    return _file(directory, "memory.max", "memory.limit_in_bytes")


def _oom_file(directory: Path) -> Path:
    return _file(directory, "memory.events", "memory.oom_control")


def oom_kills_in(directory: Path) -> int | None:
    """OOM kills so far in the cgroup ``directory``; None when it cannot be read."""
    with contextlib.suppress(OSError):
        return parse_oom_kills(_oom_file(directory).read_text())
    return None


def limit_in(directory: Path) -> int | None:
    """The memory limit of the cgroup ``directory`` in bytes; None when unlimited or unknown."""
    with contextlib.suppress(OSError):
        return parse_limit(_limit_file(directory).read_text())
    return None


class MemoryCgroup:
    """One replica's cgroup: ``limit`` bytes (None: none), its OOM-kill count, its pids."""

    def __init__(self, directory: Path, limit: int | None) -> None:
        self.directory = directory
        directory.mkdir()
        if limit is not None:
            try:
                _limit_file(directory).write_text(str(limit))
            except OSError:
                directory.rmdir()
                raise

    @classmethod
    def existing(cls, directory: Path) -> "MemoryCgroup":
        """A cgroup made earlier (maybe by another process), to read or remove."""
        cgroup = cls.__new__(cls)
        cgroup.directory = directory
        return cgroup

    @property
    def procs_file(self) -> Path:
        return self.directory / "cgroup.procs"

    @property
    def oom_file(self) -> Path:
        """The file whose ``oom_kill`` line counts this cgroup's OOM kills."""
        return _oom_file(self.directory)

    def oom_kills(self) -> int:
        """How many processes the kernel's OOM killer ended in this cgroup."""
        return oom_kills_in(self.directory) or 0

    def peak_bytes(self) -> int:
        """The most memory the cgroup used (for calibrating tests)."""
        path = _file(self.directory, "memory.peak", "memory.max_usage_in_bytes")
        with contextlib.suppress(OSError, ValueError):
            return int(path.read_text())
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
    """Where new cgroups go: this process's own memory cgroup, or a fresh child of it
    (``own_dir``), when that is writable; otherwise ``available()`` is False."""

    def __init__(self, prefix: str = "flexjob", own_dir: bool = True) -> None:
        own = own_memory_cgroup()
        self.directory: Path | None = None
        self._own_dir = own_dir
        if own is None or not os.access(own, os.W_OK):
            return
        if not own_dir:
            self.directory = own
            self.prefix = prefix
            return
        directory = own / f"{prefix}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        try:
            directory.mkdir()
        except OSError:
            return
        self.directory = directory
        self.prefix = ""

    def available(self) -> bool:
        return self.directory is not None

    def container(self, name: str, limit: int | None) -> MemoryCgroup | None:
        """A new cgroup named ``name`` with ``limit`` bytes; None when cgroups cannot be made
        here (or this one cannot)."""
        if self.directory is None:
            return None
        full = f"{self.prefix}-{name}" if self.prefix else name
        try:
            return MemoryCgroup(self.directory / full, limit)
        except OSError:
            return None

    def remove(self) -> None:
        """Remove a root made by this process (``own_dir``) with everything in it."""
        if self.directory is None or not self._own_dir:
            return
        for child in self.directory.iterdir():
            if child.is_dir():
                MemoryCgroup.existing(child).remove()
        with contextlib.suppress(OSError):
            self.directory.rmdir()
