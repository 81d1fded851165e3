"""Replicas a reconcile pass sent creates for that no watch or list has shown yet: what a pass
counts as existing (Kubernetes controllers' "expectations").

A pass that does not wait for its creates (``operator.create_dispatch``) leaves them in flight
when it ends; the next pass of the job may start before their answers or watch events came. It
counts each such replica as existing, a Pending replica without a uid, unless a pod of that name
is observed (it holds the index then), so that no pass creates a replica twice. An expectation
ends when its create is answered (the answer puts the pod in the cache), when its dispatch ends
without creating it (refused, already there, never sent after an earlier refusal: the watch and
the next list say what exists), or after ``EXPECTATION_TTL`` seconds, so that a lost answer
cannot wedge a job. It does not end when a watch event or a list shows a pod of that name: that
may be another incarnation (made by an operator before a restart) which may go away before the
create lands. An operator that restarts has none: what the API lists is the truth.

Plain decisions, no I/O; the operator's ``WatchCache`` keeps them per job under its lock.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from flexjob.core.replicas import Replica, ReplicaRequest

#: Seconds after which an expectation no longer counts (Kubernetes' ExpectationsTimeout).
EXPECTATION_TTL = 300.0


@dataclass(frozen=True, slots=True)
class Expected:
    """A replica whose create dispatch ``run`` sent (or will send) at ``since`` (seconds on
    the cache's clock); ``replica`` is what a pass counts meanwhile."""

    replica: Replica
    since: float
    run: int


def expect(request: ReplicaRequest, since: float, run: int) -> Expected:
    """The expectation for one create: the replica counts as Pending, with no uid yet."""
    return Expected(request.pending(), since, run)


def counted(
    observed: Sequence[Replica],
    expected: Mapping[str, Expected],
    now: float,
    ttl: float = EXPECTATION_TTL,
) -> tuple[list[Replica], dict[str, Expected]]:
    """What a pass counts as existing: every observed replica, then each expected one that is
    not observed (by name: a pod of that name, whatever its incarnation, holds the index) and
    not older than ``ttl``. Also the expectations still open (the expired ones dropped)."""
    names = {r.name for r in observed}
    still = {name: e for name, e in expected.items() if now - e.since <= ttl}
    return [*observed, *(e.replica for n, e in still.items() if n not in names)], still


def answered(expected: Mapping[str, Expected], name: str, run: int) -> dict[str, Expected]:
    """``expected`` once dispatch ``run``'s create of ``name`` was answered (its pod is
    observed from now on): a later dispatch's expectation of the same name stays."""
    return settled(expected, [name], run)


def settled(
    expected: Mapping[str, Expected], names: Sequence[str], run: int
) -> dict[str, Expected]:
    """``expected`` without those of ``names`` that dispatch ``run`` sent: its end clears only
    its own (a later pass may expect the same name again once the first replica is gone)."""
    gone = set(names)
    return {n: e for n, e in expected.items() if n not in gone or e.run != run}
