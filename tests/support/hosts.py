"""Real hosts on this machine for tests: network namespaces on a private subnet, with link
faults (partitions one way or both, per peer or from everyone; loss; delay) and processes
started inside a host.

``HostNet(n)`` makes a switch namespace holding a bridge and ``n`` host namespaces, each joined
to the bridge by a veth pair and given its own address in ``10.213.0.0/24`` (``10.213.0.2``
up). The subnet exists only inside these namespaces: nothing is added to the machine's own
network namespace, so several nets (several tests, several helpers) can use the same
addresses at once without meeting. Faults are on the wire, not in the hosts: iptables rules
in the switch namespace (bridged packets pass its ``FORWARD`` chain), one chain per host's
bridge port (``physdev`` in = what the host sends, out = what it receives), so neither end
is told (a ``DROP`` in the sender's own ``OUTPUT`` would fail its ``connect`` at once with
EPERM) and connections go half-open, as with a cut cable; a host's loopback never breaks.
This kernel has no ``netem`` and no tc actions, so loss is iptables' ``statistic`` match and
delay is ``tests/support/netdelay.py`` on an NFQUEUE of the switch namespace.
``Host.popen`` runs a command inside a host (``ip netns exec``) in its own session.

``close()`` kills every process in each namespace (``ip netns pids``) and deletes the
namespaces (their veths go with them); ``leftovers()`` lists namespaces of this process
still there (the harness's tests check it is empty) and ``sweep()`` deletes those of
processes that are gone (a session-level finalizer runs it). ``unavailable()`` says why hosts
cannot be made here (not root, no ``ip``/``iptables``, namespaces refused), for a skip.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

PREFIX = "fjh"
SUBNET = "10.213.0"
IFACE = "eth0"
DELAY_QUEUE = 0
_NAME = re.compile(rf"^{PREFIX}(\d+)n(\d+)(sw|h\d+)$")
_count = itertools.count()
ROOT = Path(__file__).resolve().parents[2]


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], check=check, capture_output=True, text=True)


def namespaces() -> list[str]:
    out = _ip("netns", "list", check=False).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def unavailable() -> str | None:
    """Why test hosts cannot be made on this machine, or None."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    for tool in ("ip", "iptables"):
        if shutil.which(tool) is None:
            return f"`{tool}` is not installed (.ci/netns.sh installs it)"
    probe = f"{PREFIX}{os.getpid()}n999999sw"
    made = _ip("netns", "add", probe, check=False)
    if made.returncode != 0:
        return f"cannot make a network namespace: {made.stderr.strip()}"
    try:
        rule = ["iptables", "-w", "-A", "FORWARD", "-m", "physdev", "--physdev-in", "p0", "-j",
                "DROP"]  # fmt: skip
        r = subprocess.run(["ip", "netns", "exec", probe, *rule], capture_output=True, text=True)
        if r.returncode != 0:
            return f"iptables does not work in a namespace: {r.stderr.strip()}"
    finally:
        _ip("netns", "del", probe, check=False)
    return None


def _kill_all(ns: str, timeout: float = 10.0) -> None:
    """SIGKILL every process inside ``ns`` until none is left."""
    deadline = time.monotonic() + timeout
    while True:
        pids = [int(p) for p in _ip("netns", "pids", ns, check=False).stdout.split()]
        if not pids or time.monotonic() > deadline:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)


def _delete(ns: str) -> None:
    _kill_all(ns)
    _ip("netns", "del", ns, check=False)


def leftovers(pid: int | None = None) -> list[str]:
    """Namespaces of this harness made by process ``pid`` (default: this one) still there."""
    want = os.getpid() if pid is None else pid
    return [n for n in namespaces() if (m := _NAME.match(n)) and int(m.group(1)) == want]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep(include_own: bool = False) -> list[str]:
    """Delete this harness's namespaces whose maker is gone (and this process's own, with
    ``include_own``); returns what was deleted."""
    gone = []
    for ns in namespaces():
        m = _NAME.match(ns)
        if m is None:
            continue
        maker = int(m.group(1))
        if (maker == os.getpid() and include_own) or (maker != os.getpid() and not _alive(maker)):
            _delete(ns)
            gone.append(ns)
    return gone


