"""The job master's node-watch rule: from snapshots of its job's replicas to what it must act on.

The master hears from its replicas through agent heartbeats and failure reports; a replica that
never started (Pending), was evicted or deleted, or was killed with its agent (``OOMKilled``)
says nothing. ``observe`` compares what the platform reports now with what it reported before
and returns:

* ``GONE``: a replica incarnation (one uid) that failed, is being deleted, or vanished while
  active. The master hands its shards back at once and records ``reason`` as the node's last
  failure (the text names the platform's reason and exit code, e.g. ``OOMKilled (exit code
  137)``, which ``core.planner.oom`` recognises). Not reported while a newer incarnation of the
  same replica is Running: that one's agent may already be in the world under the same node id
  (its own failure reports and the heartbeat timeout cover it then). Succeeded replicas are
  finished, not gone.
* ``PENDING_TOO_LONG``: a replica still Pending ``pending_timeout`` seconds after it was
  created (once per incarnation).

Each incarnation is reported at most once per kind. The job master's own replica is skipped.
Pure: no I/O; ``master.node_watcher`` feeds it and acts.
"""

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from flexjob.api import ReplicaPhase, ReplicaType
from flexjob.api.roles import MASTER_TYPE
from flexjob.core.replicas import Replica


class NodeWatchKind(StrEnum):
    GONE = "gone"
    PENDING_TOO_LONG = "pending_too_long"


@dataclass(frozen=True, slots=True)
class NodeWatchEvent:
    """What happened to one replica; ``node_id`` is the name its agent uses (``worker-1``)."""

    kind: NodeWatchKind
    node_id: str
    replica_type: ReplicaType
    replica_index: int
    replica: str
    reason: str
    exit_code: int | None = None


@dataclass(frozen=True, slots=True)
class NodeWatchState:
    """What the rule remembers between two snapshots: the incarnations it last saw active
    (key → replica) and the (key, kind) pairs it already reported."""

    active: dict[str, Replica] = field(default_factory=dict)
    reported: frozenset[tuple[str, NodeWatchKind]] = frozenset()


def incarnation(replica: Replica) -> str:
    """One life of a replica: its uid, else its name and creation time."""
    return replica.uid or f"{replica.name}@{replica.created.isoformat() if replica.created else ''}"


def exit_reason(replica: Replica) -> str:
    """Why a replica ended, as the master records it: ``replica worker-1 OOMKilled (exit code
    137): <last line of its message>``."""
    what = replica.reason or ("deleted" if replica.deleting else replica.phase.value)
    text = f"replica {replica.short_name} {what}"
    if replica.exit_code is not None:
        text += f" (exit code {replica.exit_code})"
    last = replica.message.strip().splitlines()[-1:] if replica.message else []
    if last:
        text += f": {last[0][:200]}"
    return text


def _event(kind: NodeWatchKind, replica: Replica, reason: str) -> NodeWatchEvent:
    return NodeWatchEvent(
        kind,
        replica.short_name,
        replica.type,
        replica.index,
        replica.name,
        reason,
        replica.exit_code,
    )


def observe(
    state: NodeWatchState,
    replicas: Iterable[Replica],
    now: datetime,
    pending_timeout: float | None,
) -> tuple[NodeWatchState, list[NodeWatchEvent]]:
    """The next state and the events of this snapshot (``replicas``: every replica of the job
    the platform lists now). ``pending_timeout`` None or <= 0: pending replicas are not
    reported."""
    current = {incarnation(r): r for r in replicas if r.type is not MASTER_TYPE}
    running_names = {
        r.name: k for k, r in current.items() if r.phase is ReplicaPhase.RUNNING and not r.deleting
    }
    reported = set(state.reported)
    events: list[NodeWatchEvent] = []

    def report(key: str, kind: NodeWatchKind, replica: Replica, reason: str) -> None:
        if (key, kind) in reported:
            return
        if kind is NodeWatchKind.GONE and running_names.get(replica.name, key) != key:
            return  # a newer incarnation runs under the same node id
        reported.add((key, kind))
        events.append(_event(kind, replica, reason))

    for key, replica in current.items():
        if replica.phase is ReplicaPhase.FAILED or (replica.deleting and replica.active):
            report(key, NodeWatchKind.GONE, replica, exit_reason(replica))
        elif (
            replica.phase is ReplicaPhase.PENDING
            and pending_timeout
            and pending_timeout > 0
            and replica.created is not None
            and (now - replica.created).total_seconds() >= pending_timeout
        ):
            waited = (now - replica.created).total_seconds()
            reason = f"replica {replica.short_name} pending for {waited:.0f} s"
            report(key, NodeWatchKind.PENDING_TOO_LONG, replica, reason)
    for key, replica in state.active.items():
        if key not in current:
            report(key, NodeWatchKind.GONE, replica, f"replica {replica.short_name} deleted")
    active = {k: r for k, r in current.items() if r.active and not r.deleting}
    # What was reported stays remembered (a few entries per incarnation over the job's life).
    return NodeWatchState(active, frozenset(reported)), events
