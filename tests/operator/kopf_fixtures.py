"""A running flexjob kopf operator against the Kubernetes emulator, for the operator tests.

``OperatorHarness`` bundles the emulator, the platform the operator writes through, the work
queue and the webhook port; the fixture stops the operator by cancelling its task.
"""

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import kubernetes.client
import pytest_asyncio
from kubernetes.client import AdmissionregistrationV1Api, CoreV1Api, CustomObjectsApi

from flexjob.operator.kubernetes.runner import (
    OperatorConfig,
    WebhookConfig,
    make_queue,
    run_operator,
)
from flexjob.operator.manifests import (
    NAME,
    InstallConfig,
    webhook_configurations,
    webhook_service,
)
from flexjob.operator.work_queue import JobQueue
from flexjob.platform.kubernetes import KubernetesPlatform
from flexjob.platform.ports import free_port
from tests.support.k8s_emulator import K8sEmulator
from tests.support.k8s_fixtures import client_configuration, in_thread

STARTUP_TIMEOUT = 15.0


@dataclasses.dataclass
class OperatorHarness:
    emulator: K8sEmulator
    platform: KubernetesPlatform
    queue: JobQueue
    webhook_url: str
    client: kubernetes.client.ApiClient

    async def custom(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """Call a CustomObjectsApi method for flexjob.dev/v1alpha1 off the event loop."""
        api = CustomObjectsApi(self.client)
        return await in_thread(getattr(api, method), "flexjob.dev", "v1alpha1", *args, **kwargs)

    async def core(self, method: str, *args: Any, **kwargs: Any) -> Any:
        return await in_thread(getattr(CoreV1Api(self.client), method), *args, **kwargs)

    async def serve_webhooks_for(self, namespace: str, service: str) -> None:
        """Make ``service``'s Endpoints this operator's webhook server (it runs outside the
        emulated cluster), so that the API's admission calls reach it."""
        port = int(self.webhook_url.rsplit(":", 1)[1])
        endpoints = {
            "apiVersion": "v1",
            "kind": "Endpoints",
            "metadata": {"name": service, "namespace": namespace},
            "subsets": [{"addresses": [{"ip": "127.0.0.1"}], "ports": [{"port": port}]}],
        }
        await self.core("create_namespaced_endpoints", namespace, endpoints)


def fast_options(server: str, webhook_port: int, **overrides: Any) -> OperatorConfig:
    """Settings tuned for tests: short watches, no event posting, standalone, no resync."""
    defaults: dict[str, Any] = dict(
        server=server,
        workers=2,
        resync_interval=None,
        post_events=False,
        watch_timeout=5,
        standalone=True,
        webhooks=WebhookConfig(addr="127.0.0.1", port=webhook_port),
    )
    return OperatorConfig(**{**defaults, **overrides})


@contextlib.asynccontextmanager
async def running_operator(
    emulator: K8sEmulator, **overrides: Any
) -> AsyncIterator[OperatorHarness]:
    platform = KubernetesPlatform.from_config(server=emulator.base_url)
    client = kubernetes.client.ApiClient(client_configuration(emulator))
    port = free_port()
    options = fast_options(emulator.base_url, port, **overrides)
    queue = make_queue(
        platform,
        options.workers,
        _now,
        options.parallel,
        job_master=options.job_master(),
        batch_period=options.pod_event_batch,
        connection=options.connection,
    )
    ready = asyncio.Event()
    task = asyncio.create_task(run_operator(platform, options, queue=queue, ready=ready))
    try:
        await asyncio.wait_for(ready.wait(), STARTUP_TIMEOUT)
        yield OperatorHarness(emulator, platform, queue, f"http://127.0.0.1:{port}", client)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, TimeoutError):
            await asyncio.wait_for(task, 10)


def _now() -> datetime:
    return datetime.now(UTC)


@pytest_asyncio.fixture()
async def operator(k8s_emulator: K8sEmulator) -> AsyncIterator[OperatorHarness]:
    async with running_operator(k8s_emulator) as harness:
        yield harness


#: The image an operator's implicit job masters run in, for ``operator_with_image``.
TEST_IMAGE = "flexjob:test"


@pytest_asyncio.fixture()
async def operator_with_image(k8s_emulator: K8sEmulator) -> AsyncIterator[OperatorHarness]:
    """An operator that runs flexjob's job masters (``FLEXJOB_IMAGE`` set), as
    ``flexjob manifests install`` deploys it."""
    async with running_operator(k8s_emulator, job_master_image=TEST_IMAGE) as harness:
        yield harness


async def install_webhooks(operator: OperatorHarness) -> OperatorHarness:
    """The generated webhook service and configurations, the service's endpoints being the
    operator's webhook server (it runs outside the emulated cluster)."""
    options = InstallConfig(cert_manager=False)
    client, ns = operator.client, options.namespace
    await in_thread(CoreV1Api(client).create_namespaced_service, ns, webhook_service(options))
    await operator.serve_webhooks_for(ns, NAME)
    mutating, validating = webhook_configurations(options)
    admission = AdmissionregistrationV1Api(client)
    await in_thread(admission.create_mutating_webhook_configuration, mutating)
    await in_thread(admission.create_validating_webhook_configuration, validating)
    return operator
