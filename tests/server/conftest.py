from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from flexjob.server.app import create_app

from .memory_platform import MemoryPlatform


@pytest.fixture
def memory() -> MemoryPlatform:
    return MemoryPlatform()


@pytest.fixture
def client(memory: MemoryPlatform) -> Iterator[TestClient]:
    # nothing creates replicas here: DI's POSTs answer with names at once
    with TestClient(create_app(memory, di_address_wait=0)) as c:
        yield c
