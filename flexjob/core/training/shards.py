"""ShardManager: hands out shards of sample indices to workers and tracks them to DONE.

Queues: TODO → DOING (marked with the worker and the time) → DONE. A dead worker's DOING shards
and slow shards (DOING longer than ``slow_shard_timeout``) go back to the front of TODO. A report
is counted once, and only from a worker that may hold the shard: the worker it is DOING for,
or the worker it was last taken back from (a late report of a slow shard: it counts even once the
shard went to another worker). A checkpoint keeps both (``doing``, ``claimable``), and every
hand-out is journaled with its holder (``hand_out`` replays it), so a restored manager knows
them too; only a checkpoint written before it kept ``claimable`` leaves the holders of its TODO
shards unknown, and then — for those and for epochs it had not opened — any worker. Reports
of a shard another worker holds, of a shard never handed out, or of an epoch not opened yet
are rejected, so a fake report cannot finish a job, before or after a restore. A retried report
by the worker whose report counted is acknowledged, not re-counted. Epochs are cut lazily: the
next epoch's shards are queued once TODO runs dry. ``checkpoint()`` / ``restore()`` write and
read the progress as JSON; DOING shards come back DOING for their holder. No I/O: the caller
persists the JSON and injects the clock.
"""

import json
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from flexjob.core.training.splitters import ShardSpec, Splitter

CHECKPOINT_VERSION = 1
ANY_WORKER = ""


class ShardState(StrEnum):
    """Where a shard is: TODO → DOING → DONE, and DOING → TODO on death or timeout."""

    TODO = "todo"
    DOING = "doing"
    DONE = "done"


class ReportResult(StrEnum):
    """What a report did: COUNTED the shard now; ALREADY_COUNTED it earlier for the same
    worker (a retried report); REJECTED (done by another report, held by another worker, not
    handed out, or an unknown shard)."""

    COUNTED = "counted"
    ALREADY_COUNTED = "already_counted"
    REJECTED = "rejected"

    @property
    def accepted(self) -> bool:
        """What the worker is told: its shard counts (now or from its earlier report)."""
        return self is not ReportResult.REJECTED


@dataclass(frozen=True, slots=True)
class Shard:
    """A shard handed to a worker. ``shard_id`` is unique over all epochs."""

    shard_id: int
    epoch: int
    spec: ShardSpec


@dataclass(frozen=True, slots=True)
class DatasetProgress:
    """How far a dataset is: the epoch, and shards and samples done of the total."""

    epoch: int
    epochs: int
    shards_done: int
    shards_total: int
    samples_done: int
    samples_total: int


@dataclass(frozen=True, slots=True)
class ShardProgress(DatasetProgress):
    """``DatasetProgress`` and how many shards are to do and being done."""

    todo: int
    doing: int

    @property
    def finished(self) -> bool:
        return self.shards_done == self.shards_total


@dataclass(slots=True)
class _Doing:
    worker: str
    since: float


