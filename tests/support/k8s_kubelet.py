"""A process-backed kubelet (and scheduler) for the Kubernetes emulator: pods run for real.

``ProcessKubelet`` registers its nodes, binds pending pods to a ready node (honouring
``nodeSelector``), and runs the main container of every pod bound to its nodes as a local
process: the container's command and args with its environment (``k8s_pod_env``: the
downward API, Service DNS names made local, one loopback address per pod), a memory cgroup
with the container's limit (``k8s_cgroup``), and the image's environment and working
directory given to the kubelet (the image is this checkout). It reports what a kubelet
reports through the API's status subresource: ``phase``, ``podIP``, ``containerStatuses``
(running, then terminated with ``exitCode`` and ``reason``: ``Completed``, ``Error``,
``OOMKilled``), and serves the output as the pod's log. A delete of a running pod is graceful:
the API marks it terminating, the kubelet sends SIGTERM, SIGKILL after the grace period, then
removes it. ``lose_node`` ends a node like a dead machine.

It is the cluster's volume provisioner too (``k8s_volumes``): a PersistentVolumeClaim is bound
at once to a directory under ``volume_dir`` (``claim_directory``); a pod whose claim is missing
or unbound stays Pending, and a pod that mounts a claim sees its volume's directory
(``k8s_pod_env``).

Not a kubelet for anything else: one container per pod (init and sidecar containers are not
run), volumes only as directories of this machine (``k8s_pod_env``), no probes, no in-place restarts
(every pod is ``restartPolicy: Never``; flexjob's operator relaunches), no CPU limits or
images. Test support, on the emulator's event loop.
"""

import asyncio
import base64
import contextlib
import json
import logging
import random
import signal
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import aiohttp
import yaml

from tests.support import k8s_pod_env as pod_env
from tests.support import k8s_volumes as volumes
from tests.support.k8s_cgroup import CgroupRoot
from tests.support.k8s_emulator import K8sEmulator, kubeconfig
from tests.support.k8s_pod_status import (
    HOSTNAME_LABEL,
    Container,
    container_status,
    node_body,
    now,
    terminated,
    terminated_status,
)
from tests.support.k8s_store import Body, GracePolicy, ResourceKind

log = logging.getLogger(__name__)
MERGE = {"Content-Type": "application/merge-patch+json"}
DEFAULT_GRACE = 30.0
TERMINAL = ("Succeeded", "Failed")
#: The container's first process joins its cgroup, then becomes the command.
_JOIN_CGROUP = 'echo $$ > "$0" && exec "$@"'


