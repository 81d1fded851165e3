"""The Platform contract, run against the Kubernetes platform on the API emulator.

Nothing runs pods here: ``finish_replica`` plays the kubelet and writes the pod's final phase
and its container's exit code into the pod status.
"""

from collections.abc import Iterator

import kubernetes.client
import pytest
from kubernetes.client import CoreV1Api

from flexjob.platform.contract import Platform, Replica
from flexjob.platform.kubernetes import KubernetesPlatform
from tests.platform.contract import *  # noqa: F403
from tests.support.k8s_fixtures import EmulatorThread
from tests.support.pod_status import MERGE_PATCH, pod_status


@pytest.fixture
def api_client() -> Iterator[kubernetes.client.ApiClient]:
    with EmulatorThread() as emulator:
        yield kubernetes.client.ApiClient(kubernetes.client.Configuration(host=emulator.base_url))


@pytest.fixture
def platform(api_client: kubernetes.client.ApiClient) -> KubernetesPlatform:
    return KubernetesPlatform(api_client)


@pytest.fixture
def contract_env() -> dict[str, str]:
    return {}


@pytest.fixture
def finish_replica(api_client: kubernetes.client.ApiClient):  # type: ignore[no-untyped-def]
    def finish(platform: Platform, replica: Replica, code: int) -> None:
        status = pod_status("Succeeded" if code == 0 else "Failed", code)
        CoreV1Api(api_client).patch_namespaced_pod_status(
            replica.name, replica.namespace, {"status": status}, _content_type=MERGE_PATCH
        )

    return finish
