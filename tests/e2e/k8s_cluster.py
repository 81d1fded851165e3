"""An emulated cluster for whole-job tests on the Kubernetes path: the API emulator, the
process kubelet on three nodes (and its volume provisioner), and the kopf operator as the
default install runs it (implicit masters in ``flexjob:latest``, which the kubelet runs from
this checkout; each keeps its state on a claim of its own). Everything runs on the test's
event loop.
"""

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import json
import os
import subprocess
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import kmock
import yaml
from kubernetes.client import CoreV1Api, CustomObjectsApi

from flexjob.api.names import LABEL_JOB_NAME
from flexjob.core.operator.master_state import MasterStateStorage
from tests.operator.kopf_fixtures import STARTUP_TIMEOUT, OperatorHarness, running_operator
from tests.support.k8s_emulator import K8sEmulator, wait_for
from tests.support.k8s_fixtures import (
    ELASTICJOBS,
    REPO,
    SCALEPLANS,
    declare_foreign_kinds,
    image_env,
    in_thread,
)
from tests.support.k8s_kubelet import ProcessKubelet
from tests.support.local_jobs import run_flexjob

IMAGE = "flexjob:latest"
SPEC = REPO / "examples" / "specs" / "digits-elastic.yaml"


@dataclasses.dataclass
class Cluster:
    emulator: K8sEmulator
    kubelet: ProcessKubelet
    operator: OperatorHarness
    operator_options: dict[str, Any]
    _operator_thread: "OperatorThread"

    async def stop_operator(self) -> None:
        """The operator vanishes as a killed operator pod would: its task is cancelled; the
        pods, the masters and the API state stay as they are."""
        await self._operator_thread.stop()

    async def start_operator(self) -> None:
        """A fresh operator instance (new queue, new webhook port) against the same API."""
        self._operator_thread = OperatorThread(self.emulator, self.operator_options)
        self.operator = await self._operator_thread.start()

    def master_state(self, job: str) -> dict[str, Any]:
        """The job master's last snapshot (``master_state.json`` on its state volume)."""
        [path] = self.kubelet.volume_dir.glob(f"pvc-*/default/{job}/master-*/master_state.json")
        state: dict[str, Any] = json.loads(path.read_text())
        return state

    def claim(self, name: str, namespace: str = "default") -> dict[str, Any]:
        """The PersistentVolumeClaim ``name`` (KeyError-like store error when missing)."""
        return self.emulator.store.get(
            self.emulator.kind("", "v1", "persistentvolumeclaims"), namespace, name
        )

    @property
    def core(self) -> CoreV1Api:
        return CoreV1Api(self.operator.client)

    async def apply_job(self, body: dict[str, Any]) -> None:
        api = CustomObjectsApi(self.operator.client)
        ns = body["metadata"].get("namespace", "default")
        await in_thread(
            api.create_namespaced_custom_object, "flexjob.dev", "v1alpha1", ns, "elasticjobs", body
        )

    def job(self, name: str, namespace: str = "default") -> dict[str, Any]:
        return self.emulator.store.get(ELASTICJOBS, namespace, name)

    def phase(self, name: str) -> str:
        try:
            return str((self.job(name).get("status") or {}).get("phase") or "")
        except Exception:
            return ""

    async def wait_phase(self, name: str, phases: tuple[str, ...], timeout: float) -> str:
        phase: str = await wait_for(
            lambda: self.phase(name) in phases and self.phase(name), timeout, 0.2
        )
        return phase

    def pods(self, job: str) -> list[dict[str, Any]]:
        pods = self.emulator.store.select(
            self.emulator.kind("", "v1", "pods"), "default", f"{LABEL_JOB_NAME}={job}"
        )
        return list(pods)

    async def wait_log(self, pod: str, text: str, timeout: float) -> None:
        """Until ``text`` appears in the pod's output."""
        await wait_for(lambda: text in self.log(pod), timeout, 0.2)

    def kill(self, pod: str) -> None:
        """SIGKILL every process of the pod's container (it crashes, the kubelet reports it)."""
        self.kubelet.containers["default", pod].kill_all()

    def incarnations(self, pod: str) -> int:
        """How many times the kubelet started the pod (one log file per pod uid)."""
        return len(list(self.kubelet.log_dir.glob(f"default_{pod}_*.log")))

    def log(self, pod: str) -> str:
        """The pod's output, every incarnation (the kubelet's log files), oldest first."""
        files = sorted(self.kubelet.log_dir.glob(f"default_{pod}_*.log"), key=os.path.getmtime)
        return "".join(f.read_text(errors="replace") for f in files)


def digits_job(epochs: int = 3, step_delay: float = 0.0, workers: int = 2) -> dict[str, Any]:
    body: dict[str, Any] = yaml.safe_load(SPEC.read_text())
    worker = body["spec"]["replicaSpecs"]["worker"]
    worker["replicas"] = workers
    main = worker["template"]["spec"]["containers"][0]
    main["args"] = ["examples/digits_ddp.py", "--epochs", str(epochs)]
    if step_delay:
        main["args"] += ["--step-delay", str(step_delay)]
    return body


