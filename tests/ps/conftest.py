from collections.abc import Iterator

import numpy as np
import pytest

from flexjob.core.ps.optim import OptimizerKind, OptimizerSpec
from flexjob.core.ps.store import ModelSpec
from flexjob.core.ps.table import TableSpec
from flexjob.ps.service import PsService
from flexjob.rpc.ps_client import PsClient
from flexjob.rpc.ps_server import serve_ps
from flexjob.rpc.server import RunningServer

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
