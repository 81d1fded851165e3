"""Bearer tokens for every flexjob service that listens: the rule for where it may listen, the
check of a presented token, and where a job's token lives.

One owner for all services: the HTTP server (``flexjob.server``), the brain and the job
master's gRPC port refuse to listen beyond loopback without a token, and then reject calls
that do not present it. A job master's token reaches its agents and trainers through the
environment: ``FLEXJOB_MASTER_TOKEN`` (on Kubernetes from the job's Secret, ``secretKeyRef``)
or ``FLEXJOB_MASTER_TOKEN_FILE`` (locally a 0600 file in the job directory), never a command
line.

Node identity: the job token's holder may act as any node; a node credential
(``node_credential``: ``node:<node id>:<mac>:<member mac>``, the HMAC-SHA256 of the node id under
the job token, then under the job's member key), which ``flexjob run`` and the operators give
each agent and PS replica instead of the token (``FLEXJOB_NODE_CREDENTIAL``), acts only as its
node and that node's processes (``<node>.<local rank>``). ``JobCredentials`` is the master's
check of both (``rpc.server`` runs it on every call that names a node). The member key
(``member_key``, derived from the token) checks only the second MAC: the PS replicas hold it
(``rpc.ps_auth``) to know a job's members, and can forge no credential the master accepts.
"""

import hmac
import os
import secrets
from collections.abc import Mapping
from pathlib import Path

from flexjob.api.errors import InvalidSpecError, WireError
from flexjob.api.names import ENV_MASTER_TOKEN, ENV_MASTER_TOKEN_FILE, ENV_NODE_CREDENTIAL
from flexjob.core.access.addresses import is_loopback
from flexjob.core.access.secrets import same_secret

#: gRPC metadata / HTTP header carrying ``Bearer <token>``.
AUTHORIZATION = "authorization"


class InsecureBindError(WireError, InvalidSpecError):
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


def check_job_bind(host: str, token: str | None) -> None:
    """``check_bind`` for a server that takes the job's master token: the job master's and a
    PS replica's gRPC servers."""
    check_bind(host, token, f"set {ENV_MASTER_TOKEN} or {ENV_MASTER_TOKEN_FILE}")


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


def client_bearer(env: Mapping[str, str] | None = None) -> str | None:
    """What a client of the job master presents: the job's token (``master_token``), else this
    node's credential (``FLEXJOB_NODE_CREDENTIAL``); None when neither is set."""
    env = os.environ if env is None else env
    return master_token(env) or env.get(ENV_NODE_CREDENTIAL, "").strip() or None


#: The scheme of a node credential's bearer value: ``node:<node id>:<mac>``.
NODE_CREDENTIAL_PREFIX = "node:"
#: ``JobCredentials.caller`` of the job token's holder: it may act as any node.
ANY_NODE = "*"
_NODE_MAC_CONTEXT = b"flexjob-node-credential\0"
_MEMBER_KEY_CONTEXT = b"flexjob-member-key\0"
_MEMBER_MAC_CONTEXT = b"flexjob-member-credential\0"
_KNOWN_CALLERS_MAX = 4096  # bearer values already checked, kept (valid ones only)


def _mac(key: str, context: bytes, text: str) -> str:
    return hmac.new(key.encode(), context + text.encode(), "sha256").hexdigest()


def member_key(token: str) -> str:
    """The job's member key: it checks (and makes) the member MAC of node credentials only, so
    its holder (a PS replica) knows the job's members without being able to act as one at the
    master."""
    return hmac.new(token.encode(), _MEMBER_KEY_CONTEXT, "sha256").hexdigest()


def member_mac(key: str, node_id: str) -> str:
    """The member MAC of ``node_id``'s credential under the member ``key``."""
    return _mac(key, _MEMBER_MAC_CONTEXT, node_id)


def node_credential(token: str, node_id: str) -> str:
    """The credential of ``node_id`` under the job's ``token``: it proves to the master that its
    holder is that node (or one of its processes) without carrying the token itself, and to the
    job's PS replicas that it is a member (``member_mac``)."""
    mac = _mac(token, _NODE_MAC_CONTEXT, node_id)
    return f"{NODE_CREDENTIAL_PREFIX}{node_id}:{mac}:{member_mac(member_key(token), node_id)}"


def credential_parts(value: str) -> tuple[str, str, str] | None:
    """A node credential's node id, MAC and member MAC; None when ``value`` is none."""
    if not value.startswith(NODE_CREDENTIAL_PREFIX):
        return None
    parts = value[len(NODE_CREDENTIAL_PREFIX) :].rsplit(":", 2)
    if len(parts) != 3 or not parts[0]:
        return None
    return parts[0], parts[1], parts[2]


def acts_as(owner: str, node_id: str) -> bool:
    """Whether the holder of ``owner``'s credential may act as ``node_id``: the node itself or
    one of its processes (``<owner>.<local rank>``); ``ANY_NODE`` may act as every node."""
    return owner == ANY_NODE or node_id == owner or node_id.startswith(owner + ".")


class JobCredentials:
    """Who a call's ``Authorization`` header proves it is, under the job's ``token``: ``caller``
    gives ``ANY_NODE`` for the token itself, the node id for a valid node credential, None for
    anything else. Valid headers are remembered (one dict look-up per call after the first)."""

    def __init__(self, token: str) -> None:
        self._token = token.encode()
        self._token_text = token
        self._known: dict[str, str] = {}

    def caller(self, header: str | None) -> str | None:
        if not header:
            return None
        known = self._known.get(header)
        if known is not None:
            return known
        scheme, _, value = header.partition(" ")
        value = value.strip()
        if scheme.lower() != "bearer" or not value.isascii():
            return None
        caller: str | None = None
        if hmac.compare_digest(value.encode(), self._token):
            caller = ANY_NODE
        elif (parts := credential_parts(value)) is not None:
            expected = node_credential(self._token_text, parts[0]).encode()
            caller = parts[0] if hmac.compare_digest(value.encode(), expected) else None
        if caller is not None:
            if len(self._known) >= _KNOWN_CALLERS_MAX:
                self._known.clear()
            self._known[header] = caller
        return caller

    def refusal(self, header: str | None, node_id: str) -> str | None:
        """Why a call with ``header`` may not act as ``node_id``; None when it may."""
        caller = self.caller(header)
        if caller is None:
            return "missing or wrong bearer token"
        if acts_as(caller, node_id):
            return None
        return f"the credential of node {caller!r} may not act as node {node_id!r}"


def job_token_env(env: Mapping[str, str], token_file: Path) -> dict[str, str]:
    """``env`` whose processes present the job's token from ``token_file`` and no other."""
    out = {k: v for k, v in env.items() if k not in (ENV_MASTER_TOKEN, ENV_NODE_CREDENTIAL)}
    out[ENV_MASTER_TOKEN_FILE] = str(token_file)
    return out


def node_env(env: Mapping[str, str], token: str, node_id: str) -> dict[str, str]:
    """``env`` for the processes of node ``node_id``: its credential, not the job's token
    (they can then act as that node only)."""
    out = {k: v for k, v in env.items() if k not in (ENV_MASTER_TOKEN, ENV_MASTER_TOKEN_FILE)}
    out[ENV_NODE_CREDENTIAL] = node_credential(token, node_id)
    return out


def read_token_file(path: Path) -> str | None:
    """The token in ``path`` (surrounding whitespace dropped); None when it is empty. OSError
    when it cannot be read."""
    return path.read_text().strip() or None
