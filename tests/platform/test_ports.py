"""free_port: a port a server can bind right after, outside the kernel's ephemeral range."""

import socket
from pathlib import Path

from flexjob.platform.ports import free_port


def test_a_free_port_can_be_bound_and_is_below_the_ephemeral_range() -> None:
    port = free_port()
    with socket.socket() as server:
        server.bind(("127.0.0.1", port))
        server.listen()
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass
    range_file = Path("/proc/sys/net/ipv4/ip_local_port_range")
    if range_file.exists():  # clients' ports come from that range: none can be this one
        assert port < int(range_file.read_text().split()[0])
