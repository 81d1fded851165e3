"""Ranks of a test's torch world as real processes: the store they meet at, and the spawned
processes with the queues they report on, each stopped after the test (``spawned``)."""

import contextlib
import multiprocessing as mp
from collections.abc import Callable, Iterator
from multiprocessing.process import BaseProcess
from multiprocessing.queues import Queue
from typing import Any

from torch.distributed import TCPStore  # type: ignore[attr-defined]


def local_store() -> tuple[TCPStore, str]:
    """A TCPStore on a free loopback port (keep it referenced while the ranks run) and its
    ``host:port``."""
    store = TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False)
    return store, f"127.0.0.1:{store.port}"


class Spawned:
    """Processes of the ``spawn`` start method (a fresh interpreter each, as torch wants)."""

    def __init__(self) -> None:
        self._ctx = mp.get_context("spawn")
        self.procs: list[BaseProcess] = []

    def queue(self) -> "Queue[str]":
        """A queue the processes report on."""
        return self._ctx.Queue()

    def process(self, target: Callable[..., None], *args: Any) -> BaseProcess:
        """A process running ``target(*args)``, not started yet."""
        proc = self._ctx.Process(target=target, args=args)
        self.procs.append(proc)
        return proc

    def stop(self) -> None:
        """Wait up to 10 s for each started process, then kill it."""
        for proc in self.procs:
            if proc.pid is not None:
                proc.join(10)
            if proc.is_alive():
                proc.kill()


@contextlib.contextmanager
def spawned() -> Iterator[Spawned]:
    """``Spawned`` for the ``with`` block, every process it started stopped after it."""
    procs = Spawned()
    try:
        yield procs
    finally:
        procs.stop()
