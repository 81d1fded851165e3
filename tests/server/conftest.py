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
    with TestClient(create_app(memory)) as c:
        yield c
