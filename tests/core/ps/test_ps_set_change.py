"""The PS-set change rule: which change a set of PS members asks for (none, new addresses, a
re-partition that grows or shrinks the set), in which steps it runs, what a failed step falls
back to, and the totals that prove every row came over exactly once."""

from dataclasses import replace

import numpy as np
import pytest

from flexjob.api.errors import InvalidSpecError
from flexjob.core.ps.checkpoint import restore, snapshot
from flexjob.core.ps.parameters import PsStore
from flexjob.core.ps.set_change import (
    STEPS,
    ChangeRecord,
    ChangeStep,
    MemberState,
    PsMember,
    PsSetInfo,
    Recovery,
    RowTotals,
    after_restart,
    initial_set,
    plan_change,
    recovery,
    snapshot_totals,
    verify_rows,
    wanted_size,
)
from flexjob.core.ps.table import RowsExport
from tests.core.ps.test_ps_checkpoint import trained_set

S, W, L = MemberState.SERVING, MemberState.STANDBY, MemberState.LEFT


def members(*states: MemberState, port: int = 1000) -> dict[int, PsMember]:
    return {i: PsMember(f"h:{port + i}", s) for i, s in enumerate(states)}


SET2 = PsSetInfo(4, ("h:1000", "h:1001"))


def test_set_and_member_round_trip_json_and_bad_state_is_named() -> None:
    assert PsSetInfo.from_json(SET2.to_json()) == SET2
    m = PsMember("h:1", MemberState.STANDBY)
    assert PsMember.from_json(m.to_json()) == m
    left = PsMember("h:1", MemberState.LEFT, RowTotals(3, 2**63, -1.5), num_ps=3)
    assert PsMember.from_json(left.to_json()) == left
    with pytest.raises(InvalidSpecError, match="state: 'gone' is not one of serving, standby"):
        PsMember.from_json(b'{"address": "h:1", "state": "gone"}')


def test_initial_set_waits_for_every_ps_to_serve() -> None:
    assert initial_set(members(S), 2) is None
    assert initial_set(members(S, W), 2) is None
    assert initial_set(members(S, S), 2) == PsSetInfo(1, ("h:1000", "h:1001"))
    sized = {i: PsMember(f"h:{i}", S, num_ps=2) for i in range(2)}
    assert initial_set({0: sized[0]}) is None  # ps-0 started in a set of 2: wait for ps-1
    assert initial_set(sized) == PsSetInfo(1, ("h:0", "h:1"))
    assert initial_set({0: sized[0], 1: PsMember("h:1", S, num_ps=3)}) is None  # disagree


def test_nothing_to_do_while_the_set_matches_or_a_killed_ps_is_away() -> None:
    assert plan_change(SET2, members(S, S)) is None
    away = members(S, S)
    del away[1]  # killed, not left: the operator relaunches it, it restores its own partition
    assert plan_change(SET2, away) is None
    assert wanted_size({}) == 0 and plan_change(SET2, {}) is None


def test_a_relaunched_ps_on_a_new_address_gets_a_new_version_without_moving_data() -> None:
    moved = members(S, S)
    moved[1] = PsMember("h:2001", S)
    change = plan_change(SET2, moved)
    assert change is not None and not change.moves_data
    assert change.new == PsSetInfo(5, ("h:1000", "h:2001"))
    assert change.steps == (ChangeStep.PUBLISH,)


def test_growing_waits_for_every_new_ps_then_pauses_the_old_ones() -> None:
    assert plan_change(SET2, {**members(S, S), 3: PsMember("h:1003", W)}) is None  # no ps-2
    change = plan_change(SET2, members(S, S, W))
    assert change is not None and change.moves_data
    assert change.new == PsSetInfo(5, ("h:1000", "h:1001", "h:1002"))
    assert change.pause == (0, 1) and change.departed == ()
    assert change.steps == STEPS


def test_shrinking_needs_the_leaving_ps_to_have_left_with_its_last_checkpoint() -> None:
    set3 = PsSetInfo(5, ("h:1000", "h:1001", "h:1002"))
    killed = members(S, S)  # ps-2 gone without leaving: wait (its rows are in no checkpoint)
    assert plan_change(set3, killed) is None
    change = plan_change(set3, members(S, S, L))
    assert change is not None
    assert change.new == PsSetInfo(6, ("h:1000", "h:1001"))
    assert change.pause == (0, 1) and change.departed == (2,)
    assert plan_change(set3, members(S, L, L)) is not None  # 3 -> 1
    assert plan_change(set3, members(L, S, L)) is None  # ps-0 left but ps-1 stays: wait


