"""The emulated cluster across real hosts: one process kubelet per host (a network namespace),
each host a Node; pods spread over the hosts, run inside them with the host's address as their
pod IP, reach the API server from there and each other by Service name across hosts; nothing
is left behind."""

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import kmock
import pytest
import pytest_asyncio

from tests.support import hosts
from tests.support.host_fixtures import host_net, sweep_hosts
from tests.support.k8s_emulator import K8sEmulator, wait_for
from tests.support.k8s_fixtures import REPO, image_env
from tests.support.k8s_hosts import HostKubelet, api_relays
from tests.support.test_k8s_kubelet import pod, status

pytestmark = pytest.mark.timeout(90)
__all__ = ["host_net", "sweep_hosts"]
DEADLINE = 30.0

#: Serves one line on its pod's address (the argument), prints it.
SERVER = """import socket, sys
s = socket.create_server((sys.argv[1], 7000))
print(sys.argv[1], flush=True)
c, _ = s.accept()
c.sendall(b"pong from " + sys.argv[1].encode())
c.close()
"""
#: Asks the API server (its kubeconfig) for the nodes, then the server by its Service name.
CLIENT = """import json, os, socket, sys, time, urllib.request, yaml
server = yaml.safe_load(open(os.environ["KUBECONFIG"]))["clusters"][0]["cluster"]["server"]
nodes = json.loads(urllib.request.urlopen(server + "/api/v1/nodes", timeout=10).read())
print("nodes:", len(nodes["items"]))
for _ in range(100):
    try:
        c = socket.create_connection((sys.argv[1], 7000), timeout=5)
        break
    except OSError:
        time.sleep(0.1)
print(c.recv(100).decode(), "to", os.environ["MY_IP"])
"""


@pytest_asyncio.fixture()
async def cluster_on_hosts(
    host_net: Callable[[int], hosts.HostNet], tmp_path: Path
) -> AsyncIterator[tuple[K8sEmulator, hosts.HostNet]]:
    net = host_net(3)
    async with K8sEmulator() as emulator, kmock.Server(emulator), api_relays(emulator, net.hosts):
        kubelets = [
            HostKubelet(
                emulator, h, schedules=i == 0, image_env=image_env(), workdir=REPO,
                log_dir=tmp_path / "kubelet",
            )
            for i, h in enumerate(net.hosts)
        ]  # fmt: skip
        async with kubelets[0], kubelets[1], kubelets[2]:
            yield emulator, net


async def test_pods_land_on_different_hosts_with_their_addresses_and_reach_each_other(
    cluster_on_hosts: tuple[K8sEmulator, hosts.HostNet],
) -> None:
    emulator, net = cluster_on_hosts
    pods = emulator.kind("", "v1", "pods")
    server = pod("server", SERVER, container={"args": ["0.0.0.0"]})
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "srv", "namespace": "default"},
        "spec": {"clusterIP": "None", "selector": {"app": "server"}, "ports": [{"port": 7000}]},
    }
    emulator.store.create(emulator.kind("", "v1", "services"), "default", service)
    emulator.store.create(pods, "default", server)
    await wait_for(lambda: emulator.store.logs.get(("default", "server")), DEADLINE)
    ip = {"fieldRef": {"fieldPath": "status.podIP"}}
    client = pod(
        "client",
        CLIENT,
        container={"args": ["srv.default.svc"], "env": [{"name": "MY_IP", "valueFrom": ip}]},
    )
    emulator.store.create(pods, "default", client)
    await wait_for(
        lambda: status(emulator, "client").get("phase") in ("Succeeded", "Failed"), DEADLINE
    )
    log = emulator.store.logs["default", "client"]
    assert status(emulator, "client")["phase"] == "Succeeded", log
    where = {
        name: emulator.store.get(pods, "default", name)["spec"]["nodeName"]
        for name in ("server", "client")
    }
    address = {h.name: h.address for h in net.hosts}
    assert where["server"] != where["client"], where  # spread over the hosts
    for name in ("server", "client"):
        got = status(emulator, name)
        assert got["podIP"] == got["hostIP"] == address[where[name]], got
    assert log == f"nodes: 3\npong from {address[where['server']]} to {address[where['client']]}\n"


async def test_nothing_is_left_behind(
    host_net: Callable[[int], hosts.HostNet], tmp_path: Path
) -> None:
    net = host_net(2)
    async with K8sEmulator() as emulator, kmock.Server(emulator), api_relays(emulator, net.hosts):
        kubelet = HostKubelet(
            emulator, net[0], schedules=True, image_env=image_env(), workdir=REPO,
            log_dir=tmp_path / "kubelet",
        )  # fmt: skip
        async with kubelet:
            sleeper = pod("sleeper", "import time; time.sleep(600)")
            emulator.store.create(emulator.kind("", "v1", "pods"), "default", sleeper)
            await wait_for(lambda: kubelet.pid("default", "sleeper"), DEADLINE)
            pid = kubelet.pid("default", "sleeper")
            assert kubelet.etc.exists()
            resolved = net[0].python(
                "import socket; print(socket.gethostbyname(socket.gethostname()))"
            )
            assert resolved.stdout.strip() == net[0].address, resolved  # as the pods see it
        assert pid is not None and not hosts._alive(pid)
        assert not kubelet.etc.exists()
    net.close()
    assert net.namespaces() == [] and hosts.leftovers() == []
