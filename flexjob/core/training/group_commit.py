"""Group commit of an append-only log, decided: which caller writes (and syncs) the lines
queued so far, which waits for the commit in flight, and which may answer at once.

Positions count the lines queued since the log began. A caller's *target* is the position its
reply depends on: every line queued before it answers (its own, and any change it may have
seen). ``durable`` is how far the log is known to be on disk. One commit is in flight at a
time and writes every line queued when it starts (so at least its leader's target); the
callers that arrive meanwhile wait, and when it ends, the ones it covered are released and one
of the others is to lead the next commit, which writes all of theirs. So concurrent callers
share syncs, each waiter is woken about once, and none answers before a commit covering its
target ended. With ``hand_over`` that one holds the slot at once (an event loop starts its
commit in the same callback); without, the slot is free and it asks again when it runs (a
thread that must first be scheduled: a caller that arrives before it leads instead, and its
commit covers the woken one's lines too). A claim (a journal rotation) is handed the slot,
before any waiter.

No I/O and no clock: ``master.persistence`` drives it with one lock per waiting thread, and
``rpc.aio_server`` with futures on its event loop.
"""

from dataclasses import dataclass, field
from enum import Enum
from typing import Generic, TypeVar

W = TypeVar("W")


class CommitStep(Enum):
    #: The target is durable: answer.
    DONE = "done"
    #: No commit is in flight: start one now, writing every line queued, then ``end`` it.
    LEAD = "lead"
    #: A commit is in flight: the waiter is released by an ``end`` (``Ended``).
    WAIT = "wait"


@dataclass(frozen=True, slots=True)
class Ended(Generic[W]):
    """What a commit's ``end`` released: the waiters whose targets are durable (``done``:
    they answer), those a failed commit leaves uncovered (``failed``: its error is theirs, or
    they ask again), and the one to lead the next commit (``leader``: a claimant first, else
    the longest waiting; None: nobody waits). ``holds_slot``: the leader holds the slot (a
    claimant, or with ``hand_over``); else it asks again."""

    done: list[W]
    failed: list[W]
    leader: W | None
    holds_slot: bool = False


@dataclass
class GroupCommit(Generic[W]):
    hand_over: bool = True
    durable: int = 0
    in_flight: bool = False
    _waiting: list[tuple[int, W]] = field(default_factory=list)
    _claims: list[W] = field(default_factory=list)

    def ask(self, target: int, waiter: W) -> CommitStep:
        """What a caller whose reply depends on ``target`` does now; ``waiter`` is remembered
        only when told to ``WAIT``, until an ``end`` releases it."""
        if target <= self.durable:
            return CommitStep.DONE
        if self.in_flight:
            self._waiting.append((target, waiter))
            return CommitStep.WAIT
        self.in_flight = True
        return CommitStep.LEAD

    def claim(self, waiter: W | None = None) -> bool:
        """Take the commit slot whatever is durable (True), or be handed it by the end of the
        commit in flight (False: ``waiter``, if given, becomes an ``Ended.leader``); ``end``
        gives it back."""
        if not self.in_flight:
            self.in_flight = True
            return True
        if waiter is not None:
            self._claims.append(waiter)
        return False

    def end(self, durable: int | None) -> Ended[W]:
        """The commit in flight ended, the log durable up to ``durable`` (None: it failed and
        made nothing more durable)."""
        if not self.in_flight:
            raise RuntimeError("GroupCommit.end without a commit in flight")
        if durable is not None:
            self.durable = max(self.durable, durable)
        done = [w for t, w in self._waiting if t <= self.durable]
        left = [(t, w) for t, w in self._waiting if t > self.durable]
        failed = [w for _, w in left] if durable is None else []
        self._waiting = [] if durable is None else left
        leader: W | None = None
        self.in_flight = False
        if self._claims:
            leader, self.in_flight = self._claims.pop(0), True
        elif self._waiting:  # not waiting now: it leads, or asks again
            leader, self.in_flight = self._waiting.pop(0)[1], self.hand_over
        return Ended(done, failed, leader, self.in_flight)

    @property
    def waiting(self) -> int:
        """Waiters and claimants not released yet."""
        return len(self._waiting) + len(self._claims)
