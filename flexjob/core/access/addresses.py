"""Whether a listen address is reachable only from this machine: the rule that decides when a
server (the HTTP API, a /metrics endpoint) must require a token. Pure."""

import ipaddress


def is_loopback(host: str) -> bool:
    """``localhost``, ``127.x.y.z`` and ``::1`` are loopback; names and other addresses are not."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
