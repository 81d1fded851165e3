"""What the process kubelet (``k8s_kubelet``) reports of its pods and nodes: a pod's running
container, its ``containerStatuses`` and terminal status, and a Node's body. Test support."""

import asyncio
import contextlib
import dataclasses
import datetime
import os

import psutil

from tests.support.k8s_cgroup import MemoryCgroup
from tests.support.k8s_store import Body

HOSTNAME_LABEL = "kubernetes.io/hostname"


def now() -> str:
    return datetime.datetime.now(tz=datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclasses.dataclass(eq=False)
class Container:
    """A running pod's process (its main container)."""

    namespace: str
    pod: str
    uid: str
    node: str
    name: str
    image: str
    process: asyncio.subprocess.Process
    cgroup: MemoryCgroup | None
    started: str
    done: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)
    terminating: bool = False
    lost: bool = False

    @property
    def key(self) -> tuple[str, str]:
        return self.namespace, self.pod

    def kill_all(self) -> None:
        """SIGKILL every process of the container (its cgroup, else its process tree)."""
        if self.cgroup is not None:
            self.cgroup.kill_all()
        with contextlib.suppress(psutil.Error):
            family = psutil.Process(self.process.pid).children(recursive=True)
            for proc in [*family, psutil.Process(self.process.pid)]:
                with contextlib.suppress(psutil.Error):
                    proc.kill()


def terminated(code: int, reason: str, started: str, container_id: str) -> Body:
    return {
        "exitCode": code,
        "reason": reason,
        "startedAt": started,
        "finishedAt": now(),
        "containerID": container_id,
    }


def container_status(name: str, image: str, state: Body) -> Body:
    return {
        "name": name,
        "image": image,
        "imageID": "",
        "ready": "running" in state,
        "started": "running" in state,
        "restartCount": 0,
        "state": state,
    }


def terminated_status(container: Container, code: int, reason: str) -> Body:
    state = {"terminated": terminated(code, reason, container.started, str(container.process.pid))}
    return {
        "phase": "Succeeded" if code == 0 and reason == "Completed" else "Failed",
        "conditions": [{"type": "Ready", "status": "False"}],
        "containerStatuses": [container_status(container.name, container.image, state)],
    }


def node_body(name: str, address: str) -> Body:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {HOSTNAME_LABEL: name}},
        "status": {
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
            "addresses": [{"type": "InternalIP", "address": address}],
            "capacity": {"cpu": str(os.cpu_count() or 1), "memory": "8Gi", "pods": "110"},
        },
    }