@dataclass
class Host:
    """One host: a namespace with ``eth0`` at ``address``, its link port ``p<index>`` on the
    net's bridge."""

    @property
    def port(self) -> str:
        return f"p{self.index}"

    name: str
    ns: str
    address: str
    index: int
    switch: str  # the namespace of the bridge, where this host's link faults are
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    _delayer: subprocess.Popen[bytes] | None = None

    def command(self, cmd: Sequence[str]) -> list[str]:
        return ["ip", "netns", "exec", self.ns, *cmd]

    def popen(self, cmd: Sequence[str], **kwargs: object) -> subprocess.Popen[bytes]:
        """Start ``cmd`` inside this host, in a session of its own."""
        proc = subprocess.Popen(self.command(cmd), start_new_session=True, **kwargs)  # type: ignore[call-overload]
        self.procs.append(proc)
        return proc  # type: ignore[no-any-return]

    def run(self, cmd: Sequence[str], timeout: float = 30.0) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.command(cmd), capture_output=True, text=True, timeout=timeout, check=False
        )

    def python(self, code: str, timeout: float = 30.0) -> subprocess.CompletedProcess[str]:
        return self.run([sys.executable, "-c", code], timeout)

    def _iptables(self, *args: str) -> None:
        """A rule of this host's link: in its chain in the switch namespace."""
        cmd = ["ip", "netns", "exec", self.switch, "iptables", "-w", *args]
        r = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if r.returncode != 0:
            raise RuntimeError(f"iptables {' '.join(args)} for {self.name}: {r.stderr.strip()}")

    @property
    def chain(self) -> str:
        return f"FJ-{self.port}"

    def setup_chain(self) -> None:
        self._iptables("-N", self.chain)
        self._iptables("-A", "FORWARD", "-j", self.chain)

    def block(
        self, peers: Sequence[Host] = (), direction: str = "both", keep: Sequence[int] = ()
    ) -> None:
        """Drop this host's packets to ``peers`` (``out``), theirs to it (``in``) or both; no
        peers: to and from everyone. Silently, on the wire: neither end is told (half-open
        connections, as with a cut cable). TCP to and from the peers' ports ``keep`` still
        flows (a worker cut from its all-reduce peers but not from the master beside them)."""
        if direction not in ("in", "out", "both"):
            raise ValueError(f"direction must be in, out or both, got {direction!r}")
        for peer in [p.address for p in peers] or [f"{SUBNET}.0/24"]:
            if direction in ("out", "both"):
                self._drop([*self._port("in"), "-d", peer], keep, "--dport")
            if direction in ("in", "both"):
                self._drop([*self._port("out"), "-s", peer], keep, "--sport")

    def cut_ports(self, peer: Host, ports: Sequence[int]) -> None:
        """Drop TCP between this host and ``peer``'s ``ports`` both ways; the rest flows (an
        agent cut from the master but not from the peer's other processes)."""
        for port in ports:
            self._iptables("-A", self.chain, *self._port("in"), "-d", peer.address, "-p", "tcp",
                           "--dport", str(port), "-j", "DROP")  # fmt: skip
            self._iptables("-A", self.chain, *self._port("out"), "-s", peer.address, "-p",
                           "tcp", "--sport", str(port), "-j", "DROP")  # fmt: skip

    def _drop(self, match: list[str], keep: Sequence[int], port_flag: str) -> None:
        for port in keep:  # RETURN, not ACCEPT: the other hosts' chains still see it
            self._iptables("-A", self.chain, *match, "-p", "tcp", port_flag, str(port), "-j",
                           "RETURN")  # fmt: skip
        self._iptables("-A", self.chain, *match, "-j", "DROP")

    def _port(self, way: str) -> list[str]:
        return ["-m", "physdev", f"--physdev-{way}", self.port]

    def loss(self, probability: float) -> None:
        """Drop each packet this host sends with ``probability`` (netem's ``loss``)."""
        self._iptables(
            "-A", self.chain, *self._port("in"), "-m", "statistic", "--mode", "random",
            "--probability", str(probability), "-j", "DROP",
        )  # fmt: skip

    def delay(self, seconds: float) -> None:
        """Hold each packet this host sends for ``seconds`` (netem's ``delay``, egress)."""
        queue = str(self.index)
        cmd = ["ip", "netns", "exec", self.switch, sys.executable, "-m",
               "tests.support.netdelay", str(seconds), "--queue", queue]  # fmt: skip
        self._delayer = proc = subprocess.Popen(
            cmd, cwd=ROOT, stdout=subprocess.PIPE, start_new_session=True
        )
        assert proc.stdout is not None
        line = proc.stdout.readline().decode()
        if "ready" not in line:
            raise RuntimeError(f"the delayer of {self.name} did not start: {line!r}")
        self._iptables(
            "-A", self.chain, *self._port("in"), "-j", "NFQUEUE", "--queue-num", queue,
            "--queue-bypass",
        )  # fmt: skip

    def heal(self) -> None:
        """Every fault of this host's link gone: its rules flushed, its delayer stopped."""
        self._iptables("-F", self.chain)
        if self._delayer is not None:
            self._delayer.kill()
            self._delayer.wait()
            self._delayer = None


class HostNet:
    """``n`` hosts on one bridge; a context manager that tears everything down."""

    def __init__(self, n: int) -> None:
        self.tag = f"{PREFIX}{os.getpid()}n{next(_count)}"
        self.switch = f"{self.tag}sw"
        self.hosts: list[Host] = []
        try:
            self._make(n)
        except BaseException:
            self.close()
            raise

    def _make(self, n: int) -> None:
        _ip("netns", "add", self.switch)
        _ip("-n", self.switch, "link", "add", "br0", "type", "bridge")
        _ip("-n", self.switch, "link", "set", "br0", "up")
        for i in range(n):
            host = Host(f"host{i}", f"{self.tag}h{i}", f"{SUBNET}.{i + 2}", i, self.switch)
            _ip("netns", "add", host.ns)
            self.hosts.append(host)
            port = host.port
            _ip("-n", self.switch, "link", "add", port, "type", "veth", "peer", "name", IFACE,
                "netns", host.ns)  # fmt: skip
            _ip("-n", self.switch, "link", "set", port, "master", "br0", "up")
            _ip("-n", host.ns, "addr", "add", f"{host.address}/24", "dev", IFACE)
            _ip("-n", host.ns, "link", "set", IFACE, "up")
            _ip("-n", host.ns, "link", "set", "lo", "up")
            host.setup_chain()

    def __enter__(self) -> HostNet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __getitem__(self, i: int) -> Host:
        return self.hosts[i]

    def close(self) -> None:
        """Kill every process inside the hosts and delete every namespace of this net."""
        for host in self.hosts:
            for proc in [*host.procs, *filter(None, [host._delayer])]:
                with contextlib.suppress(OSError):
                    proc.kill()
            _delete(host.ns)
            for proc in host.procs:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(10)
        _delete(self.switch)

    def namespaces(self) -> list[str]:
        """This net's namespaces still present."""
        return [n for n in namespaces() if n.startswith(self.tag)]
