"""``free_port``: a TCP port that nothing on this machine uses now, safe to name before binding.

A caller that must name an address before the process serving it starts (``flexjob run``
starts its master and its agents together; tests start servers on known ports) takes one, and
the server binds it a moment later. The port is picked below the kernel's ephemeral range (the
ports it hands out for a bind to port 0 and for outgoing connections), so in between neither
another process's bind to port 0 nor a client connecting early — not even to this very port,
which on loopback can connect a socket to itself — takes it. Where the range cannot be read, the
kernel's own pick for port 0. The one owner of this trick.
"""

import random
import socket
from pathlib import Path

_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
#: How many ports below the ephemeral range are tried.
_SPAN = 10_000


def free_port(host: str = "127.0.0.1") -> int:
    low = _ephemeral_low()
    candidates = random.sample(range(low - _SPAN, low), 20) if low > _SPAN + 1024 else []
    for port in [*candidates, 0]:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind((host, port))
            except OSError:
                continue
            return int(sock.getsockname()[1])
    raise OSError(f"no free port on {host}")


def _ephemeral_low() -> int:
    """The lowest port of the kernel's ephemeral range (0 when unknown)."""
    try:
        return int(_RANGE_FILE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 0