class ShardManager:
    """Dynamic sharding of one dataset over ``epochs`` epochs."""

    def __init__(
        self,
        splitter: Splitter,
        *,
        epochs: int = 1,
        slow_shard_timeout: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        recent_reports: int = 256,
    ) -> None:
        if epochs < 1:
            raise ValueError(f"epochs must be a positive integer, got {epochs}")
        if slow_shard_timeout is not None and slow_shard_timeout <= 0:
            raise ValueError(f"slow_shard_timeout must be > 0 seconds, got {slow_shard_timeout}")
        self._splitter = splitter
        self._per_epoch = splitter.num_shards
        self._epochs = epochs
        self._timeout = slow_shard_timeout
        self._clock = clock
        self._recent_limit = recent_reports
        self._reset()

    def _reset(self) -> None:
        self._next_epoch = 0
        self._specs: dict[int, Sequence[ShardSpec]] = {}
        self._todo: deque[int] = deque()
        self._doing: dict[int, _Doing] = {}
        self._done: dict[int, _DoneSet] = {}
        self._completed: set[int] = set()
        self._samples_done = 0
        self._recent: OrderedDict[int, str] = OrderedDict()
        # Shards a former holder may still report (until done, even once handed out again):
        # the worker they were taken back from, or ANY_WORKER for those in TODO since a
        # restore (their holder is unknown).
        self._claimable: dict[int, str] = {}
        self._after_restore = False  # restored from an older checkpoint: holders unknown
        # DOING shards that came back from a saved state with their holder; that holder may
        # not know it holds them (the answer that handed one out can die with the old master).
        self._restored_doing: dict[int, str] = {}

    # ---- queries ----
    @property
    def epochs(self) -> int:
        return self._epochs

    @property
    def opened_epochs(self) -> int:
        """How many epochs have had their shards queued so far."""
        return self._next_epoch

    @property
    def shards_per_epoch(self) -> int:
        return self._per_epoch

    @property
    def finished(self) -> bool:
        return len(self._completed) == self._epochs

    def state_of(self, shard_id: int) -> ShardState:
        epoch, pos = self._locate(shard_id)
        if epoch in self._completed or (epoch in self._done and pos in self._done[epoch]):
            return ShardState.DONE
        return ShardState.DOING if shard_id in self._doing else ShardState.TODO

    def doing(self) -> dict[int, str]:
        """DOING shard ids and the worker each is marked with."""
        return {sid: d.worker for sid, d in self._doing.items()}

    def progress(self) -> ShardProgress:
        shards_done = len(self._completed) * self._per_epoch + sum(
            len(done) for e, done in self._done.items() if e not in self._completed
        )
        return ShardProgress(
            epoch=max(self._next_epoch - 1, 0),
            epochs=self._epochs,
            shards_done=shards_done,
            shards_total=self._epochs * self._per_epoch,
            samples_done=self._samples_done,
            samples_total=self._epochs * self._splitter.num_samples,
            todo=len(self._todo) + (self._epochs - self._next_epoch) * self._per_epoch,
            doing=len(self._doing),
        )

    # ---- transitions ----
    def get_shard(self, worker: str) -> Shard | None:
        """The next TODO shard, now DOING for ``worker``; ``None`` when TODO is empty (check
        ``finished``: if false, shards are still DOING elsewhere and may come back).

        A worker holds one shard at a time: one that asks while it holds a shard restored
        from a saved state gets that shard again (the old master's answer was lost)."""
        for sid, holder in list(self._restored_doing.items()):
            doing = self._doing.get(sid)
            if doing is None or doing.worker != holder:
                del self._restored_doing[sid]  # reported or given back since
            elif holder == worker:
                del self._restored_doing[sid]
                epoch, pos = divmod(sid, self._per_epoch)
                return Shard(sid, epoch, self._specs[epoch][pos])
        self.expire_slow_shards()
        if not self._todo and self._next_epoch < self._epochs:
            self._open_epoch(self._next_epoch)
        if not self._todo:
            return None
        shard_id = self._todo.popleft()
        self._doing[shard_id] = _Doing(worker, self._clock())
        epoch, pos = divmod(shard_id, self._per_epoch)
        return Shard(shard_id, epoch, self._specs[epoch][pos])

    def report_done(self, shard_id: int, worker: str) -> ReportResult:
        """Mark a shard DONE; see ``ReportResult``. A shard is counted at most once, and only
        from a worker that may hold it (module doc)."""
        if not 0 <= shard_id < self._epochs * self._per_epoch:
            return ReportResult.REJECTED
        epoch, pos = divmod(shard_id, self._per_epoch)
        if epoch >= self._next_epoch and not self._after_restore:  # never handed out
            return ReportResult.REJECTED
        while self._next_epoch <= epoch:  # handed out before a restart that lost its epoch
            opened = self._next_epoch
            self._open_epoch(opened)
            base = opened * self._per_epoch
            self._claimable.update(dict.fromkeys(range(base, base + self._per_epoch), ANY_WORKER))
        if epoch in self._completed or pos in self._done[epoch]:
            if self._recent.get(shard_id) == worker:
                return ReportResult.ALREADY_COUNTED
            return ReportResult.REJECTED
        doing = self._doing.get(shard_id)
        holds = doing is not None and doing.worker == worker
        if not holds and self._claimable.get(shard_id) not in (worker, ANY_WORKER):
            return ReportResult.REJECTED
        self._claimable.pop(shard_id, None)
        if doing is not None:
            del self._doing[shard_id]
        else:
            self._todo.remove(shard_id)  # a late report of a shard that went back to TODO
        done = self._done[epoch]
        done.add(pos)
        self._samples_done += self._specs[epoch][pos].size
        self._remember(shard_id, worker)
        if len(done) == self._per_epoch:
            self._completed.add(epoch)
            del self._done[epoch], self._specs[epoch]
        return ReportResult.COUNTED

    def hand_out(self, shard_id: int, worker: str) -> bool:
        """Replay a hand-out (from a journal): the shard ``shard_id`` is DOING for ``worker``
        (one DOING for another worker was taken back from it meanwhile: that one may still
        report it). False when the shard is done or DOING for ``worker`` already."""
        if not 0 <= shard_id < self._epochs * self._per_epoch:
            return False
        epoch, pos = divmod(shard_id, self._per_epoch)
        while self._next_epoch <= epoch:
            self._open_epoch(self._next_epoch)
        if epoch in self._completed or pos in self._done[epoch]:
            return False
        held = self._doing.get(shard_id)
        if held is not None and held.worker == worker:
            return False
        if held is not None:  # taken back from its holder (a slow shard) since: not journaled
            self._claimable[shard_id] = held.worker
        else:
            self._todo.remove(shard_id)
        self._doing[shard_id] = _Doing(worker, self._clock())
        self._restored_doing[shard_id] = worker
        return True

    def recover(self, worker: str) -> list[int]:
        """Put ``worker``'s DOING shards back at the front of TODO (the worker died)."""
        ids = [sid for sid, d in self._doing.items() if d.worker == worker]
        self._requeue(ids)
        return ids

    def give_back(self, shard_ids: Iterable[int], worker: str) -> list[int]:
        """Put the shards of ``shard_ids`` that are DOING for ``worker`` back at the front of
        TODO (it leased them and will not train them); the ids put back."""
        ids = [s for s in shard_ids if (d := self._doing.get(s)) is not None and d.worker == worker]
        self._requeue(ids)
        return ids

    def expire_slow_shards(self) -> list[int]:
        """Put shards DOING for longer than the slow-shard timeout back at the front of TODO."""
        if self._timeout is None or not self._doing:
            return []
        deadline = self._clock() - self._timeout
        expired: list[int] = []
        for sid, d in self._doing.items():  # oldest first: dispatch order
            if d.since > deadline:
                break
            expired.append(sid)
        self._requeue(expired)
        return expired

    # ---- persistence ----
    def checkpoint(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"))

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": CHECKPOINT_VERSION,
            "splitter": self._splitter.describe(),
            "epochs": self._epochs,
            "next_epoch": self._next_epoch,
            "completed": sorted(self._completed),
            "done": {str(e): done.runs() for e, done in self._done.items()},
            "samples_done": self._samples_done,
            "recent": [[sid, w] for sid, w in self._recent.items()],
            "doing": [[sid, d.worker] for sid, d in self._doing.items()],
            "claimable": [[sid, w] for sid, w in self._claimable.items()],
        }

    def restore(self, checkpoint: str | dict[str, Any]) -> None:
        """Load progress from ``checkpoint()``; what was DOING stays DOING for its worker
        (its slow-shard clock starts again), so a worker that outlived a master restart
        reports it and nobody else trains it."""
        data = json.loads(checkpoint) if isinstance(checkpoint, str) else checkpoint
        if data.get("version") != CHECKPOINT_VERSION:
            raise ValueError(f"checkpoint version must be {CHECKPOINT_VERSION}")
        if data.get("splitter") != self._splitter.describe():
            raise ValueError("checkpoint splitter does not match this dataset's splitter")
        if data.get("epochs") != self._epochs:
            raise ValueError(f"checkpoint epochs must be {self._epochs}, got {data.get('epochs')}")
        self._reset()
        self._completed = {int(e) for e in data["completed"]}
        for epoch in range(int(data["next_epoch"])):
            if epoch not in self._completed:
                done = set(_expand(data["done"].get(str(epoch), [])))
                self._open_epoch(epoch, done)
        self._next_epoch = int(data["next_epoch"])
        self._samples_done = int(data["samples_done"])
        for sid, worker in data["recent"]:
            self._remember(int(sid), str(worker))
        for sid, worker in data.get("doing", []):
            self.hand_out(int(sid), str(worker))
        if "claimable" in data:  # the former holders: only they may still report
            self._claimable = {int(sid): str(w) for sid, w in data["claimable"]}
            return
        # A checkpoint from before ``claimable`` was kept: the holder (if any) of a shard in
        # TODO is unknown, so any worker's late report of one counts.
        self._claimable = dict.fromkeys(self._todo, ANY_WORKER)
        self._after_restore = True

    # ---- internals ----
    def _locate(self, shard_id: int) -> tuple[int, int]:
        if not 0 <= shard_id < self._epochs * self._per_epoch:
            raise KeyError(f"unknown shard id {shard_id}")
        epoch, pos = divmod(shard_id, self._per_epoch)
        return epoch, pos

    def _open_epoch(self, epoch: int, done: set[int] | None = None) -> None:
        self._specs[epoch] = self._splitter.shards(epoch)
        self._done[epoch] = _DoneSet(done or ())
        base = epoch * self._per_epoch
        self._todo.extend(base + p for p in range(self._per_epoch) if p not in self._done[epoch])
        self._next_epoch = max(self._next_epoch, epoch + 1)

    def _requeue(self, ids: list[int]) -> None:
        for sid in reversed(ids):
            self._claimable[sid] = self._doing.pop(sid).worker
            self._todo.appendleft(sid)

    def _remember(self, shard_id: int, worker: str) -> None:
        self._recent[shard_id] = worker
        while len(self._recent) > self._recent_limit:
            self._recent.popitem(last=False)


