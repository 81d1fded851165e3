"""Fencing by incarnation: which calls of a node the master still takes once it declared that
node dead while it may be alive (its heartbeats stopped: a partition, a hung host).

Each membership of a node gets an incarnation, a number the master gives when the node's agent
joins (its heartbeat carrying incarnation 0: a fresh agent process, or one that was fenced and
stopped its workers) and the agent sends with every call after. When the master declares the
node dead on a heartbeat timeout, that membership is fenced: every call of the node or of its
processes (``<node>.<local rank>``) is refused until its agent joins again as a new member with
a new incarnation; a call that still carries an older incarnation than the node's current one
is refused for good. Its shards went back to the queue and it left the world when it was
declared dead, so none of its stale reports can count a sample twice and its old world cannot
be re-entered. The agent starts its training processes with its incarnation
(``FLEXJOB_INCARNATION``) and their calls carry it, so a late call of a process of a fenced
membership is refused after its agent joined again. Incarnation 0 on a call other than the
agent's heartbeat means "not said" (a process started without an agent): taken unless the node
is fenced now. One call of a
fenced node is taken all the same: a peer's report of a shard the fenced node finished in a
step the world committed (``trainer.peer_shards``: it comes from a survivor's client, with
incarnation 0) — the samples were trained, and the shard book counts the report only if the
shard was not handed out again; it is no sign of the fenced node's life.

Per node the incarnations only grow. The memberships are saved with the master's state
(``to_dict`` / ``from_dict``, in its snapshot): a master restarted from its state still refuses
a node it fenced before, and its live nodes go on under their incarnations. A node the master
does not know (a master started without that state) is never fenced, and an incarnation it
carries is taken as its current one. No I/O: the master's service (``master.service``) keeps
the state and acts on the answers.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from types import MappingProxyType

from flexjob.api.errors import NODE_FENCED

#: The incarnation of a call that does not say which membership it belongs to.
NO_INCARNATION = 0


class Admission(StrEnum):
    """The master's answer to a node's call."""

    ADMITTED = "admitted"
    #: A peer's report for a fenced node: taken, and no sign of that node's life.
    PEER_REPORT = "peer report"
    #: The node was declared dead, or the call is of an older membership: refused.
    FENCED = "fenced"


@dataclass(frozen=True, slots=True)
class Memberships:
    """Every node's current incarnation, and the nodes fenced now (declared dead, no new
    membership yet) with the incarnation they were fenced at."""

    current: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    fenced: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    #: The highest incarnation given or seen (the next one given is higher).
    last: int = 0

    def to_dict(self) -> dict[str, object]:
        """As saved in the master's snapshot (``from_dict`` reads it back)."""
        return {"current": dict(self.current), "fenced": dict(self.fenced), "last": self.last}

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> "Memberships":
        """The memberships ``to_dict`` saved (``ValueError`` naming the field when malformed)."""
        books: dict[str, dict[str, int]] = {}
        for name in ("current", "fenced"):
            book = data.get(name, {})
            if not isinstance(book, Mapping) or not all(
                isinstance(n, str) and isinstance(i, int) and i > NO_INCARNATION
                for n, i in book.items()
            ):
                raise ValueError(
                    f"members.{name} must map node ids to incarnations >= 1, got {book!r}"
                )
            books[name] = dict(book)
        last = data.get("last", 0)
        highest = max([*books["current"].values(), *books["fenced"].values()], default=0)
        if not isinstance(last, int) or last < highest:
            raise ValueError(f"members.last must be an integer >= {highest}, got {last!r}")
        return cls(MappingProxyType(books["current"]), MappingProxyType(books["fenced"]), last)

    def node_of(self, caller: str) -> str | None:
        """The known node ``caller`` is or belongs to (``<node>.<local rank>``), or None."""
        for node in (caller, caller.rpartition(".")[0]):
            if node and (node in self.current or node in self.fenced):
                return node
        return None


@dataclass(frozen=True, slots=True)
class HeartbeatAnswer:
    """What the agent's heartbeat gets: the state after it, the incarnation the agent uses
    from now (``fenced``: the one that was fenced), and whether it was fenced."""

    state: Memberships
    incarnation: int
    fenced: bool


def _with(m: Memberships, node: str, incarnation: int) -> Memberships:
    current = {**m.current, node: incarnation}
    fenced = {n: i for n, i in m.fenced.items() if n != node}
    return replace(
        m,
        current=MappingProxyType(current),
        fenced=MappingProxyType(fenced),
        last=max(m.last, incarnation),
    )


def heartbeat(m: Memberships, node: str, incarnation: int) -> HeartbeatAnswer:
    """The agent of ``node`` sends a heartbeat carrying ``incarnation``: 0 joins it as a new
    member; its current one (or one this master never saw) is taken; an older one, or the
    fenced one, is fenced. The answer's state is ``m`` itself when nothing changed (nothing
    to save)."""
    if incarnation == NO_INCARNATION:
        given = m.last + 1
        return HeartbeatAnswer(_with(m, node, given), given, False)
    if node in m.fenced or incarnation < m.current.get(node, NO_INCARNATION):
        return HeartbeatAnswer(m, incarnation, True)
    if m.current.get(node) == incarnation:
        return HeartbeatAnswer(m, incarnation, False)  # nothing changed: the same state
    return HeartbeatAnswer(_with(m, node, incarnation), incarnation, False)


def admission(
    m: Memberships, caller: str, incarnation: int, *, peer_report: bool = False
) -> Admission:
    """Whether the master takes a call of ``caller`` (a node or one of its processes) carrying
    ``incarnation``; ``peer_report``: the call is a shard report that a peer may make for it."""
    node = m.node_of(caller)
    if node is None:
        return Admission.ADMITTED
    if node in m.fenced:
        if peer_report and incarnation == NO_INCARNATION:
            return Admission.PEER_REPORT
        return Admission.FENCED
    if incarnation != NO_INCARNATION and incarnation < m.current[node]:
        return Admission.FENCED
    return Admission.ADMITTED


def declared_dead(m: Memberships, node: str) -> Memberships:
    """The master declared ``node`` dead while it may be alive (a heartbeat timeout): its
    membership is fenced until its agent joins again. Nothing changes for a node without a
    membership (no agent heartbeat: a training process, or a node already fenced): no agent
    of it would ever join again."""
    if node not in m.current:
        return m
    current = {n: i for n, i in m.current.items() if n != node}
    fenced = {**m.fenced, node: m.current[node]}
    return replace(m, current=MappingProxyType(current), fenced=MappingProxyType(fenced))


def fenced_message(node: str, incarnation: int) -> str:
    """The refusal a fenced node's call gets (``api.errors.NodeFencedError``)."""
    return (
        f"{NODE_FENCED}: node {node} (incarnation {incarnation}) was declared dead by the "
        "master (no heartbeat within the heartbeat timeout): its shards went back to the "
        "queue and it left the world; stop its workers without reporting their work, and "
        "join again as a new member"
    )
