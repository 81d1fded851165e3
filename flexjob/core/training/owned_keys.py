"""Who owns the keys of the job master's KV store that flexjob itself relies on.

The incarnation id (agents make it their checkpoint directory), the exclusions
(``flexjob/excluded/<node>``: a node kept out of every world) and the PS set and its change
are written by the master alone, in its own process; an agent's start count
(``flexjob/agent-starts/<node>``) by that node alone; a parameter server's membership
(``flexjob/ps/member/<i>``) by PS replica ``i`` alone (node ``ps-<i>``). ``key_owner`` says
which, for the RPC edge (``rpc.server``) to refuse a ``KVSet`` / ``KVAdd`` from anyone else;
every other key is the job's processes' to share. Not for the values' format (their writers)
or their bounds (``api.limits``). ``incarnation_name`` checks the incarnation before it
becomes a directory.
"""

import re
from dataclasses import dataclass

from flexjob.api import names
from flexjob.api.errors import InvalidSpecError
from flexjob.api.roles import PS_TYPE

#: Keys only the master writes (never over RPC).
MASTER_KEYS = frozenset({names.KV_INCARNATION, names.KV_PS_SET, names.KV_PS_CHANGE})
#: Key prefixes only the master writes.
MASTER_PREFIXES = (names.KV_EXCLUDED_PREFIX,)
#: Key prefixes + a node id: only that node writes the key.
NODE_PREFIXES = (names.KV_AGENT_STARTS_PREFIX,)
#: Key prefixes + a replica index: only that replica (node ``<type>-<index>``) writes the key.
REPLICA_PREFIXES = {names.KV_PS_MEMBER_PREFIX: PS_TYPE.value}


@dataclass(frozen=True, slots=True)
class KeyOwner:
    """The one writer of a key: the master (``node`` empty) or the node ``node``."""

    node: str = ""

    @property
    def master(self) -> bool:
        return not self.node


def key_owner(key: str) -> KeyOwner | None:
    """The owner of ``key``; None when any of the job's processes may write it."""
    if key in MASTER_KEYS or key.startswith(MASTER_PREFIXES):
        return KeyOwner()
    for prefix in NODE_PREFIXES:
        if key.startswith(prefix) and len(key) > len(prefix):
            return KeyOwner(key[len(prefix) :])
    for prefix, rtype in REPLICA_PREFIXES.items():
        if key.startswith(prefix) and len(key) > len(prefix):
            return KeyOwner(f"{rtype}-{key[len(prefix) :]}")
    return None


def write_refusal(key: str, owner: KeyOwner) -> str:
    """Why a caller that is not ``owner`` may not write ``key``."""
    if owner.master:
        return f"key {key!r} is written by the job master only"
    return f"key {key!r} is written by node {owner.node!r} only"


#: An incarnation id as the master makes it (``uuid4().hex``).
_INCARNATION = re.compile(r"[0-9a-f]{32}")
#: The directory name of a job whose master keeps no incarnation.
NO_INCARNATION = "job"


def incarnation_name(value: bytes | None) -> str:
    """The incarnation id read from the master's KV as a safe directory name (``job`` when
    there is none); ``InvalidSpecError`` for anything the master does not make (never a
    path that could leave its parent)."""
    if value is None:
        return NO_INCARNATION
    text = value.decode(errors="replace")
    if not _INCARNATION.fullmatch(text):
        raise InvalidSpecError(
            f"{names.KV_INCARNATION}: expected 32 lowercase hex digits, got {text[:64]!r}"
        )
    return text