class _DoneSet:
    """Done positions of one epoch as a done prefix ``[0, prefix)`` plus the positions done
    out of order beyond it: shards mostly finish in order, so the set stays small and
    ``runs()`` (for every checkpoint) stays cheap."""

    __slots__ = ("_prefix", "_rest")

    def __init__(self, positions: Iterable[int] = ()) -> None:
        self._prefix = 0
        self._rest: set[int] = set()
        for p in positions:
            self.add(p)

    def __contains__(self, pos: int) -> bool:
        return pos < self._prefix or pos in self._rest

    def __len__(self) -> int:
        return self._prefix + len(self._rest)

    def add(self, pos: int) -> None:
        if pos < self._prefix:
            return
        self._rest.add(pos)
        while self._prefix in self._rest:
            self._rest.remove(self._prefix)
            self._prefix += 1

    def runs(self) -> list[list[int]]:
        head = [[0, self._prefix]] if self._prefix else []
        return head + _runs(sorted(self._rest))


def _runs(sorted_positions: Iterable[int]) -> list[list[int]]:
    """[0,1,2,5,6] → [[0,3],[5,7]]: half-open runs, to keep checkpoints small."""
    runs: list[list[int]] = []
    for p in sorted_positions:
        if runs and runs[-1][1] == p:
            runs[-1][1] = p + 1
        else:
            runs.append([p, p + 1])
    return runs


def _expand(runs: Iterable[Sequence[int]]) -> Iterable[int]:
    for start, end in runs:
        yield from range(start, end)
