"""CPU-seconds (user + system) of each process of a command's tree, read from ``/proc`` (Linux).

``CpuWatch(pid, done)`` samples the tree under ``pid`` every 20 ms on a thread until ``done()``
is true (or the tree is gone) and keeps, per process, its last reading and its role: what
its command line says it is (``role``: run, master, agent, torchrun, worker). A process that
exits between two samples keeps its last reading (it may miss up to 20 ms). For
``benchmarks/startup.py``: where a start-up's CPU goes, which is what costs wall time under
CPU contention. Not a general profiler.

Also for ``benchmarks/master_load.py``: one process's CPU-seconds (``process_cpu_s``), a CPU's
busy seconds whoever ran (``busy_s``, ``/proc/stat``), the waited-for children's
(``children_cpu_s``), and all three over a measured window (``CpuWindow``).
"""

from __future__ import annotations

import os
import resource
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")
PROC = Path("/proc")
#: Command-line markers → role, first match wins (an agent's command names the script too).
MARKERS = (
    ("flexjob.agent.bootstrap", "worker"),
    ("flexjob.agent.process", "agent"),
    ("flexjob.master.process", "master"),
    ("-m flexjob agent", "agent"),
    ("-m flexjob master", "master"),
    ("-m flexjob run", "run"),
    ("torchrun", "torchrun"),
)


def role(cmdline: str) -> str:
    """What a process of a start-up is, from its command line (a script: a worker)."""
    return next((name for marker, name in MARKERS if marker in cmdline), "worker")


def _stat(pid: str) -> tuple[int, float] | None:
    """(parent pid, CPU-seconds) of ``pid``; None once it is gone."""
    try:
        text = (PROC / pid / "stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / TICK


class CpuWatch:
    """Per-process CPU of the tree under ``pid`` until ``done()`` is true (see the module)."""

    def __init__(self, pid: int, done: Callable[[], bool], interval_s: float = 0.02) -> None:
        self._root = pid
        self._done = done
        self._interval_s = interval_s
        self.cpu: dict[int, float] = {}
        self.roles: dict[int, str] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cpu-watch", daemon=True)
        self._thread.start()

    def _sample(self) -> bool:
        """One reading of every process of the tree; False once the tree is gone."""
        parents: dict[int, list[tuple[int, float]]] = {}
        for entry in os.listdir(PROC):
            if entry.isdigit() and (got := _stat(entry)) is not None:
                parents.setdefault(got[0], []).append((int(entry), got[1]))
        own = {pid: cpu for kids in parents.values() for pid, cpu in kids}
        if self._root not in own:
            return False
        todo = [self._root]
        self.cpu[self._root] = own[self._root]
        while todo:
            for pid, cpu in parents.get(todo.pop(), []):
                self.cpu[pid] = cpu
                todo.append(pid)
        for pid in own.keys() & self.cpu.keys():  # read again: a fork shows its parent's
            try:
                cmd = (PROC / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ")
            except OSError:
                continue
            if cmd:
                self.roles[pid] = role(cmd.decode(errors="replace"))
        return True

    def _run(self) -> None:
        while not self._stop.is_set() and self._sample() and not self._done():
            self._stop.wait(self._interval_s)

    def stop(self) -> dict[str, list[float]]:
        """Stop watching; CPU-seconds per role (one entry per process, highest first)."""
        self._stop.set()
        self._thread.join()
        out: dict[str, list[float]] = {}
        for pid, cpu in self.cpu.items():
            out.setdefault(self.roles.get(pid, "?"), []).append(cpu)
        return {name: sorted(v, reverse=True) for name, v in sorted(out.items())}


def process_cpu_s(pid: int | None) -> float:
    """CPU seconds (user + system) process ``pid`` used so far; ``ProcessLookupError`` once it
    is gone."""
    got = _stat(str(pid))
    if got is None:
        raise ProcessLookupError(f"no process {pid}")
    return got[1]


def busy_s(cpu: int | None) -> float:
    """Seconds CPU ``cpu`` (None: all CPUs together) was busy so far, whoever ran (Linux
    ``/proc/stat``: all but idle and I/O wait)."""
    name = "cpu" if cpu is None else f"cpu{cpu}"
    for line in Path("/proc/stat").read_text().splitlines():
        fields = line.split()
        if fields[0] == name:
            ticks = [int(x) for x in fields[1:9]]
            return (sum(ticks) - ticks[3] - ticks[4]) / TICK
    raise ValueError(f"/proc/stat has no {name} line")


def children_cpu_s() -> float:
    """CPU seconds of this process's children that ended (and were waited for) so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@dataclass
class CpuWindow:
    """While the clients ran (their start to the last result): its seconds, the CPU seconds
    of process ``pid`` (the master) and the busy seconds of CPU ``cpu`` (None: all CPUs)."""

    pid: int
    cpu: int | None
    wall: float = 0.0
    used: float = 0.0
    busy: float = 0.0

    def begin(self) -> None:
        self.wall, self.used, self.busy = (
            time.monotonic(),
            process_cpu_s(self.pid),
            busy_s(self.cpu),
        )

    def end(self) -> None:
        self.wall = time.monotonic() - self.wall
        self.used = process_cpu_s(self.pid) - self.used
        self.busy = busy_s(self.cpu) - self.busy
