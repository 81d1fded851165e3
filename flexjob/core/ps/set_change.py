"""The PS set of a job and how it changes size while training goes on (issue 15). Pure.

The master publishes a ``PsSetInfo`` (a version and the PS addresses in index order); each
PS replica publishes a ``PsMember`` (its address and whether it serves in the set, waits to
join it, or left it on purpose). ``plan_change`` compares the two and says what to do:

* nothing, while the set matches its members (or a member is gone but not left: a killed PS
  is relaunched by its operator and restores its own partition);
* a new version with new addresses only (``SetChange.moves_data`` false: a relaunched PS
  serves elsewhere; no row changes owner);
* a re-partition (``moves_data``): the set's size is the highest index of a member that has
  not left, plus one, once every index below it has a live member. It runs as ``STEPS``:
  ``PAUSE`` (each old PS still serving rejects new calls and waits for the ones in flight:
  the version barrier), ``CHECKPOINT`` (each such PS writes its partition; a PS that left
  wrote its last one before leaving), ``LOAD`` (each PS of the new set loads the rows and
  dense tensors that now hash to it from the old set's checkpoints, ``core.ps.checkpoint``),
  ``VERIFY`` (``verify_rows``: every row came over exactly once, with the same values),
  ``PUBLISH`` (the new version, so workers re-resolve) and ``RESUME``.

A failure before ``LOAD`` resumes the old set as it was (``recovery``); a failure from
``LOAD`` on reloads the old layout from the same checkpoints when every old PS is still
there, else the change is retried. The driver records each step it starts (``ChangeRecord``);
a master restarted in the middle of a change undoes it the same way, or resumes the new set
if it was already published (``after_restart``). Not for I/O (``flexjob.master.ps_sets`` drives it).
"""

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any, TypeVar

from flexjob.api.errors import InvalidSpecError
from flexjob.api.problems import one_of

if TYPE_CHECKING:  # numpy loads only where snapshots are summed (a master without PS skips it)
    from flexjob.core.ps.checkpoint import PsSnapshot

E = TypeVar("E", bound=StrEnum)


def _parse(kind: type[E], field: str, value: Any) -> E:
    """``value`` as a ``kind``; else ``InvalidSpecError`` naming ``field`` and the values."""
    try:
        return kind(value)
    except ValueError:
        raise InvalidSpecError(f"{field}: {one_of(value, [k.value for k in kind])}") from None


class MemberState(StrEnum):
    SERVING = "serving"  # holds a partition of the published set
    STANDBY = "standby"  # started, serves nothing yet: waits for a change to take it in
    LEFT = "left"  # stopped on purpose after writing its last checkpoint


class ChangeStep(StrEnum):
    PAUSE = "pause"
    CHECKPOINT = "checkpoint"
    LOAD = "load"
    VERIFY = "verify"
    PUBLISH = "publish"
    RESUME = "resume"


#: The order a re-partition runs in.
STEPS = (
    ChangeStep.PAUSE,
    ChangeStep.CHECKPOINT,
    ChangeStep.LOAD,
    ChangeStep.VERIFY,
    ChangeStep.PUBLISH,
    ChangeStep.RESUME,
)


