"""Pytest fixtures around the Kubernetes emulator: the running server and a client for it.

A ``conftest.py`` imports the fixtures it needs by name.
The official client is synchronous and the emulator runs on the test's event loop, so tests
call the client through ``asyncio.to_thread`` (see ``in_thread``).
"""

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

import kmock
import kubernetes.client
import pytest
import pytest_asyncio

from tests.support.k8s_emulator import K8sEmulator
from tests.support.k8s_store import ResourceKind

T = TypeVar("T")

ELASTICJOBS = ResourceKind(
    "flexjob.dev", "v1alpha1", "elasticjobs", "ElasticJob", status_subresource=True
)
SCALEPLANS = ResourceKind(
    "flexjob.dev", "v1alpha1", "scaleplans", "ScalePlan", status_subresource=True
)


@pytest_asyncio.fixture()
async def k8s_emulator() -> AsyncIterator[K8sEmulator]:
    """A running emulator on 127.0.0.1 with the flexjob custom resources declared."""
    async with K8sEmulator() as emulator, kmock.Server(emulator):
        emulator.declare(ELASTICJOBS)
        emulator.declare(SCALEPLANS)
        yield emulator


def client_configuration(emulator: K8sEmulator) -> kubernetes.client.Configuration:
    return kubernetes.client.Configuration(host=emulator.base_url)


@pytest.fixture()
def k8s_client(k8s_emulator: K8sEmulator) -> kubernetes.client.ApiClient:
    """The official (synchronous) client pointed at the emulator."""
    return kubernetes.client.ApiClient(client_configuration(k8s_emulator))


async def in_thread(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run a blocking client call off the event loop that serves the emulator."""
    return await asyncio.to_thread(fn, *args, **kwargs)
