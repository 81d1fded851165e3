"""The emulated cluster across real hosts (``tests/support/hosts.py``): one process kubelet
per host, each host a Node of the cluster whose pods run inside that host's network namespace
with the host's address as their pod IP, and the API server reachable from every host.

``HostKubelet`` is the process kubelet (``k8s_kubelet.ProcessKubelet``) of one host: its Node
has the host's address (``InternalIP``), its pods run inside the host (``ip netns exec``) and
their ``podIP`` and ``hostIP`` are the host's address (as a pod with ``hostNetwork``: two pods
on one host share it); as a kubelet manages a pod's ``/etc/hosts``, the host name resolves to
that address inside the host (``/etc/netns/<namespace>/hosts``, removed when it stops). A
Service resolves to the address of the host its pod is bound to, whichever kubelet runs it.
One of the kubelets (``schedules``) plays the cluster's scheduler: it binds each pending pod
to the Ready node with the fewest live pods bound (by name on a tie), over every Node of the
API, so one job's pods spread over the hosts.

``api_relays`` makes the API server (the emulator on this machine's ``127.0.0.1``) reachable
from inside every host at the same address and port, on the host's own loopback, as if the
API server were on every node: a listener made inside the host's namespace (this thread
enters it with ``setns`` just to make the socket) whose connections are relayed to the
emulator. The kubeconfig the kubelet hands its pods then works unchanged inside the hosts.
Closing the relays closes their listeners and connections; ``HostNet.close`` deletes the
namespaces. Test support, on the emulator's event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import shutil
import socket
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from tests.support.hosts import Host
from tests.support.k8s_emulator import K8sEmulator
from tests.support.k8s_kubelet import TERMINAL, ProcessKubelet
from tests.support.k8s_store import Body

CLONE_NEWNET = 0x40000000
MERGE = {"Content-Type": "application/merge-patch+json"}
ETC_NETNS = Path("/etc/netns")


def _setns(fd: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, CLONE_NEWNET) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"setns: {os.strerror(errno)}")


@contextlib.contextmanager
def network_namespace(ns: str) -> Iterator[None]:
    """This thread inside the named network namespace for the block (sockets made there stay
    in it), back in its own after."""
    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    try:
        target = os.open(f"/run/netns/{ns}", os.O_RDONLY)
        try:
            _setns(target)
            try:
                yield
            finally:
                _setns(own)
        finally:
            os.close(target)
    finally:
        os.close(own)


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()


@contextlib.asynccontextmanager
async def api_relays(emulator: K8sEmulator, hosts: Sequence[Host]) -> AsyncIterator[None]:
    """The emulator's address (``127.0.0.1:PORT``) served inside each of ``hosts`` too."""
    url = urlsplit(emulator.base_url)
    host, port = url.hostname or "127.0.0.1", int(url.port or 80)
    links: set[asyncio.Task[Any]] = set()

    async def relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(host, port)
        except OSError:
            writer.close()
            return
        task = asyncio.current_task()
        assert task is not None
        links.add(task)
        try:
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        finally:
            links.discard(task)

    servers = []
    try:
        for h in hosts:
            with network_namespace(h.ns):
                sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((host, port))
            sock.listen(64)
            sock.setblocking(False)
            servers.append(await asyncio.start_server(relay, sock=sock))
        yield
    finally:
        for server in servers:
            server.close()
        for task in list(links):
            task.cancel()
        for server in servers:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.wait_closed(), 5)


class HostKubelet(ProcessKubelet):
    """The process kubelet of ``host``: one Node named after the host (see module doc)."""

    def __init__(self, emulator: K8sEmulator, host: Host, *, schedules: bool, **kw: Any) -> None:
        super().__init__(emulator, nodes=(host.name,), **kw)
        self.host = host
        self.host_ip = host.address
        self.schedules = schedules

    async def __aenter__(self) -> HostKubelet:
        # The kubelet-managed /etc/hosts: the pod's host name resolves to its pod IP (what
        # gloo binds without GLOO_SOCKET_IFNAME); `ip netns exec` mounts it over /etc/hosts.
        self.etc.mkdir(parents=True, exist_ok=True)
        (self.etc / "hosts").write_text(
            f"127.0.0.1\tlocalhost\n{self.host.address}\t{socket.gethostname()}\n"
        )
        try:
            await super().__aenter__()
        except BaseException:
            shutil.rmtree(self.etc, ignore_errors=True)
            raise
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        try:
            await super().__aexit__(*exc_info)
        finally:
            shutil.rmtree(self.etc, ignore_errors=True)

    @property
    def etc(self) -> Path:
        """The host's own files over ``/etc`` (``ip netns exec`` bind-mounts them)."""
        return ETC_NETNS / self.host.ns

    def pod_ip(self, namespace: str, name: str) -> str:
        return self.host.address

    def command(self, argv: Sequence[str]) -> list[str]:
        return self.host.command(argv)

    def address_of(self, pod: Body) -> str:
        """The address of the host ``pod`` is bound to (its Node's ``InternalIP``)."""
        node = (pod.get("spec") or {}).get("nodeName")
        if node is None:
            return self.host_ip  # not bound yet: it resolves once scheduled
        try:
            body = self.emulator.store.get(self._kind("nodes"), None, str(node))
        except Exception:
            return self.host_ip
        for address in (body.get("status") or {}).get("addresses") or []:
            if address.get("type") == "InternalIP":
                return str(address["address"])
        return self.host_ip

    async def _schedule(self, pod: Body) -> None:
        """The cluster's scheduler (this kubelet's only with ``schedules``), over every Ready
        Node of the API."""
        if not self.schedules:
            return
        selector = (pod.get("spec") or {}).get("nodeSelector") or {}
        nodes = self.emulator.store.select(self._kind("nodes"), None)
        fits = [
            n["metadata"]["name"]
            for n in nodes
            if _ready(n)
            and all((n["metadata"].get("labels") or {}).get(k) == v for k, v in selector.items())
        ]
        if not fits:
            return  # Pending (another scheduling pass binds it once a node fits)
        load = dict.fromkeys(fits, 0)
        for other in self.emulator.store.select(self._kind("pods"), None):
            bound = (other.get("spec") or {}).get("nodeName")
            if bound in load and (other.get("status") or {}).get("phase") not in TERMINAL:
                load[bound] += 1
        node = min(fits, key=lambda n: (load[n], n))
        meta = pod["metadata"]
        path = f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}"
        await self._request("PATCH", path, {"spec": {"nodeName": node}}, MERGE)


def _ready(node: Body) -> bool:
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