def test_recovery_resumes_before_load_and_reloads_or_retries_after() -> None:
    grow = plan_change(SET2, members(S, S, W))
    shrink = plan_change(PsSetInfo(5, ("a", "b", "c")), members(S, S, L))
    assert grow is not None and shrink is not None
    assert recovery(grow, ChangeStep.PAUSE) is Recovery.RESUME_OLD
    assert recovery(grow, ChangeStep.CHECKPOINT) is Recovery.RESUME_OLD
    assert recovery(grow, ChangeStep.LOAD) is Recovery.RELOAD_OLD
    assert recovery(grow, ChangeStep.VERIFY) is Recovery.RELOAD_OLD
    assert recovery(shrink, ChangeStep.CHECKPOINT) is Recovery.RESUME_OLD
    assert recovery(shrink, ChangeStep.LOAD) is Recovery.RETRY
    with pytest.raises(ValueError, match="publish comes after"):
        recovery(grow, ChangeStep.PUBLISH)


@pytest.mark.parametrize("step", STEPS)
def test_a_restarted_master_undoes_an_unpublished_change_or_resumes_a_published_one(
    step: ChangeStep,
) -> None:
    grow = plan_change(SET2, members(S, S, W))
    shrink = plan_change(PsSetInfo(5, ("a", "b", "c")), members(S, S, L))
    assert grow is not None and shrink is not None
    for change in (grow, shrink):
        record = ChangeRecord.from_json(ChangeRecord(change, step).to_json())
        assert record == ChangeRecord(change, step)
        assert after_restart(record, change.new) is Recovery.RESUME_NEW
        assert after_restart(record, PsSetInfo(change.new.version + 1, ("x",))) is None
        assert after_restart(record, None) is None
    before_load = STEPS.index(step) < STEPS.index(ChangeStep.LOAD)
    undo_grow = after_restart(ChangeRecord(grow, step), grow.old)
    undo_shrink = after_restart(ChangeRecord(shrink, step), shrink.old)
    assert undo_grow is (Recovery.RESUME_OLD if before_load else Recovery.RELOAD_OLD)
    assert undo_shrink is (Recovery.RESUME_OLD if before_load else Recovery.RETRY)


def test_a_change_record_with_an_unknown_step_names_the_field() -> None:
    grow = plan_change(SET2, members(S, S, W))
    assert grow is not None
    raw = ChangeRecord(grow, ChangeStep.LOAD).to_json().replace(b'"load"', b'"jump"')
    with pytest.raises(InvalidSpecError, match="step: 'jump' is not one of pause, checkpoint"):
        ChangeRecord.from_json(raw)


@pytest.mark.parametrize(("old", "new"), [(2, 3), (3, 2), (1, 4), (4, 1)])
def test_totals_of_a_re_partitioned_set_equal_the_old_sets(old: int, new: int) -> None:
    stores = trained_set(old, seed=old * 10 + new)
    snaps = [snapshot(s, i, old) for i, s in enumerate(stores)]
    after = []
    for i in range(new):
        store = PsStore()
        restore(store, snaps, i, new)
        after.append(snapshot(store, i, new))
    before_totals = [snapshot_totals(s) for s in snaps]
    after_totals = [snapshot_totals(s) for s in after]
    assert verify_rows(before_totals, after_totals) is None
    assert RowTotals.total(before_totals).rows == sum(s.num_rows for s in snaps) > 0


def test_verify_rows_names_what_differs() -> None:
    base = [RowTotals(10, 45, 1.5), RowTotals(5, 7, -0.5)]
    assert verify_rows(base, [RowTotals(15, 52, 1.0)]) is None
    assert verify_rows(base, [RowTotals(14, 52, 1.0)]) == "rows: 15 before the change, 14 after"
    assert "row ids: sum 52" in str(verify_rows(base, [RowTotals(15, 51, 1.0)]))
    assert "row values: sum 1.0" in str(verify_rows(base, [RowTotals(15, 52, 1.25)]))


def test_id_sums_wrap_like_the_ids_themselves() -> None:
    snap = snapshot(trained_set(1)[0], 0, 1)
    rows = snap.rows["user"]
    big = np.full(4, 2**62, dtype=np.int64)
    four = RowsExport(big, rows.rows[:4], {k: v[:4] for k, v in rows.slots.items()}, rows.steps[:4])
    totals = snapshot_totals(replace(snap, rows={"user": four}))
    assert totals.rows == 4 and totals.id_sum == 0  # 4 * 2**62 == 2**64 == 0 (mod 2**64)
