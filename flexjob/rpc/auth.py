"""Bearer tokens for every flexjob service that listens: the rule for where it may listen, the
check of a presented token, and where a job's token lives.

One owner for all services: the HTTP server (``flexjob.server``), the brain and the job
master's gRPC port refuse to listen beyond loopback without a token, and then reject calls
that do not present it. A job master's token reaches its agents and trainers through the
environment: ``FLEXJOB_MASTER_TOKEN`` (on Kubernetes from the job's Secret, ``secretKeyRef``)
or ``FLEXJOB_MASTER_TOKEN_FILE`` (locally a 0600 file in the job directory), never a command
line. Not for authorisation (every holder of a token may do everything).
"""

import hmac
import os
import secrets
from collections.abc import Mapping
from pathlib import Path

from flexjob.api.errors import InvalidSpecError
from flexjob.api.names import ENV_MASTER_TOKEN, ENV_MASTER_TOKEN_FILE
from flexjob.core.addresses import is_loopback
from flexjob.core.secrets import same_secret

#: gRPC metadata / HTTP header carrying ``Bearer <token>``.
AUTHORIZATION = "authorization"


class InsecureBindError(InvalidSpecError):
    """Listening beyond 127.0.0.1 without a token."""


def check_bind(
    host: str,
    token: str | None,
    how: str = "pass --token-file or set FLEXJOB_SERVER_TOKEN",
) -> None:
    """Raise ``InsecureBindError`` when ``host`` is reachable from elsewhere and no token is
    set; ``how`` tells the user how to give one."""
    if not is_loopback(host) and not token:
        raise InsecureBindError(
            f"refusing to listen on {host} without a bearer token: {how} (or listen on 127.0.0.1)"
        )


def token_matches(header: str | None, token: str) -> bool:
    """Whether an ``Authorization`` header carries ``Bearer <token>``."""
    if not header:
        return False
    scheme, _, value = header.partition(" ")
    return scheme.lower() == "bearer" and same_secret(value.strip(), token)


#: The path prefix of a DI job's key: ``/di/<key>/v1alpha2/replicas`` (docs/di-engine.md).
DI_KEY_PREFIX = "di"


def di_job_key(token: str, namespace: str, job: str) -> str:
    """The key that lets DI-engine's client (which sends no header) call the server for one job
    only: an HMAC of ``namespace/job`` under the server's token, carried in the URL path."""
    return hmac.new(token.encode(), f"{namespace}/{job}".encode(), "sha256").hexdigest()[:32]


def di_key_matches(key: str, token: str, namespace: str, job: str) -> bool:
    return same_secret(key, di_job_key(token, namespace, job))


def di_server_url(url: str, token: str | None, namespace: str, job: str) -> str:
    """The server URL a DI job's roles get: with a server token, the job's key as a path
    (``<url>/di/<key>``); without one, ``url`` itself."""
    if not token:
        return url
    return f"{url.rstrip('/')}/{DI_KEY_PREFIX}/{di_job_key(token, namespace, job)}"


def bearer(token: str) -> str:
    return f"Bearer {token}"


def new_token() -> str:
    return secrets.token_urlsafe(32)


def write_token_file(path: Path, token: str) -> Path:
    """Write ``token`` to ``path``, readable by its owner only (0600 from the start), at once:
    a reader finds no file or the whole token, never an empty one (a temp file renamed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(token)
    os.chmod(temp, 0o600)
    os.replace(temp, path)
    return path


def master_token(env: Mapping[str, str] | None = None) -> str | None:
    """The job master's token from ``FLEXJOB_MASTER_TOKEN`` or the file named by
    ``FLEXJOB_MASTER_TOKEN_FILE``; None when neither is set. OSError when the file is
    unreadable (a job that should have a token must not silently run without one)."""
    env = os.environ if env is None else env
    token = env.get(ENV_MASTER_TOKEN, "").strip()
    if token:
        return token
    path = env.get(ENV_MASTER_TOKEN_FILE, "")
    return read_token_file(Path(path)) if path else None


def read_token_file(path: Path) -> str | None:
    """The token in ``path`` (surrounding whitespace dropped); None when it is empty. OSError
    when it cannot be read."""
    return path.read_text().strip() or None
