"""When and how the master's state reaches disk: journal lines and snapshots, both
group-committed, and the restore (snapshot, then journal replay) when a master starts.

A change that must survive a restart is either one journal line (``append``) or a note that the
next snapshot is due (``note_change``). Both are written by ``flush``, which the call that made
the change runs after releasing the lock and before it answers. Journal lines are group-
committed (``core.training.group_commit``): the call that finds no commit in flight writes
every line queued so far in one ``write`` and, when asked for, one ``fsync``; the calls that
queue lines meanwhile wait for it to end, then one of them writes all of theirs with the next
``fsync``; a call answers once a commit covering every line queued before it answered ended.
So nothing is answered before it is on disk, and concurrent calls share their ``fsync``s.
The journal starts afresh with every snapshot, and a snapshot is due every ``snapshot_every``
lines. That periodic snapshot (compaction: the journal already holds those lines) is taken by
the one call that finds it due, and journal lines go on into the fresh journal while the
snapshot file is written, so the calls around it neither wait for it nor take it twice. A server
that runs its calls on an event loop (``rpc.aio_server``) defers their flushes on its loop
thread: it runs ``flush_inline`` (journal lines only, no ``fsync``) there, or else batches its
calls' targets (``mark``) itself and has ``commit`` (or ``flush``, a snapshot due) run on a
writer thread. Not for the file format (``master.state_file``) or what a snapshot holds
(``master.snapshot``).

``restore`` first takes the job state's lock (a second master refuses to start) and makes this
master's generation one more than the snapshot's; every snapshot it saves carries it
(``master.state_file``).
"""

import logging
import threading
from collections.abc import Callable
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar

from flexjob.core.training.group_commit import CommitStep, GroupCommit
from flexjob.core.training.rendezvous import Rendezvous
from flexjob.master.datasets import DatasetBook
from flexjob.master.health import HeartbeatTracker
from flexjob.master.kv import KVStore, is_kv_entry
from flexjob.master.logs import event
from flexjob.master.members import MemberBook
from flexjob.master.snapshot import (
    dataset_from_json,
    restore_snapshot,
    saved_generation,
    with_generation,
)
from flexjob.master.state_file import (
    StateFile,
    StateLostError,
    check_not_lost,
    journal_line,
    mark_started,
)
from flexjob.master.stats import StatsBook

log = logging.getLogger(__name__)


