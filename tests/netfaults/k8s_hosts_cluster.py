"""The emulated Kubernetes cluster across test hosts: the API emulator and the kopf operator on
this machine, one process kubelet per host (``tests/support/k8s_hosts.py``), the API relayed
onto every host. A job's pods go through kopf as on a real cluster and land on different hosts
with the hosts' addresses; the implicit master runs in a pod on one of them."""

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import kmock

from tests.e2e.k8s_cluster import IMAGE, Cluster, OperatorThread
from tests.support.hosts import Host, HostNet
from tests.support.k8s_emulator import K8sEmulator
from tests.support.k8s_fixtures import (
    ELASTICJOBS,
    REPO,
    SCALEPLANS,
    declare_foreign_kinds,
    image_env,
)
from tests.support.k8s_hosts import HostKubelet, api_relays


def host_of(c: Cluster, net: HostNet, pod: str) -> Host:
    """The host ``pod`` is bound to."""
    [body] = [p for p in c.pods(pod.rsplit("-", 2)[0]) if p["metadata"]["name"] == pod]
    [host] = [h for h in net.hosts if h.name == body["spec"]["nodeName"]]
    return host


@contextlib.asynccontextmanager
async def host_cluster(root: Path, net: HostNet, **operator_options: Any) -> AsyncIterator[Cluster]:
    """The cluster over ``net``'s hosts; the kubelets' logs under ``root/kubelet``, and their
    volumes (each master's own state claim, as the default install makes) under
    ``root/kubelet/volumes``, one directory of this machine every host sees.
    ``Cluster.kubelet`` is the first host's (the scheduler)."""
    log_dir = root / "kubelet"
    async with (
        K8sEmulator() as emulator,
        kmock.Server(emulator),
        api_relays(emulator, net.hosts),
        contextlib.AsyncExitStack() as kubelets,
    ):
        emulator.declare(ELASTICJOBS)
        emulator.declare(SCALEPLANS)
        declare_foreign_kinds(emulator)
        running: list[HostKubelet] = []
        for i, host in enumerate(net.hosts):
            kubelet = HostKubelet(
                emulator, host, schedules=i == 0, image_env=image_env(), workdir=REPO,
                log_dir=log_dir,
            )  # fmt: skip
            running.append(await kubelets.enter_async_context(kubelet))
        options: dict[str, Any] = {"job_master_image": IMAGE, **operator_options}
        thread = OperatorThread(emulator, options)
        c = Cluster(emulator, running[0], await thread.start(), options, thread)
        try:
            yield c
        finally:
            await c.stop_operator()