class ProcessKubelet:
    """Nodes ``nodes`` of the emulator, whose pods run as processes of this machine."""

    def __init__(
        self,
        emulator: K8sEmulator,
        *,
        nodes: Sequence[str] = ("node-0", "node-1", "node-2"),
        image_env: Mapping[str, str],
        workdir: Path,
        log_dir: Path,
        volume_dir: Path | None = None,
    ) -> None:
        self.emulator = emulator
        self.nodes = list(nodes)
        self.image_env = dict(image_env)
        self.workdir = workdir
        self.log_dir = log_dir
        self.volume_dir = volume_dir or log_dir / "volumes"
        self.lost: set[str] = set()
        self.containers: dict[tuple[str, str], Container] = {}
        self._ips: dict[tuple[str, str], str] = {}
        self._net = f"127.{random.randint(16, 250)}.{random.randint(0, 255)}"
        self._cgroups = CgroupRoot()
        self._session: aiohttp.ClientSession | None = None
        self._task: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self.kubeconfig = log_dir / "kubeconfig"
        self._other_grace: GracePolicy | None = None  # another kubelet's, when several

    #: The address of this kubelet's nodes (their ``InternalIP``; the pods' ``hostIP``).
    host_ip = "127.0.0.1"

    def command(self, argv: Sequence[str]) -> list[str]:
        """How a container's argv runs on this kubelet's node (here: as it is)."""
        return list(argv)

    def address_of(self, pod: Body) -> str:
        """The address of a pod (one another kubelet may run): its loopback address here."""
        return self.pod_ip(pod["metadata"]["namespace"], pod["metadata"]["name"])

    # --- lifecycle -----------------------------------------------------------------------
    async def __aenter__(self) -> "ProcessKubelet":
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.kubeconfig.write_text(yaml.safe_dump(kubeconfig(self.emulator.base_url)))
        self._session = aiohttp.ClientSession(self.emulator.base_url)
        self._other_grace = self.emulator.store.grace_policy
        self.emulator.store.grace_policy = self._grace
        for node in self.nodes:
            await self._request("POST", "/api/v1/nodes", node_body(node, self.host_ip))
        self._task = asyncio.create_task(self._run())
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        for container in list(self.containers.values()):
            container.lost = True
            container.kill_all()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(15):
                for container in list(self.containers.values()):
                    await container.done.wait()
        for task in list(self._tasks):
            task.cancel()
        self._cgroups.remove()
        self.emulator.store.grace_policy = self._other_grace
        if self._session is not None:
            await self._session.close()

    @property
    def memory_limits(self) -> bool:
        """Whether container memory limits are enforced (memory cgroups can be made here)."""
        return self._cgroups.available()

    def pod_ip(self, namespace: str, name: str) -> str:
        """The pod's loopback address, the same for every incarnation of the name."""
        key = (namespace, name)
        if key not in self._ips:
            index = len(self._ips) + 2
            self._ips[key] = f"{self._net}.{index}" if index < 255 else f"{self._net}.254"
        return self._ips[key]

    def pid(self, namespace: str, name: str) -> int | None:
        """The pid of a running pod's main process (for tests that kill it)."""
        container = self.containers.get((namespace, name))
        return None if container is None else container.process.pid

    async def lose_node(self, node: str) -> None:
        """The node dies: its processes are SIGKILLed, it turns NotReady, its pods Failed
        (``reason: NodeLost``); nothing is scheduled there any more."""
        self.lost.add(node)
        ready = {"type": "Ready", "status": "False", "reason": "NodeStatusUnknown"}
        await self._request(
            "PATCH", f"/api/v1/nodes/{node}/status", {"status": {"conditions": [ready]}}, MERGE
        )
        doomed = [c for c in self.containers.values() if c.node == node]
        for container in doomed:
            container.lost = True
            container.kill_all()
        for container in doomed:
            await container.done.wait()
            status = terminated_status(container, 137, "NodeLost")
            status["reason"] = "NodeLost"
            status["message"] = f"node {node} which was running the pod is unresponsive"
            await self._patch_status(container.namespace, container.pod, status)

    # --- the sync loop -------------------------------------------------------------------
    async def _run(self) -> None:
        revision = -1
        while True:
            seen = self.emulator.store.revision
            if seen != revision:
                try:
                    await self._sync()
                except Exception:  # a test kubelet must not die silently
                    log.exception("kubelet sync failed")
                revision = seen
            await self.emulator.changed(seen, 0.5)

    async def _sync(self) -> None:
        await self._bind_claims()
        pods = list(self.emulator.store.select(self._kind("pods"), None))
        present = set()
        for pod in pods:
            meta, spec = pod["metadata"], pod.get("spec") or {}
            key = (meta["namespace"], meta["name"])
            present.add(key)
            node = spec.get("nodeName")
            container = self.containers.get(key)
            if container is not None and container.uid != meta["uid"]:
                container.kill_all()  # an older incarnation that was force-deleted
                container = None
            if node is None:
                if not meta.get("deletionTimestamp"):
                    await self._schedule(pod)
            elif node not in self.nodes:
                continue
            elif meta.get("deletionTimestamp"):
                if container is None:
                    await self._remove(key)
                elif not container.terminating:
                    self._spawn(self._terminate(container, _grace_of(pod)))
            elif (
                container is None
                and node not in self.lost
                and (pod.get("status") or {}).get("phase") not in TERMINAL
            ):
                await self._start(pod)
        for key, container in list(self.containers.items()):
            if key not in present:
                container.kill_all()

    def _spawn(self, coro: Any) -> None:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _kind(self, plural: str) -> ResourceKind:
        return self.emulator.kind("", "v1", plural)

    def _grace(self, kind: ResourceKind, body: Body) -> float | None:
        """The API's grace policy: running pods on our live nodes terminate gracefully."""
        node = (body.get("spec") or {}).get("nodeName")
        if kind.plural == "pods" and node not in self.nodes and self._other_grace is not None:
            return self._other_grace(kind, body)
        if kind.plural != "pods" or node not in self.nodes or node in self.lost:
            return None
        if (body.get("status") or {}).get("phase") in TERMINAL:
            return None
        return _grace_of(body)

    # --- volumes (``k8s_volumes``) ----------------------------------------------------------
    async def _bind_claims(self) -> None:
        """Bind every unbound claim to a new volume (a directory under ``volume_dir``)."""
        for claim in list(self.emulator.store.select(self._kind("persistentvolumeclaims"), None)):
            status = volumes.bound_status(claim)
            if status is None:
                continue
            volumes.volume_directory(self.volume_dir, claim).mkdir(parents=True, exist_ok=True)
            meta = claim["metadata"]
            path = f"/api/v1/namespaces/{meta['namespace']}/persistentvolumeclaims/{meta['name']}"
            await self._request(
                "PATCH", f"{path}/status", {"status": status}, MERGE, allow_missing=True
            )

    def claim_directory(self, namespace: str, claim: str) -> str | None:
        """The directory of the volume bound to ``claim``; None while it is missing or
        unbound."""
        try:
            body = self.emulator.store.get(self._kind("persistentvolumeclaims"), namespace, claim)
        except Exception:
            body = None
        return volumes.bound_directory(self.volume_dir, body)

    # --- scheduling ----------------------------------------------------------------------
    async def _schedule(self, pod: Body) -> None:
        selector = (pod.get("spec") or {}).get("nodeSelector") or {}
        fits = [
            n
            for n in self.nodes
            if n not in self.lost
            and all({HOSTNAME_LABEL: n}.get(k) == v for k, v in selector.items())
        ]
        meta = pod["metadata"]
        path = f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}"
        unbound = volumes.unbound_condition(
            pod, lambda claim: self.claim_directory(meta["namespace"], claim)
        )
        if unbound is not None:
            if (pod.get("status") or {}).get("conditions") != [unbound]:
                status = {"phase": "Pending", "conditions": [unbound]}
                await self._request("PATCH", f"{path}/status", {"status": status}, MERGE)
            return
        if not fits:
            condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
            if (pod.get("status") or {}).get("conditions") != [condition]:
                status = {"phase": "Pending", "conditions": [condition]}
                await self._request("PATCH", f"{path}/status", {"status": status}, MERGE)
            return
        load = {n: 0 for n in fits}
        for container in self.containers.values():
            if container.node in load:
                load[container.node] += 1
        node = min(fits, key=lambda n: (load[n], n))
        await self._request("PATCH", path, {"spec": {"nodeName": node}}, MERGE)

    # --- running containers --------------------------------------------------------------
    def _service_address(self, namespace: str, service: str) -> str | None:
        try:
            body = self.emulator.store.get(self._kind("services"), namespace, service)
        except Exception:
            return None
        selector = (body.get("spec") or {}).get("selector") or {}
        if not selector:
            return None
        text = ",".join(f"{k}={v}" for k, v in selector.items())
        pods = self.emulator.store.select(self._kind("pods"), namespace, text)
        live = [p for p in pods if not p["metadata"].get("deletionTimestamp")] or pods
        return self.address_of(live[0]) if live else None

    def _secret_value(self, namespace: str, name: str, key: str) -> str | None:
        """A Secret's value as the kubelet would inject it (``data`` is base64)."""
        try:
            body = self.emulator.store.get(self._kind("secrets"), namespace, name)
        except Exception:
            return None
        if key in (body.get("stringData") or {}):
            return str(body["stringData"][key])
        data = (body.get("data") or {}).get(key)
        return None if data is None else base64.b64decode(data).decode()

    async def _start(self, pod: Body) -> None:
        meta = pod["metadata"]
        namespace, name, node = meta["namespace"], meta["name"], pod["spec"]["nodeName"]
        ip = self.pod_ip(namespace, name)
        started = now()
        try:
            main = pod_env.main_container(pod)
            mounted = pod_env.mounts(pod, main, self.claim_directory)
            declared = pod_env.container_env(
                pod, main, ip, self._service_address, self._secret_value
            )
            env = {
                **self.image_env,
                "HOSTNAME": name,
                "KUBECONFIG": str(self.kubeconfig),
                **{k: pod_env.mounted_paths(v, mounted) for k, v in declared.items()},
            }
            # (inside the node's own namespaces, if any, once in the cgroup: `ip netns exec`
            # mounts a sysfs of its own, without the cgroup file system)
            argv = self.command(
                [
                    pod_env.mounted_paths(a, mounted)
                    for a in pod_env.container_argv(pod, main, ip, self._service_address)
                ]
            )
            for directory in mounted.values():
                Path(directory).mkdir(parents=True, exist_ok=True)
            cgroup = self._cgroups.container(meta["uid"], pod_env.memory_limit_bytes(main))
            if cgroup is not None:
                argv = ["/bin/sh", "-c", _JOIN_CGROUP, str(cgroup.procs_file), *argv]
            process = await asyncio.create_subprocess_exec(
                *argv,
                env=env,
                cwd=self.workdir,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                start_new_session=True,
            )
        except (OSError, ValueError) as exc:
            status = {
                "phase": "Failed",
                "podIP": ip,
                "hostIP": self.host_ip,
                "containerStatuses": [
                    container_status(
                        "main", "", {"terminated": terminated(128, "StartError", started, "")}
                    )
                ],
                "message": str(exc),
            }
            await self._patch_status(namespace, name, status)
            return
        container = Container(
            namespace, name, meta["uid"], node, main.get("name", "main"), main.get("image", ""),
            process, cgroup, started,
        )  # fmt: skip
        self.containers[container.key] = container
        self._spawn(self._supervise(container))
        running = {"running": {"startedAt": started}}
        status = {
            "phase": "Running",
            "podIP": ip,
            "podIPs": [{"ip": ip}],
            "hostIP": self.host_ip,
            "startTime": started,
            "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [container_status(container.name, container.image, running)],
        }
        await self._patch_status(namespace, name, status)

    async def _supervise(self, container: Container) -> None:
        """Collect the output until the process ends, then report how it ended."""
        path = self.log_dir / f"{container.namespace}_{container.pod}_{container.uid[:8]}.log"
        logs = self.emulator.store.logs
        logs[container.key] = ""
        assert container.process.stdout is not None
        with path.open("ab") as out:
            while chunk := await container.process.stdout.read(65536):
                out.write(chunk)
                out.flush()
                if self.containers.get(container.key) is container:
                    logs[container.key] = logs.get(container.key, "") + chunk.decode(
                        errors="replace"
                    )
        code = await container.process.wait()
        code = 128 - code if code < 0 else code
        oom = container.cgroup is not None and container.cgroup.oom_kills() > 0
        if container.cgroup is not None:
            container.cgroup.remove()
        try:
            if not container.lost:
                reason = "OOMKilled" if oom else "Completed" if code == 0 else "Error"
                status = terminated_status(container, code, reason)
                await self._patch_status(container.namespace, container.pod, status)
            if container.terminating:
                await self._remove(container.key)
        finally:
            if self.containers.get(container.key) is container:
                del self.containers[container.key]
            container.done.set()

    async def _terminate(self, container: Container, grace: float) -> None:
        """A graceful stop: SIGTERM to the main process, SIGKILL to all after ``grace``."""
        container.terminating = True
        with contextlib.suppress(ProcessLookupError):
            container.process.send_signal(signal.SIGTERM)
        try:
            async with asyncio.timeout(grace):
                await container.done.wait()
        except TimeoutError:
            container.kill_all()
            await container.done.wait()

    async def _remove(self, key: tuple[str, str]) -> None:
        path = f"/api/v1/namespaces/{key[0]}/pods/{key[1]}?gracePeriodSeconds=0"
        await self._request("DELETE", path, None, allow_missing=True)

    # --- the API -------------------------------------------------------------------------
    async def _patch_status(self, namespace: str, name: str, status: Body) -> None:
        path = f"/api/v1/namespaces/{namespace}/pods/{name}/status"
        await self._request("PATCH", path, {"status": status}, MERGE, allow_missing=True)

    async def _request(
        self,
        method: str,
        path: str,
        body: Body | None,
        headers: Mapping[str, str] | None = None,
        allow_missing: bool = False,
    ) -> None:
        assert self._session is not None
        data = None if body is None else json.dumps(body)
        headers = {"Content-Type": "application/json", **(headers or {})}
        async with self._session.request(method, path, data=data, headers=headers) as response:
            if response.status == 404 and allow_missing:
                return
            if response.status >= 400:
                raise RuntimeError(f"{method} {path}: {response.status} {await response.text()}")


def _grace_of(pod: Body) -> float:
    meta, spec = pod["metadata"], pod.get("spec") or {}
    value = meta.get("deletionGracePeriodSeconds", spec.get("terminationGracePeriodSeconds"))
    return DEFAULT_GRACE if value is None else float(value)


def pods_on(emulator: K8sEmulator, node: str) -> list[Body]:
    """Pods bound to ``node`` (for assertions)."""
    pods = emulator.store.select(emulator.kind("", "v1", "pods"), None)
    return [p for p in pods if (p.get("spec") or {}).get("nodeName") == node]
