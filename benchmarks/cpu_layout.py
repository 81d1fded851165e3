"""Where a benchmark's processes run: ``--pin``'s layouts (``Cpus``) and ``on_cpus``, which
runs a target in a (child) process confined to some CPUs. For ``benchmarks/master_load.py``:
the master (or a bare server) on one CPU, its clients anywhere or on the others.
"""

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: ``--pin``'s layouts: where the server (the master or a bare one) and the clients run.
LAYOUTS = ("off", "master", "split")


@dataclass(frozen=True)
class Cpus:
    """Where a phase's processes run: the server (the master, by ``MasterConfig.cpu``, or a
    bare one) and the client processes (None: anywhere)."""

    server: int | None = None
    clients: frozenset[int] | None = None

    @staticmethod
    def layout(name: str) -> "Cpus":
        """``off``: anywhere; ``master``: the server on the first CPU this process may use, the
        clients anywhere; ``split``: the server there, the clients on the others."""
        cpus = sorted(os.sched_getaffinity(0))
        if name == "off":
            return Cpus()
        return Cpus(cpus[0], frozenset(cpus[1:]) if name == "split" else None)

    def others_label(self) -> str:
        """What the "others" row measures: whatever else kept the master's CPU busy (other
        jobs on a shared machine; the clients too unless split)."""
        if self.server is None:
            return "other processes' CPU, all CPUs (CPUs)"
        if self.clients:
            return f"CPU {self.server} busy besides the master (CPUs)"
        return f"CPU {self.server} busy besides the master (clients too) (CPUs)"

    def describe(self) -> str:
        everywhere = f"any of CPUs {sorted(os.sched_getaffinity(0))}"
        if self.server is None:
            return f"unpinned: master, clients and bare servers on {everywhere}"
        clients = f"CPU {sorted(self.clients)}" if self.clients else everywhere
        return (
            f"pinned: the master (and each bare server) on CPU {self.server}, clients on {clients}"
        )


def on_cpus(cpus: frozenset[int] | None, target: Callable[..., None], *args: Any) -> None:
    """Run ``target(*args)`` in this (child) process, confined to ``cpus`` (None: anywhere)."""
    if cpus:
        os.sched_setaffinity(0, cpus)
    target(*args)
