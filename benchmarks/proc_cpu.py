"""CPU-seconds (user + system) of each process of a command's tree, read from ``/proc`` (Linux).

``CpuWatch(pid, done)`` samples the tree under ``pid`` every 20 ms on a thread until ``done()``
is true (or the tree is gone) and keeps, per process, its last reading and its role: what
its command line says it is (``role``: run, master, agent, torchrun, worker). A process that
exits between two samples keeps its last reading (it may miss up to 20 ms). For
``benchmarks/startup.py``: where a start-up's CPU goes, which is what costs wall time under
CPU contention. Not a general profiler.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
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
