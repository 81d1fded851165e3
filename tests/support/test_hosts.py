"""The test-host harness itself: hosts reach each other at their own addresses, each fault
does what it says (one way, both ways, per peer, loss, delay) and goes away when healed, and
nothing (namespace, process) is left behind, also after a failing test body."""

import subprocess
import sys
import time
from collections.abc import Callable

import pytest

from tests.support import hosts
from tests.support.host_fixtures import host_net, sweep_hosts
from tests.support.polling import wait_until

__all__ = ["host_net", "sweep_hosts"]

Net = Callable[[int], hosts.HostNet]

#: A UDP echo server on port 7001; a client that sends N numbered datagrams and prints how
#: many came back and the slowest round trip.
ECHO = """
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", 7001))
print("up", flush=True)
while True:
    data, peer = s.recvfrom(64)
    s.sendto(data, peer)
"""
PROBE = """
import socket, sys, time
n, wait = int(sys.argv[2]), float(sys.argv[3])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(wait)
back, slowest = 0, 0.0
for i in range(n):
    t = time.monotonic()
    s.sendto(str(i).encode(), (sys.argv[1], 7001))
    try:
        while int(s.recv(64)) != i:
            pass
        back += 1
        slowest = max(slowest, time.monotonic() - t)
    except socket.timeout:
        pass
print(back, slowest)
"""


def echo(host: hosts.Host) -> None:
    proc = host.popen([sys.executable, "-c", ECHO], stdout=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdout.readline() == b"up\n"


def probe(src: hosts.Host, dst: hosts.Host, n: int = 3, wait: float = 0.3) -> tuple[int, float]:
    r = src.run([sys.executable, "-c", PROBE, dst.address, str(n), str(wait)], timeout=120)
    assert r.returncode == 0, r.stderr
    back, slowest = r.stdout.split()
    return int(back), float(slowest)


def test_hosts_reach_each_other_at_their_own_addresses(host_net: Net) -> None:
    net = host_net(3)
    assert [h.address for h in net.hosts] == ["10.213.0.2", "10.213.0.3", "10.213.0.4"]
    for h in net.hosts:
        echo(h)
    for src in net.hosts:
        for dst in net.hosts:
            assert probe(src, dst)[0] == 3, (src.name, dst.name)


def test_a_blocked_peer_is_cut_both_ways_and_the_others_are_not(host_net: Net) -> None:
    net = host_net(3)
    a, b, c = net.hosts
    for h in net.hosts:
        echo(h)
    a.block([b])
    assert probe(a, b)[0] == 0 and probe(b, a)[0] == 0
    assert probe(a, c)[0] == 3 and probe(c, b)[0] == 3
    a.heal()
    assert probe(a, b)[0] == 3


def test_a_one_way_block_drops_only_that_direction(host_net: Net) -> None:
    """a's packets to b are dropped: b's datagrams still reach a (a's echo is lost)."""
    net = host_net(2)
    a, b = net.hosts
    seen = a.popen(
        [sys.executable, "-c", "import socket\ns = socket.socket(2, 2)\n"
         "s.bind(('0.0.0.0', 7002))\nprint(s.recv(9).decode(), flush=True)"],
        stdout=subprocess.PIPE,
    )  # fmt: skip
    echo(b)
    a.block([b], "out")
    assert probe(a, b)[0] == 0
    b.python(f"import socket\nsocket.socket(2, 2).sendto(b'arrived', ('{a.address}', 7002))")
    assert seen.communicate(timeout=10)[0] == b"arrived\n"


def test_a_host_blocked_from_everyone_keeps_its_loopback(host_net: Net) -> None:
    net = host_net(2)
    a, b = net.hosts
    echo(a)
    echo(b)
    a.block()
    assert probe(a, b)[0] == 0 and probe(b, a)[0] == 0
    assert a.python("import socket; socket.create_connection(('127.0.0.1', 9), 1)").returncode
    assert (
        "refused" in a.python("import socket; socket.create_connection(('127.0.0.1', 9), 1)").stderr
    )  # loopback answers (RST) instead of timing out


def test_delay_holds_every_packet_the_host_sends(host_net: Net) -> None:
    net = host_net(2)
    a, b = net.hosts
    echo(b)
    a.delay(0.2)
    back, slowest = probe(a, b, wait=2.0)
    assert back == 3 and slowest >= 0.2
    a.heal()
    assert probe(a, b)[1] < 0.2


def test_loss_drops_about_that_share_of_packets(host_net: Net) -> None:
    net = host_net(2)
    a, b = net.hosts
    echo(b)
    a.loss(0.5)
    back, _ = probe(a, b, n=100, wait=0.05)
    assert 20 <= back <= 80, back  # binomial(100, 0.5): outside this once in ~10^9


def test_closing_a_net_kills_its_processes_and_deletes_its_namespaces(host_net: Net) -> None:
    net = host_net(2)
    sleeper = net[1].popen(["sleep", "600"])
    assert len(net.namespaces()) == 3  # the switch and two hosts
    net.close()
    assert sleeper.poll() is not None
    assert net.namespaces() == []


def test_a_failing_body_still_leaves_nothing_behind() -> None:
    why = hosts.unavailable()
    if why is not None:
        pytest.skip(f"no test hosts here: {why}")
    before = hosts.leftovers()
    with pytest.raises(RuntimeError, match="boom"), hosts.HostNet(2) as net:
        sleeper = net[0].popen(["sleep", "600"])
        raise RuntimeError("boom")
    assert sleeper.poll() is not None
    assert hosts.leftovers() == before


def test_sweep_deletes_the_namespaces_of_a_run_that_died() -> None:
    why = hosts.unavailable()
    if why is not None:
        pytest.skip(f"no test hosts here: {why}")
    dead = subprocess.Popen(["true"])
    dead.wait()
    name = f"{hosts.PREFIX}{dead.pid}n0h0"
    subprocess.run(["ip", "netns", "add", name], check=True)
    start = time.monotonic()
    assert name in hosts.sweep()
    wait_until(lambda: name not in hosts.namespaces(), 10, 0.1, "the namespace gone")
    assert time.monotonic() - start < 10


#: TCP servers on 7003 and 7004; a client that prints which of them it reached in 1 s.
LISTEN = """
import socket, threading
def serve(port):
    s = socket.socket()
    s.bind(("0.0.0.0", port))
    s.listen(8)
    while True:
        s.accept()[0].close()
for port in (7003, 7004):
    threading.Thread(target=serve, args=(port,), daemon=True).start()
print("up", flush=True)
threading.Event().wait()
"""
REACH = """
import socket, sys
for port in (7003, 7004):
    try:
        socket.create_connection((sys.argv[1], port), 1).close()
        print(port)
    except OSError:
        pass
"""


def reached(src: hosts.Host, dst: hosts.Host) -> list[int]:
    r = src.run([sys.executable, "-c", REACH, dst.address])
    return [int(p) for p in r.stdout.split()]


def listen(host: hosts.Host) -> None:
    proc = host.popen([sys.executable, "-c", LISTEN], stdout=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdout.readline() == b"up\n"


def test_a_block_that_keeps_a_port_lets_only_that_port_through(host_net: Net) -> None:
    net = host_net(2)
    a, b = net.hosts
    listen(b)
    a.block([b], keep=[7003])
    assert reached(a, b) == [7003]


def test_cut_ports_cuts_only_those_ports(host_net: Net) -> None:
    net = host_net(2)
    a, b = net.hosts
    listen(b)
    a.cut_ports(b, [7003])
    assert reached(a, b) == [7004]
    a.heal()
    assert reached(a, b) == [7003, 7004]