@dataclass(frozen=True, slots=True)
class PsSetInfo:
    """The PS set trainers use: PS ``i`` serves at ``addresses[i]``."""

    version: int
    addresses: tuple[str, ...]

    @property
    def num_ps(self) -> int:
        return len(self.addresses)

    def as_dict(self) -> dict[str, object]:
        return {"version": self.version, "addresses": list(self.addresses)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "PsSetInfo":
        return cls(int(data["version"]), tuple(str(a) for a in data["addresses"]))

    def to_json(self) -> bytes:
        return json.dumps(self.as_dict()).encode()

    @classmethod
    def from_json(cls, raw: bytes) -> "PsSetInfo":
        return cls.from_dict(json.loads(raw.decode()))


@dataclass(frozen=True, slots=True)
class PsMember:
    """What one PS replica publishes about itself; ``num_ps``: the size of the set it started
    in (0: unknown); a PS that left gives the totals of the last checkpoint it wrote
    (``None``: it held no model)."""

    address: str
    state: MemberState
    totals: "RowTotals | None" = None
    num_ps: int = 0

    def to_json(self) -> bytes:
        data: dict[str, object] = {"address": self.address, "state": self.state.value}
        if self.num_ps:
            data["num_ps"] = self.num_ps
        if self.totals is not None:
            t = self.totals
            data["totals"] = {"rows": t.rows, "id_sum": t.id_sum, "value_sum": t.value_sum}
        return json.dumps(data).encode()

    @classmethod
    def from_json(cls, raw: bytes) -> "PsMember":
        data = json.loads(raw.decode())
        state = _parse(MemberState, "state", data["state"])
        t = data.get("totals")
        totals = RowTotals(int(t["rows"]), int(t["id_sum"]), float(t["value_sum"])) if t else None
        return cls(str(data["address"]), state, totals, int(data.get("num_ps", 0)))


@dataclass(frozen=True, slots=True)
class SetChange:
    """From ``old`` to ``new``. ``pause``: old PS indexes that still serve (paused and
    checkpointed); ``departed``: old indexes that left (their last checkpoint stands in)."""

    old: PsSetInfo
    new: PsSetInfo
    pause: tuple[int, ...]
    departed: tuple[int, ...]

    @property
    def moves_data(self) -> bool:
        return self.old.num_ps != self.new.num_ps

    @property
    def steps(self) -> tuple[ChangeStep, ...]:
        return STEPS if self.moves_data else (ChangeStep.PUBLISH,)


def initial_set(members: Mapping[int, PsMember], num_ps: int = 0) -> PsSetInfo | None:
    """The first set (version 1) once PS ``0 .. num_ps-1`` all serve; else ``None``.
    ``num_ps`` 0: the size the members say they started in (once they all agree)."""
    if not num_ps:
        sizes = {m.num_ps for m in members.values()}
        num_ps = sizes.pop() if len(sizes) == 1 else 0
    if num_ps < 1 or any(
        i not in members or members[i].state is not MemberState.SERVING for i in range(num_ps)
    ):
        return None
    return PsSetInfo(1, tuple(members[i].address for i in range(num_ps)))


def wanted_size(members: Mapping[int, PsMember]) -> int:
    """The highest index of a member that has not left, plus one (0: none)."""
    return max((i + 1 for i, m in members.items() if m.state is not MemberState.LEFT), default=0)


def plan_change(current: PsSetInfo, members: Mapping[int, PsMember]) -> SetChange | None:
    """What to do about ``current`` given the ``members`` (by PS index); ``None``: nothing
    now (the set matches, or the members of the next set are not all there yet)."""
    size = wanted_size(members)
    if size == 0:
        return None
    live = [i for i in range(size) if i in members and members[i].state is not MemberState.LEFT]
    if len(live) < size:
        return None  # a PS of the next set is missing: wait for its (re)launch
    if size == current.num_ps:
        serving = all(members[i].state is MemberState.SERVING for i in range(size))
        addresses = tuple(members[i].address for i in range(size))
        if not serving or addresses == current.addresses:
            return None
        return SetChange(current, PsSetInfo(current.version + 1, addresses), (), ())
    departed = tuple(
        i
        for i in range(current.num_ps)
        if i in members and members[i].state is MemberState.LEFT and i >= size
    )
    pause = tuple(i for i in range(min(size, current.num_ps)))
    if len(pause) + len(departed) != current.num_ps:
        return None  # an old PS beyond the new size is gone without its last checkpoint
    new = PsSetInfo(current.version + 1, tuple(members[i].address for i in range(size)))
    return SetChange(current, new, pause, departed)


ID_SUM_MODULUS = 1 << 64


@dataclass(frozen=True, slots=True)
class RowTotals:
    """What a PS set holds, summed: rows, the sum of their ids, and the sum of their values
    and of the dense parameters (float64). Equal totals before and after a re-partition:
    every row and every dense tensor came over once, with its values."""

    rows: int
    id_sum: int  # modulo 2**64 (ids may be any int64)
    value_sum: float

    @staticmethod
    def total(parts: Sequence["RowTotals"]) -> "RowTotals":
        return RowTotals(
            sum(p.rows for p in parts),
            sum(p.id_sum for p in parts) % ID_SUM_MODULUS,
            math.fsum(p.value_sum for p in parts),
        )


def snapshot_totals(snap: "PsSnapshot") -> RowTotals:
    """The totals of one PS's partition."""
    import numpy as np

    ids = sum(int(r.ids.view(np.uint64).sum(dtype=np.uint64)) for r in snap.rows.values())
    values = [float(r.rows.sum(dtype=np.float64)) for r in snap.rows.values()]
    values += [float(d.value.sum(dtype=np.float64)) for d in snap.dense.values()]
    return RowTotals(snap.num_rows, ids % ID_SUM_MODULUS, math.fsum(values))


#: Relative tolerance of the value sums: the same float32 rows summed in another order.
VALUE_SUM_RTOL = 1e-9


def verify_rows(before: Sequence[RowTotals], after: Sequence[RowTotals]) -> str | None:
    """``None`` when the new set holds exactly the old set's rows; else what differs."""
    old, new = RowTotals.total(before), RowTotals.total(after)
    if old.rows != new.rows:
        return f"rows: {old.rows} before the change, {new.rows} after"
    if old.id_sum != new.id_sum:
        return f"row ids: sum {old.id_sum} before the change, {new.id_sum} after"
    if not math.isclose(old.value_sum, new.value_sum, rel_tol=VALUE_SUM_RTOL, abs_tol=1e-6):
        return f"row values: sum {old.value_sum!r} before the change, {new.value_sum!r} after"
    return None


class Recovery(StrEnum):
    RESUME_OLD = "resume-old"  # nothing moved yet: the old set goes on as it was
    RELOAD_OLD = "reload-old"  # the old layout is loaded back from the same checkpoints
    RETRY = "retry"  # an old PS left: only the new layout can hold its rows; try again
    RESUME_NEW = "resume-new"  # the new set was published: its PS resume serving it


def recovery(change: SetChange, failed_at: ChangeStep) -> Recovery:
    """What the driver does when ``failed_at`` (up to ``VERIFY``; from ``PUBLISH`` on the new
    set is the job's and its steps are only repeated) failed during ``change``."""
    if STEPS.index(failed_at) > STEPS.index(ChangeStep.VERIFY):
        raise ValueError(f"failed_at: {failed_at.value} comes after the new set is published")
    if STEPS.index(failed_at) < STEPS.index(ChangeStep.LOAD):
        return Recovery.RESUME_OLD
    return Recovery.RETRY if change.departed else Recovery.RELOAD_OLD


@dataclass(frozen=True, slots=True)
class ChangeRecord:
    """A change under way and the step it started last (kept where a restarted master
    finds it)."""

    change: SetChange
    step: ChangeStep

    def to_json(self) -> bytes:
        c = self.change
        data = {
            "old": c.old.as_dict(),
            "new": c.new.as_dict(),
            "pause": list(c.pause),
            "departed": list(c.departed),
            "step": self.step.value,
        }
        return json.dumps(data).encode()

    @classmethod
    def from_json(cls, raw: bytes) -> "ChangeRecord":
        data = json.loads(raw.decode())
        step = _parse(ChangeStep, "step", data["step"])
        change = SetChange(
            PsSetInfo.from_dict(data["old"]),
            PsSetInfo.from_dict(data["new"]),
            tuple(int(i) for i in data["pause"]),
            tuple(int(i) for i in data["departed"]),
        )
        return cls(change, step)


def after_restart(record: ChangeRecord, published: PsSetInfo | None) -> Recovery | None:
    """What a master that finds ``record`` (left by a master that stopped mid-change) does,
    given the set ``published`` now: resume the new set if it was published; else undo the
    change as if its step had failed (a change that reached ``PUBLISH`` without publishing
    is undone like one that failed at ``VERIFY``); ``None``: the record is stale (the
    published set is neither the change's old nor its new one): nothing to do."""
    old, new = record.change.old, record.change.new
    if published is not None and published.version == new.version:
        return Recovery.RESUME_NEW
    if published is None or published.version != old.version:
        return None
    last = STEPS.index(ChangeStep.VERIFY)
    return recovery(record.change, STEPS[min(STEPS.index(record.step), last)])
