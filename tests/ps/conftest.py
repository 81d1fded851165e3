import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from flexjob.core.ps.optim import OptimizerKind, OptimizerSpec
from flexjob.core.ps.parameters import ModelSpec
from flexjob.core.ps.table import TableSpec
from flexjob.master.main import MasterHandle
from flexjob.ps.main import PsConfig, run_ps
from flexjob.ps.service import PsService
from flexjob.rpc.messages import KVClient
from flexjob.rpc.ps_client import PsClient
from flexjob.rpc.ps_registry import read_set
from flexjob.rpc.ps_server import serve_ps
from flexjob.rpc.server import RunningServer
from tests.support.polling import wait_until

MODEL = ModelSpec(
    OptimizerSpec(OptimizerKind.SGD, lr=0.5),
    (TableSpec("user", 4, num_rows=1000, init_scale=0.0), TableSpec("item", 2, init_scale=0.1)),
    {"w": np.ones((2, 3), dtype=np.float32)},
)


@pytest.fixture
def server() -> Iterator[RunningServer]:
    running = serve_ps(PsService(0, 1), "127.0.0.1", 0)
    yield running
    running.stop(grace=None)


@pytest.fixture
def client(server: RunningServer) -> Iterator[PsClient]:
    c = PsClient(server.address, retry_deadline=5.0)
    yield c
    c.close()


def set_version(kv: KVClient) -> int:
    current = read_set(kv.kv_get)
    return current.version if current is not None else 0


class Replicas:
    def __init__(self, master: str, kv: KVClient, directory: Path) -> None:
        self.master, self.directory = master, directory
        self.kv = kv
        self.stops: dict[int, threading.Event] = {}
        self.threads: dict[int, threading.Thread] = {}

    def start(self, index: int, num_ps: int, checkpoints: bool = True) -> None:
        config = PsConfig(
            index=index,
            num_ps=num_ps,
            master=self.master,
            checkpoint_dir=str(self.directory) if checkpoints else "",
            checkpoint_interval=3600.0,
        )
        stop = threading.Event()
        thread = threading.Thread(target=run_ps, args=(config, stop), daemon=True)
        thread.start()
        self.stops[index], self.threads[index] = stop, thread

    def first_set(self, num_ps: int, checkpoints: bool = True) -> None:
        """Start PS ``0 .. num_ps-1`` and wait for the master's first PS set."""
        for index in range(num_ps):
            self.start(index, num_ps, checkpoints)
        wait_until(lambda: set_version(self.kv) == 1, timeout=30, what="the first PS set")

    def stop(self, *indices: int) -> None:
        """Stop these replicas together: each leaves as a real one does (it waits up to
        ``LEAVE_WAIT_S`` for a set without it), so one after the other takes that many times
        longer."""
        for index in indices:
            self.stops[index].set()
        for index in indices:
            self.threads[index].join(timeout=60)
            assert not self.threads[index].is_alive()

    def stop_all(self) -> None:
        """Stop every replica still running, together."""
        self.stop(*(index for index, thread in self.threads.items() if thread.is_alive()))


@pytest.fixture
def replicas(master: MasterHandle, tmp_path: Path) -> Iterator[Replicas]:
    """``run_ps`` replicas of the test module's ``master``, stopped at the end."""
    r = Replicas(master.address, master.service, tmp_path / "ps")
    yield r
    r.stop_all()
