"""What a PS replica holds instead of the job's token, and its check of every call.

A PS replica gets ``FLEXJOB_PS_SECRET`` (``ps_secret``): the job's member key
(``rpc.auth.member_key``), with which it checks the member MAC of its clients' node credentials
(``rpc.auth.node_credential``: any member of the job may pull and push); the MAC that makes
the master's credential for this one PS (``ps_control_bearer``), the only caller its control
service (``PsControl``: pause, checkpoint, load, resume) admits besides the token's holders;
and the token's one-way digest (``token_digest``), against which it checks a presented token
(an agent joining ``flexjob run`` from another host holds the token). For its own calls to
the master it holds its node's credential (``ps-<index>``), like an agent. So a stolen PS
secret acts at the master as that PS only, and as the master at no PS (another PS's control
MAC is not in it, nor the token); it lets its holder talk to the job's PS replicas as a member,
as any worker's credential does. Not for the master's check of callers
(``rpc.auth.JobCredentials``).
"""

import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass

import grpc

from flexjob.api.errors import InvalidSpecError
from flexjob.api.names import ENV_PS_SECRET
from flexjob.rpc.auth import (
    ANY_NODE,
    credential_parts,
    member_key,
    member_mac,
    node_env,
)

#: The scheme of the master's bearer value for PS ``i``: ``ps-control:<i>:<mac>``.
PS_CONTROL_PREFIX = "ps-control:"
_PS_CONTROL_CONTEXT = b"flexjob-ps-control\0"
_TOKEN_DIGEST_CONTEXT = b"flexjob-token-digest\0"
#: The method prefix of a PS replica's control service (``ps_control.proto``).
CONTROL_SERVICE = "/flexjob.rpc.ps.control.v1.PsControl/"


def _control_mac(token: str, index: int) -> str:
    return hmac.new(token.encode(), _PS_CONTROL_CONTEXT + str(index).encode(), "sha256").hexdigest()


def ps_control_bearer(token: str, index: int) -> str:
    """The master's credential for the control calls of PS ``index``."""
    return f"{PS_CONTROL_PREFIX}{index}:{_control_mac(token, index)}"


def token_digest(token: str) -> str:
    """A one-way digest of the job's token: a PS checks a presented token against it (a client
    that holds the token: an agent joining ``flexjob run`` from another host) without being able
    to present it."""
    return hashlib.sha256(_TOKEN_DIGEST_CONTEXT + token.encode()).hexdigest()


def ps_secret(token: str, index: int) -> str:
    """What PS ``index`` holds (``FLEXJOB_PS_SECRET``):
    ``<index>:<member key>:<control mac>:<token digest>``."""
    return f"{index}:{member_key(token)}:{_control_mac(token, index)}:{token_digest(token)}"


@dataclass(frozen=True, slots=True)
class PsCredentials:
    """A PS replica's check of callers: ``member_key`` for its clients' node credentials,
    ``control`` the master's bearer value for this PS, ``token_digest`` the job token's."""

    member_key: str
    control: str
    token_digest: str

    @classmethod
    def from_secret(cls, secret: str) -> "PsCredentials":
        """The credentials in a ``ps_secret``; ``InvalidSpecError`` naming the variable when
        it is malformed."""
        parts = secret.strip().split(":")
        if len(parts) != 4 or not parts[0].isdigit() or not all(parts):
            raise InvalidSpecError(
                f"{ENV_PS_SECRET}: must be <index>:<member key>:<control mac>:<token digest> "
                "(rpc.ps_auth)"
            )
        index, key, mac, digest = parts
        return cls(key, f"{PS_CONTROL_PREFIX}{index}:{mac}", digest)

    @classmethod
    def from_token(cls, token: str, index: int) -> "PsCredentials":
        """The credentials of PS ``index`` of the job whose token is ``token``."""
        return cls.from_secret(ps_secret(token, index))

    def caller(self, header: str | None) -> str | None:
        """``ANY_NODE`` for the master's credential of this PS or the job's token, the node id
        for a member's node credential, None for anything else."""
        scheme, _, value = (header or "").partition(" ")
        value = value.strip()
        if scheme.lower() != "bearer" or not value.isascii():
            return None
        if hmac.compare_digest(value.encode(), self.control.encode()):
            return ANY_NODE
        parts = credential_parts(value)
        if parts is None:
            held = hmac.compare_digest(token_digest(value).encode(), self.token_digest.encode())
            return ANY_NODE if held else None
        node, _, mac = parts
        return (
            node
            if hmac.compare_digest(mac.encode(), member_mac(self.member_key, node).encode())
            else None
        )

    def refusal(self, header: str | None, method: str) -> tuple[grpc.StatusCode, str] | None:
        """Why a call of ``method`` with ``header`` is refused; None when it may pass: the
        control service admits the master only, the data service every member."""
        caller = self.caller(header)
        if caller is None:
            return grpc.StatusCode.UNAUTHENTICATED, "missing or wrong bearer token"
        if method.startswith(CONTROL_SERVICE) and caller != ANY_NODE:
            return (
                grpc.StatusCode.PERMISSION_DENIED,
                f"only the job master may call {method}; node {caller!r} may not",
            )
        return None


def ps_credentials(env: Mapping[str, str], token: str | None, index: int) -> PsCredentials | None:
    """A PS replica's credentials: from ``FLEXJOB_PS_SECRET`` in ``env``, else derived from the
    job's ``token`` when it has one (a PS started by hand with the token), else None."""
    secret = env.get(ENV_PS_SECRET, "").strip()
    if secret:
        return PsCredentials.from_secret(secret)
    return PsCredentials.from_token(token, index) if token else None


def ps_node_env(env: Mapping[str, str], token: str, node_id: str, index: int) -> dict[str, str]:
    """``env`` for PS ``index`` (node ``node_id``): its node's credential and its PS secret, not
    the job's token."""
    return node_env(env, token, node_id) | {ENV_PS_SECRET: ps_secret(token, index)}