class Persistence:
    """Saves through ``state`` (none: the master keeps nothing). ``snapshot`` renders the whole
    state; it is called holding ``lock``, the lock that guards that state."""

    def __init__(
        self,
        state: StateFile | None,
        *,
        snapshot_every: int,
        lock: threading.RLock,
        snapshot: Callable[[], str],
    ) -> None:
        self.state = state
        self._snapshot_every = snapshot_every
        self._lock = lock
        self._snapshot = snapshot
        self._changes = 0  # bumped by every change to save; guarded by lock
        self._saved = 0  # changes covered by the state file; guarded by _snapshot_lock
        # Journal lines written (durable with fsync): who writes them, who waits; guarded by
        # _commits. The commit in flight holds the journal (its writes, its rotation).
        # The slot is not held for a woken thread: one arriving first leads (hand_over off).
        self._group: GroupCommit[_Turn] = GroupCommit(hand_over=False)
        self._commits = threading.Lock()
        self._snapshot_lock = threading.Lock()  # one snapshot at a time, rotation to drop
        self._compact_due = False  # snapshot_every lines journaled: a snapshot, no hurry
        self._journal_len = 0  # entries journaled since the last snapshot
        self._queued: list[str] = []  # journal lines not written yet; guarded by lock
        self._appended = 0  # journal lines queued so far; guarded by lock
        self._local = threading.local()  # .deferred: this thread's calls do not flush

    def note_change(self) -> None:
        """Note a change to snapshot; ``flush`` (after the lock is released) writes it."""
        self._changes += 1

    def append(self, entry: dict[str, Any] | None) -> None:
        """Queue one journal line (none for ``None``; call holding the lock); ``flush`` writes
        it before the call that made the change answers. A snapshot is due every
        ``snapshot_every`` lines."""
        if self.state is None or entry is None:
            return
        self._queued.append(journal_line(entry))
        self._appended += 1
        self._journal_len += 1
        if self._journal_len >= self._snapshot_every:
            self._compact_due = True

    def mark(self) -> int:
        """The journal position a reply given now depends on: every line queued so far."""
        return self._appended

    def flush(self, lines: int | None = None) -> None:
        """Write the journal lines queued so far (up to ``lines``, a ``mark``, at least), then
        a snapshot if a change is not covered yet or one is due (call it without holding the
        lock). A caller whose lines a concurrent commit wrote returns without writing."""
        lines, changes = self._appended if lines is None else lines, self._changes
        if self.state is None:
            return
        self.state.check_held()  # a fenced master acknowledges nothing, written or not
        self._commit(lines)
        if self._saved < changes:
            with self._snapshot_lock:  # our change must be in a snapshot before we answer
                self._save_snapshot(changes)
        elif self._compact_due and self._snapshot_lock.acquire(blocking=False):
            try:  # else another call is taking it: nothing of ours depends on it
                self._save_snapshot(changes)
            finally:
                self._snapshot_lock.release()

    def commit(self) -> int:
        """Write every journal line queued so far (sharing a commit in flight or the next
        one); the position now durable. For an event loop's writer thread: no snapshot."""
        if self.state is None:
            return self._appended
        self.state.check_held()
        target = self._appended
        self._commit(target)
        return target

    def snapshot_due(self) -> bool:
        """Whether a ``flush`` now would take a snapshot (else ``commit`` is all it does)."""
        return self.state is not None and (self._saved < self._changes or self._compact_due)

    def check_held(self) -> None:
        """``MasterFencedError`` when this master lost the job state's lock."""
        if self.state is not None:
            self.state.check_held()

    def flush_inline(self) -> bool:
        """``flush`` when all it has to do is write journal lines without ``fsync`` (to the page
        cache: cheaper than handing it to a thread); False, writing nothing, when a snapshot or
        an ``fsync`` is due or a commit is in flight (then ``commit`` or ``flush`` on a thread
        that may block). For an event loop's calls."""
        if self.state is None:
            return True
        if self.state.fsync or self.snapshot_due():
            return False
        self.state.check_held()
        with self._commits:
            if self._group.durable >= self._appended:
                return True
            if not self._group.claim():
                return False
        self._write_claimed()
        return True

    def defer_flushes_here(self) -> None:
        """Calls on this thread (an event loop's) leave their ``flush`` to their caller
        (``flushes_deferred``): ``flush_inline``, or ``flush`` on another thread."""
        self._local.deferred = True

    def flushes_deferred(self) -> bool:
        return getattr(self._local, "deferred", False)

    def _commit(self, target: int) -> None:
        """Return once the journal lines up to ``target`` are written: by the commit in
        flight, or by this caller leading the next one (``core.training.group_commit``)."""
        while True:
            turn = _Turn()
            with self._commits:
                step = self._group.ask(target, turn)
            if step is CommitStep.WAIT:
                step = turn.wait()  # DONE, LEAD, or WAIT: ask again
            if step is CommitStep.DONE:
                return
            if step is CommitStep.LEAD:
                self._write_claimed()
                return

    def _write_claimed(self, snapshot: bool = False) -> tuple[int, str]:
        """Holding the commit slot: write every queued line, then give the slot back and wake
        the waiters (a failed write puts the lines back for the next commit). With
        ``snapshot``, the snapshot is rendered where the queue is taken and the journal rotated
        after the write: the changes it covers and its text (else ``(0, "")``)."""
        assert self.state is not None
        durable: int | None = None
        changes, text = 0, ""
        with self._lock:
            queued, self._queued = self._queued, []
            appended = self._appended
            if snapshot:
                changes, text = self._changes, self._render()
                self._journal_len = 0
                self._compact_due = False
        try:
            self.state.append_lines(queued)  # with a snapshot: the journal it replaces
            durable = appended
            if snapshot:
                self.state.rotate_journal()  # entries from now on go to a fresh journal
        except BaseException:
            if durable is None:  # not written: the next commit writes them first
                with self._lock:
                    self._queued[:0] = queued
            if snapshot:
                self._compact_due = True  # still due: the next flush tries again
            raise
        finally:
            with self._commits:
                ended = self._group.end(durable)
            if ended.leader is not None:  # first: the next commit waits for it
                ended.leader.wake(CommitStep.LEAD if ended.holds_slot else CommitStep.WAIT)
            for turn in ended.done:
                turn.wake(CommitStep.DONE)
            for turn in ended.failed:  # they ask again: one leads the next try
                turn.wake(CommitStep.WAIT)
        return changes, text

    def _save_snapshot(self, changes: int) -> None:
        """Take a snapshot unless one covering ``changes`` (and no compaction due) was saved
        meanwhile (holding ``_snapshot_lock``)."""
        assert self.state is not None
        if self._saved >= changes and not self._compact_due:
            return
        turn = _Turn()
        with self._commits:
            claimed = self._group.claim(turn)
        if not claimed:  # the journal is the commit in flight's until it hands it over
            turn.wait()
        changes, text = self._write_claimed(snapshot=True)
        # Journal lines go on into the fresh journal meanwhile: a kill before the rename
        # leaves the old snapshot and both journals, which replay to the same state.
        self.state.save_text(text)
        self.state.drop_old_journal()
        self._saved = changes

    def _render(self) -> str:
        """The snapshot, with this master's generation (call holding the lock)."""
        assert self.state is not None
        return with_generation(self._snapshot(), self.state.generation)

    def close(self) -> None:
        """Write what is not saved yet, release the journal and the job state's lock."""
        if self.state is None:
            return
        try:
            self.note_change()
            self.flush()
        finally:
            self.state.release()

    def restore(
        self,
        job: str,
        datasets: DatasetBook,
        rdzv: Rendezvous,
        stats: StatsBook,
        addresses: dict[str, str],
        kv: KVStore,
        health: HeartbeatTracker,
        members: MemberBook,
    ) -> None:
        """Load the saved snapshot and replay the journal over it into the given parts, then
        save one snapshot of the result; a first master saves an empty one and leaves the
        marker. Call before anything is served."""
        if self.state is None:
            return
        self.state.lock()
        try:
            replayed = self._restore(datasets, rdzv, stats, addresses, kv, health, members)
        except BaseException:
            self.state.release()  # a master that does not start holds nothing
            raise
        if replayed is None:
            return
        p = [m.progress() for m in datasets.managers.values()]
        event(
            log,
            "state_restored",
            job,
            generation=self.state.generation,
            round=rdzv.round,
            journal_entries=replayed,
            shards_done=sum(x.shards_done for x in p),
            members=len(members.state.current),
            fenced=len(members.state.fenced),
        )

    def _restore(self, datasets: DatasetBook, *parts: Any) -> int | None:
        """``restore`` once the lock is taken (``parts``: its rendezvous, stats, addresses, KV,
        heartbeats and memberships, in that order); the journal entries replayed, None for a
        first master."""
        rdzv, stats, addresses, kv, health, memberships = parts
        assert self.state is not None
        data, journal = self.state.load()
        self.state.generation = saved_generation(data) + 1
        if data is None and not journal:
            check_not_lost(self.state.path)  # a job that ran here before must have its state
            self.state.save_text(self._render())
            mark_started(self.state.path)
            return None
        if data is not None:
            for saved in data.get("datasets", {}).values():  # before their progress
                datasets.add_registered(dataset_from_json(saved))
            members = restore_snapshot(
                data, datasets.managers, rdzv, stats, addresses, kv, memberships
            )
            health.track(members)
            lost = sorted(set(data["shards"]) - set(datasets.managers))
            if lost:
                raise StateLostError(
                    f"{self.state.path}: progress of dataset(s) {lost} saved, but neither the "
                    "job nor a registration declares them"
                )
        for entry in journal:
            self._replay(entry, datasets, kv)
        # Shard holders that never come back are declared dead after the heartbeat timeout.
        health.track([w for m in datasets.managers.values() for w in m.doing().values()])
        self.state.save_text(self._render())  # nothing serves yet: no concurrent reports
        self.state.drop_journals()
        return len(journal)

    def _replay(self, entry: dict[str, Any], datasets: DatasetBook, kv: KVStore) -> None:
        """Apply one journal entry: a KV change, a registration, a hand-out or a report."""
        assert self.state is not None
        if is_kv_entry(entry):
            kv.replay(entry)
            return
        if "r" in entry:
            dataset = dataset_from_json(entry["r"])
            if not datasets.knows(dataset.name):
                datasets.add_registered(dataset)
            return
        mgr = datasets.managers.get(str(entry["d"]))
        if mgr is None:
            raise StateLostError(
                f"{self.state.journal_path}: shard entries for dataset {entry['d']!r}, which "
                "neither the job nor a registration declares"
            )
        if entry.get("g"):
            mgr.hand_out(int(entry["s"]), str(entry["w"]))
        else:
            mgr.report_done(int(entry["s"]), str(entry["w"]))


