"""``PsSetDriver``: the job master's side of PS elasticity (issue 15).

On its own thread, every ``poll`` seconds, it reads the PS members from the master's KV
store and the PS set it published (``KV_PS_SET``); publishes the first set once every PS of
it serves; and runs whatever change ``core.ps.set_change.plan_change`` asks for, step by step
through each PS's control service (pause → checkpoint → load → verify → publish → resume),
falling back as ``recovery`` says when a step fails. It also asks every PS of the set to
checkpoint every ``checkpoint_interval`` seconds. Each change logs ``event=ps_set_changed``
with the row totals before and after; a change whose totals differ is undone and counted as
a failure, never published. Before each step of a re-partition it records the change and the
step in ``KV_PS_CHANGE`` (journaled: it survives a master restart) and empties it when the
change ended; a tick that finds a record there (a master restarted mid-change, or an undo that
failed) finishes the change as ``after_restart`` says before it plans anything else, so no PS
stays paused. Not for the rules (``core.ps.set_change``).
"""

import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent import futures
from typing import Protocol, TypeVar

from flexjob.api import names
from flexjob.api.errors import FlexjobError, MasterError
from flexjob.core.ps.set_change import (
    ChangeRecord,
    ChangeStep,
    PsSetInfo,
    Recovery,
    RowTotals,
    SetChange,
    after_restart,
    initial_set,
    plan_change,
    recovery,
    verify_rows,
)
from flexjob.rpc.messages import KVClient
from flexjob.rpc.ps_auth import ps_control_bearer
from flexjob.rpc.ps_control import PsControlClient
from flexjob.rpc.ps_registry import read_members, read_set

log = logging.getLogger(__name__)
T = TypeVar("T")
#: The longest wait between two tries of a PS-set change that keeps failing.
RETRY_MAX_S = 60.0


class PsSetHost(KVClient, Protocol):
    """What the driver uses of the master: its KV store and whether the job finished."""

    @property
    def job_finished(self) -> bool: ...


class ChangeFailed(MasterError):
    def __init__(self, step: ChangeStep, cause: BaseException) -> None:
        super().__init__(f"{step.value}: {cause}")
        self.step = step


