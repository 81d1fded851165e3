"""Pytest fixtures around the Kubernetes emulator: the running server and a client for it.

A ``conftest.py`` imports the fixtures it needs by name.
The official client is synchronous and the emulator runs on the test's event loop, so tests
call the client through ``asyncio.to_thread`` (see ``in_thread``).
"""

import asyncio
import os
import sys
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import kmock
import kubernetes.client
import pytest
import pytest_asyncio
import yaml

from flexjob.api.crd import job_crd, scale_plan_crd
from flexjob.api.foreign_kinds import FOREIGN_KINDS
from tests.support.k8s_emulator import K8sEmulator, kubeconfig
from tests.support.k8s_kubelet import ProcessKubelet
from tests.support.k8s_store import ResourceKind

T = TypeVar("T")


def _declared(crd: dict[str, Any]) -> ResourceKind:
    """The resource a flexjob CRD defines, as served once the CRD is installed."""
    spec, names = crd["spec"], crd["spec"]["names"]
    return ResourceKind(
        spec["group"],
        spec["versions"][0]["name"],
        names["plural"],
        names["kind"],
        status_subresource=True,
        short_names=tuple(names.get("shortNames") or ()),
        scale=tuple(sorted((spec["versions"][0]["subresources"].get("scale") or {}).items())),
    )


ELASTICJOBS = _declared(job_crd())
SCALEPLANS = _declared(scale_plan_crd())


def declare_foreign_kinds(emulator: K8sEmulator) -> None:
    """Serve every version of the foreign kinds' CRDs (``api.foreign_kinds``), as if
    ``flexjob manifests crds`` were applied."""
    for kind in FOREIGN_KINDS:
        for version in kind.versions:
            emulator.declare(
                ResourceKind(
                    kind.group,
                    version,
                    kind.plural,
                    kind.kind,
                    namespaced=kind.namespaced,
                    status_subresource=True,
                )
            )


#: cert-manager's kinds (the operator's webhook certificate), as if cert-manager were installed.
CERT_MANAGER = (
    ResourceKind("cert-manager.io", "v1", "issuers", "Issuer"),
    ResourceKind("cert-manager.io", "v1", "certificates", "Certificate"),
)


@pytest_asyncio.fixture()
async def k8s_emulator() -> AsyncIterator[K8sEmulator]:
    """A running emulator on 127.0.0.1 with the flexjob custom resources declared."""
    async with K8sEmulator() as emulator, kmock.Server(emulator):
        emulator.declare(ELASTICJOBS)
        emulator.declare(SCALEPLANS)
        yield emulator


#: The checkout, which plays the ``flexjob:latest`` image for the process kubelet.
REPO = Path(__file__).resolve().parents[2]


def image_env() -> dict[str, str]:
    """The environment of the ``flexjob:latest`` image, here: this interpreter's ``python``
    first on PATH, the checkout importable, one thread per process (the machine is shared)."""
    return {
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": str(REPO),
        "HOME": os.environ.get("HOME", "/tmp"),
        "LANG": "C.UTF-8",
        "OMP_NUM_THREADS": "1",
    }


@pytest_asyncio.fixture()
async def kubelet(
    k8s_emulator: K8sEmulator, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[ProcessKubelet]:
    """Three process-backed nodes on the emulator (pods run as processes of this checkout)."""
    log_dir = tmp_path_factory.mktemp("kubelet")
    async with ProcessKubelet(
        k8s_emulator, image_env=image_env(), workdir=REPO, log_dir=log_dir
    ) as running:
        yield running


def client_configuration(emulator: K8sEmulator) -> kubernetes.client.Configuration:
    return kubernetes.client.Configuration(host=emulator.base_url)


@pytest.fixture()
def k8s_client(k8s_emulator: K8sEmulator) -> kubernetes.client.ApiClient:
    """The official (synchronous) client pointed at the emulator."""
    return kubernetes.client.ApiClient(client_configuration(k8s_emulator))


def use_kubeconfig(path: Path, server: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Write a kubeconfig for ``server`` (no credentials) at ``path`` and make it the one
    the Kubernetes client loads by default (``$KUBECONFIG``, not in-cluster)."""
    path.write_text(yaml.safe_dump(kubeconfig(server)))
    monkeypatch.setenv("KUBECONFIG", str(path))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    return path


async def in_thread(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run a blocking client call off the event loop that serves the emulator."""
    return await asyncio.to_thread(fn, *args, **kwargs)


class EmulatorThread:
    """The emulator on its own event loop in a daemon thread, for synchronous callers.

    ``with EmulatorThread() as emulator:`` serves until the block ends; ``base_url`` is where.
    """

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.emulator: K8sEmulator | None = None
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(
            target=self.loop.run_until_complete, args=(self._serve(),), daemon=True
        )

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        async with K8sEmulator() as emulator, kmock.Server(emulator):
            emulator.declare(ELASTICJOBS)
            emulator.declare(SCALEPLANS)
            self.emulator = emulator
            self._ready.set()
            await self._stop.wait()

    def __enter__(self) -> K8sEmulator:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the Kubernetes emulator did not start")
        assert self.emulator is not None
        return self.emulator

    def __exit__(self, *exc_info: object) -> None:
        assert self._stop is not None
        self.loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)
        self.loop.close()

    def run(self, coro: Any) -> Any:
        """Run a coroutine on the emulator's loop (e.g. to touch the store) and wait for it."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(10)


@pytest.fixture()
def k8s_emulator_thread() -> Iterator[EmulatorThread]:
    """An emulator serving from a background thread, for synchronous tests."""
    thread = EmulatorThread()
    with thread:
        yield thread


@pytest.fixture
def platform_and_core() -> Iterator[tuple[Any, kubernetes.client.CoreV1Api]]:
    """A ``KubernetesPlatform`` on an emulator of its own thread, and a core client of it."""
    from flexjob.platform.kubernetes import KubernetesPlatform

    with EmulatorThread() as emulator:
        platform = KubernetesPlatform.from_config(server=emulator.base_url)
        api = kubernetes.client.ApiClient(client_configuration(emulator))
        yield platform, kubernetes.client.CoreV1Api(api)
        platform.close()