class _Turn:
    """A thread waiting for a commit: blocked on its own lock (one wake-up, no herd) until
    the commit's end tells it what to do next."""

    __slots__ = ("_lock", "_step")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._lock.acquire()
        self._step = CommitStep.WAIT

    def wait(self) -> CommitStep:
        self._lock.acquire()
        return self._step

    def wake(self, step: CommitStep) -> None:
        self._step = step
        self._lock.release()


class _Persisting(Protocol):
    @property
    def persistence(self) -> "Persistence": ...


P = ParamSpec("P")
R = TypeVar("R")
S = TypeVar("S", bound=_Persisting)


def saves(method: Callable[Concatenate[S, P], R]) -> Callable[Concatenate[S, P], R]:
    """After ``method`` returns or raises (its lock released), write what is not saved yet
    before answering (a method of an object that holds a ``Persistence``: ``MasterService``).
    Even after a refusal: it may rest on a change not saved yet (a node the health check
    fenced a moment ago), which must be on disk before anyone is told, as ``rpc.aio_server``
    does; a fenced master's flush error is then the answer."""

    def wrapper(self: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(self, *args, **kwargs)
        finally:
            if not self.persistence.flushes_deferred():  # else its caller saves (aio_server)
                self.persistence.flush()

    wrapper.__doc__ = method.__doc__
    return wrapper