class PsSetDriver:
    def __init__(
        self,
        kv: PsSetHost,
        *,
        checkpoint_interval: float,
        initial_num_ps: int = 0,
        poll: float = 0.25,
        token: str | None = None,
        on_failure: Callable[[str], None] | None = None,
    ) -> None:
        """``initial_num_ps``: the size of the first set (0: the size its members started in);
        ``checkpoint_interval``: seconds between checkpoints the master asks for (0: none);
        ``on_failure``: told of each failed change (the master's stats)."""
        self._kv = kv
        self._initial = initial_num_ps
        self._interval = checkpoint_interval
        self._poll = poll
        self._token = token
        self._on_failure = on_failure or (lambda message: None)
        self._stop = threading.Event()
        self._pool = futures.ThreadPoolExecutor(max_workers=16, thread_name_prefix="ps-set")
        self._next_checkpoint = time.monotonic() + checkpoint_interval
        self._failures = 0
        self._next_try = 0.0
        self._thread = threading.Thread(target=self._loop, name="ps-sets", daemon=True)
        self._hold_before = os.environ.get(names.ENV_PS_CHANGE_HOLD, "")
        self.changes = 0

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=30)
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _loop(self) -> None:
        while not self._stop.wait(self._poll):
            try:
                self.tick()
            except Exception:  # keep driving; the next tick looks again
                log.exception("event=ps_set_tick_failed")

    def tick(self) -> None:
        """One look at the members: publish, change or checkpoint the set as due."""
        if self._kv.job_finished:
            return
        members = read_members(self._kv.kv_get)
        if not members:
            return
        current = read_set(self._kv.kv_get)
        if current is None:
            first = initial_set(members, self._initial)
            if first is not None:
                self._kv.kv_set(names.KV_PS_SET, first.to_json())
                log.info("event=ps_set_published version=1 num_ps=%d", first.num_ps)
            return
        unfinished = self._kv.kv_get(names.KV_PS_CHANGE)
        if unfinished:
            self._finish(ChangeRecord.from_json(unfinished), current)
            return
        change = plan_change(current, members)
        if change is not None and time.monotonic() >= self._next_try:
            if self.run(change):
                self._failures = 0
            else:  # back off: 1, 2, 4 .. 60 s between tries of a change that fails
                self._failures += 1
                delay = min(RETRY_MAX_S, 2.0 ** (self._failures - 1))
                self._next_try = time.monotonic() + delay
        elif self._interval > 0 and time.monotonic() >= self._next_checkpoint:
            self._next_checkpoint = time.monotonic() + self._interval
            self._each(_every(current), lambda c: c.checkpoint(), wait=False)

    # ---- one change ----
    def run(self, change: SetChange) -> bool:
        """Carry ``change`` out; ``True`` when the new set was published."""
        began = time.monotonic()
        old, new = change.old, change.new
        log.info(
            "event=ps_set_change_started from_version=%d to_version=%d from=%d to=%d",
            old.version,
            new.version,
            old.num_ps,
            new.num_ps,
        )
        if not change.moves_data:
            self._publish(new)
            self._log_done(change, None, None, began)
            return True
        before: list[RowTotals] = []
        step = ChangeStep.PAUSE
        took: dict[ChangeStep, float] = {}
        mark = time.monotonic()

        def done(next_step: ChangeStep) -> ChangeStep:
            nonlocal mark
            now = time.monotonic()
            took[step], mark = now - mark, now
            self._record(change, next_step)
            return next_step

        try:
            self._record(change, step)
            paused = _some(old, change.pause)
            self._each(paused, lambda c: c.pause())
            step = done(ChangeStep.CHECKPOINT)
            written = self._each(paused, lambda c: c.checkpoint())
            departed = self._departed_totals(change)
            before = [d.totals for d in written] + departed
            has_model = any(d.path for d in written) or bool(departed)
            step = done(ChangeStep.LOAD)
            after = self._load(new, old.num_ps if has_model else 0)
            step = done(ChangeStep.VERIFY)
            problem = verify_rows(before, after)
            if problem is not None:
                raise FlexjobError(f"rows lost or doubled in the change: {problem}")
        except Exception as exc:
            if self._recover(change, ChangeFailed(step, exc)):
                self._kv.kv_set(names.KV_PS_CHANGE, b"")
            return False
        self._record(change, ChangeStep.PUBLISH)
        self._publish(new)
        self._record(change, ChangeStep.RESUME)
        self._each(_every(new), lambda c: c.resume(new.version))
        self._kv.kv_set(names.KV_PS_CHANGE, b"")
        self._log_done(change, before, after, began)
        log.info(
            "event=ps_set_change_steps version=%d %s",
            new.version,
            " ".join(f"{s.value}_s={t:.2f}" for s, t in took.items()),
        )
        return True

    def _load(self, new: PsSetInfo, from_num_ps: int) -> list[RowTotals]:
        def load(i: int) -> RowTotals:
            with self._control(i, new.addresses[i]) as c:
                return c.load(i, new.num_ps, from_num_ps, new.version)

        return list(self._pool.map(load, range(new.num_ps)))

    def _departed_totals(self, change: SetChange) -> list[RowTotals]:
        members = read_members(self._kv.kv_get)
        return [
            t
            for i in change.departed
            if (t := members[i].totals if i in members else None) is not None
        ]

    def _record(self, change: SetChange, step: ChangeStep) -> None:
        """Note ``step`` of ``change`` as started, where a restarted master finds it."""
        self._kv.kv_set(names.KV_PS_CHANGE, ChangeRecord(change, step).to_json())
        if self._hold_before == step.value:  # test hook: a master killed mid-change
            log.warning("event=ps_set_change_held step=%s", step.value)
            self._stop.wait(600)

    def _recover(self, change: SetChange, failed: ChangeFailed) -> bool:
        """Undo ``change`` after ``failed``; ``False`` when the undo failed too (the record
        stays: the next tick tries again)."""
        old = change.old
        how = recovery(change, failed.step)
        message = (
            f"PS set change {old.num_ps} -> {change.new.num_ps} failed at {failed}; {how.value}"
        )
        log.error("event=ps_set_change_failed %s", message)
        self._on_failure(message)
        try:
            self._undo(change, how)
        except Exception:
            log.exception("event=ps_set_recovery_failed")
            return False
        return True

    def _undo(self, change: SetChange, how: Recovery) -> None:
        old, new = change.old, change.new
        if how is Recovery.RESUME_NEW:
            self._each(_every(new), lambda c: c.resume(new.version))
            return
        if how is Recovery.RELOAD_OLD:
            for index, address in _some(old, change.pause):
                with self._control(index, address) as c:
                    c.load(index, old.num_ps, old.num_ps, old.version)
        if how is not Recovery.RETRY:
            self._each(_some(old, change.pause), lambda c: c.resume(old.version))

    def _finish(self, record: ChangeRecord, current: PsSetInfo) -> None:
        """End the change ``record`` left unfinished (a master restarted mid-change, or an
        undo that failed); raises, keeping the record, when a PS cannot be reached."""
        change = record.change
        how = after_restart(record, current)
        if how is not None:
            message = (
                f"PS set change {change.old.num_ps} -> {change.new.num_ps} found unfinished "
                f"at {record.step.value} (published set {current.version}); {how.value}"
            )
            log.warning("event=ps_set_change_unfinished %s", message)
            self._undo(change, how)
            self._on_failure(message)
        self._kv.kv_set(names.KV_PS_CHANGE, b"")

    def _publish(self, new: PsSetInfo) -> None:
        self._kv.kv_set(names.KV_PS_SET, new.to_json())
        self.changes += 1

    def _log_done(
        self,
        change: SetChange,
        before: Sequence[RowTotals] | None,
        after: Sequence[RowTotals] | None,
        began: float,
    ) -> None:
        b = RowTotals.total(before) if before is not None else None
        a = RowTotals.total(after) if after is not None else None
        log.info(
            "event=ps_set_changed version=%d from=%d to=%d rows_before=%s rows_after=%s "
            "value_sum_before=%r value_sum_after=%r seconds=%.2f",
            change.new.version,
            change.old.num_ps,
            change.new.num_ps,
            b.rows if b else "-",
            a.rows if a else "-",
            b.value_sum if b else None,
            a.value_sum if a else None,
            time.monotonic() - began,
        )

    def _each(
        self,
        targets: Sequence[tuple[int, str]],
        call: Callable[[PsControlClient], T],
        wait: bool = True,
    ) -> list[T]:
        """``call`` on every PS of ``targets`` (index, address) at once; their answers in
        order."""

        def one(target: tuple[int, str]) -> T:
            with self._control(*target) as c:
                return call(c)

        pending = [self._pool.submit(one, t) for t in targets]
        return [p.result() for p in pending] if wait else []

    def _control(self, index: int, address: str) -> PsControlClient:
        """A control client of PS ``index`` at ``address``, with the master's credential for
        that PS (``rpc.ps_auth.ps_control_bearer``) when the job has a token."""
        bearer = ps_control_bearer(self._token, index) if self._token else self._token
        return PsControlClient(address, token=bearer)


def _every(info: PsSetInfo) -> list[tuple[int, str]]:
    return list(enumerate(info.addresses))


def _some(info: PsSetInfo, indices: Sequence[int]) -> list[tuple[int, str]]:
    return [(i, info.addresses[i]) for i in indices]
