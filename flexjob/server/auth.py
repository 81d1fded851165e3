"""Bearer-token authentication and the rule for where the server may listen.

For: refusing to serve beyond loopback without a token, and rejecting requests that lack it
(401). ``/healthz`` stays open so probes work. Not for authorisation (every holder of the token
may do everything).
"""

import hmac
import ipaddress

from flexjob.api.errors import InvalidSpecError

OPEN_PATHS = frozenset({"/healthz"})


class InsecureBindError(InvalidSpecError):
    """Listening beyond 127.0.0.1 without a token."""


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None) -> None:
    """Raise ``InsecureBindError`` when ``host`` is reachable from elsewhere and no token is set."""
    if not is_loopback(host) and not token:
        raise InsecureBindError(
            f"refusing to listen on {host} without a bearer token: pass --token or set "
            "FLEXJOB_SERVER_TOKEN (or listen on 127.0.0.1)"
        )


def token_matches(header: str | None, token: str) -> bool:
    """Whether an ``Authorization`` header carries ``Bearer <token>``."""
    if not header:
        return False
    scheme, _, value = header.partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(value.strip(), token)