#: The chaos suite's digits script: it logs every sample it trains (``check_samples``).
CHAOS_SCRIPT = "tests/chaos/chaos_train.py"


def sample_logging_job(
    log_dir: Path,
    epochs: int,
    step_delay: float = 0.02,
    workers: int = 2,
    script: str = CHAOS_SCRIPT,
    env: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The digits job running ``script`` (the chaos suite's trainer, or a wrapper of it) so
    that every sample each rank trains is logged under ``log_dir``."""
    body = digits_job(workers=workers)
    main = body["spec"]["replicaSpecs"]["worker"]["template"]["spec"]["containers"][0]
    main["args"] = [script, "--epochs", str(epochs), "--step-delay", str(step_delay)]
    values = {"CHAOS_LOG_DIR": str(log_dir), **(env or {})}
    main["env"] = [{"name": k, "value": v} for k, v in values.items()]
    return body


#: A claim an admin made for every implicit master of the namespace
#: (``flexjob operator --job-master-state-claim``; ``cluster(shared_claim=True)``).
SHARED_CLAIM = "flexjob-masters"


@contextlib.asynccontextmanager
async def cluster(
    root: Path, shared_claim: bool = False, **operator_options: Any
) -> AsyncIterator[Cluster]:
    """The cluster; the kubelet's logs under ``root/kubelet``, its volumes under
    ``root/kubelet/volumes``. ``shared_claim``: the admin made ``SHARED_CLAIM`` (ReadWriteMany)
    and the operator runs with ``--job-master-state-claim`` naming it (the job's PS replicas
    then checkpoint on it too); else each master gets a claim of its own."""
    log_dir = root / "kubelet"
    async with K8sEmulator() as emulator, kmock.Server(emulator):
        emulator.declare(ELASTICJOBS)
        emulator.declare(SCALEPLANS)
        declare_foreign_kinds(emulator)
        kubelet = ProcessKubelet(emulator, image_env=image_env(), workdir=REPO, log_dir=log_dir)
        options: dict[str, Any] = {"job_master_image": IMAGE, **operator_options}
        if shared_claim:
            options.setdefault("job_master_state", MasterStateStorage(claim=SHARED_CLAIM))
            emulator.store.create(
                emulator.kind("", "v1", "persistentvolumeclaims"), "default", shared_claim_body()
            )
        async with kubelet:
            thread = OperatorThread(emulator, options)
            c = Cluster(emulator, kubelet, await thread.start(), options, thread)
            try:
                yield c
            finally:
                await c.stop_operator()


def shared_claim_body() -> dict[str, Any]:
    """``SHARED_CLAIM`` as an admin writes it."""
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": SHARED_CLAIM, "namespace": "default"},
        "spec": {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "1Gi"}}},
    }


class OperatorThread:
    """The kopf operator on its own thread and event loop, as if in its own pod: stopping kopf
    cancels every task its loop started after it, which must not be the kubelet's or the
    emulator's."""

    def __init__(self, emulator: K8sEmulator, options: dict[str, Any]) -> None:
        self.emulator, self.options = emulator, options
        self._loop = asyncio.new_event_loop()
        self._stop = asyncio.Event()
        self._thread: threading.Thread | None = None

    async def start(self) -> OperatorHarness:
        started: concurrent.futures.Future[OperatorHarness] = concurrent.futures.Future()
        self._thread = threading.Thread(
            target=self._loop.run_until_complete, args=(self._main(started),), daemon=True
        )
        self._thread.start()
        return await asyncio.wait_for(asyncio.wrap_future(started), STARTUP_TIMEOUT + 15)

    async def _main(self, started: "concurrent.futures.Future[OperatorHarness]") -> None:
        try:
            async with running_operator(self.emulator, **self.options) as harness:
                started.set_result(harness)
                await self._stop.wait()
        except BaseException as exc:
            if not started.done():
                started.set_exception(exc)
            raise

    async def stop(self) -> None:
        """Cancel the operator's task (``running_operator``'s exit) and end its thread."""
        if self._thread is None or not self._thread.is_alive():
            return
        self._loop.call_soon_threadsafe(self._stop.set)
        await in_thread(self._thread.join, 30)
        assert not self._thread.is_alive(), "the operator did not stop within 30 s"
        self._loop.close()


def flexjob_cli(
    kubeconfig: Path, *args: str, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """``flexjob ARGS`` as a user runs it against the cluster (its kubeconfig, the kubernetes
    platform)."""
    env = {**os.environ, "KUBECONFIG": str(kubeconfig), "FLEXJOB_PLATFORM": "kubernetes"}
    env.pop("KUBERNETES_SERVICE_HOST", None)
    return run_flexjob(env, *args, timeout=timeout, cwd=REPO)
