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
    # nothing creates replicas here: DI's POSTs answer with names at once; the tests play the
    # operator by writing to the platform, so every read is the platform's (no read cache:
    # that is tests/server/test_read_cache*.py's)
    with TestClient(create_app(memory, di_address_wait=0, cache_ttl=0)) as c:
        yield c
