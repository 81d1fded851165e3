import pytest

from flexjob.core.training.shards import ReportResult, Shard, ShardManager, ShardState
from flexjob.core.training.splitters import RangeSplitter
from tests.core.clock import FakeClock


def manager(
    size: int = 10, shard: int = 3, epochs: int = 1, timeout: float | None = None
) -> tuple[ShardManager, FakeClock]:
    clock = FakeClock()
    mgr = ShardManager(
        RangeSplitter(size, shard), epochs=epochs, slow_shard_timeout=timeout, clock=clock
    )
    return mgr, clock


def lease(mgr: ShardManager, worker: str) -> Shard:
    """The next shard ``mgr`` hands ``worker``, asserted to be one."""
    shard = mgr.get_shard(worker)
    assert shard is not None, f"no shard for {worker}"
    return shard


def reissued(mgr: ShardManager, slow: Shard, worker: str = "fast") -> Shard:
    """The next shard ``worker`` gets, asserted to be ``slow``'s, given back after its timeout."""
    again = mgr.get_shard(worker)
    assert again is not None and again.shard_id == slow.shard_id
    return again


def test_get_shard_moves_a_todo_shard_to_doing_for_that_worker() -> None:
    mgr, _ = manager()
    shard = mgr.get_shard("w0")
    assert shard is not None and shard.spec.sample_indices() == (0, 1, 2)
    assert mgr.state_of(shard.shard_id) is ShardState.DOING
    assert mgr.doing() == {shard.shard_id: "w0"}


def test_report_done_moves_the_shard_to_done() -> None:
    mgr, _ = manager()
    shard = mgr.get_shard("w0")
    assert shard is not None and mgr.report_done(shard.shard_id, "w0").accepted
    assert mgr.state_of(shard.shard_id) is ShardState.DONE
    assert mgr.progress().samples_done == 3


def test_failed_worker_shards_return_to_the_front_of_todo() -> None:
    mgr, _ = manager()
    a, b = mgr.get_shard("dead"), mgr.get_shard("alive")
    assert a is not None and b is not None
    assert mgr.recover("dead") == [a.shard_id]
    again = mgr.get_shard("alive")
    assert again is not None and again.shard_id == a.shard_id


def test_a_slow_shard_goes_back_to_todo_after_the_timeout() -> None:
    mgr, clock = manager(timeout=5)
    slow = lease(mgr, "slow")
    clock.advance(4.9)
    assert mgr.expire_slow_shards() == []
    clock.advance(0.2)
    reissued(mgr, slow)


def test_late_report_of_a_timed_out_shard_is_accepted_once() -> None:
    mgr, clock = manager(timeout=1)
    slow = lease(mgr, "slow")
    clock.advance(2)
    again = reissued(mgr, slow)
    assert mgr.report_done(slow.shard_id, "slow") is ReportResult.COUNTED
    assert mgr.report_done(again.shard_id, "fast") is ReportResult.REJECTED
    assert mgr.progress().samples_done == 3


def test_late_report_of_a_shard_back_in_todo_removes_it_from_todo() -> None:
    mgr, _ = manager(size=6, shard=3)
    a = lease(mgr, "dead")
    mgr.recover("dead")
    assert mgr.report_done(a.shard_id, "dead") is ReportResult.COUNTED
    b = mgr.get_shard("w1")
    assert b is not None and b.shard_id != a.shard_id


def test_a_retried_report_by_the_same_worker_is_acknowledged_but_not_counted() -> None:
    mgr, _ = manager()
    shard = lease(mgr, "w0")
    assert mgr.report_done(shard.shard_id, "w0") is ReportResult.COUNTED
    assert mgr.report_done(shard.shard_id, "w0") is ReportResult.ALREADY_COUNTED
    assert mgr.progress().shards_done == 1


def test_unknown_shard_report_is_rejected() -> None:
    mgr, _ = manager()
    assert mgr.report_done(99, "w0") is ReportResult.REJECTED


def test_next_epoch_starts_when_the_current_one_is_handed_out() -> None:
    mgr, _ = manager(size=4, shard=2, epochs=2)
    ids = [mgr.get_shard("w") for _ in range(3)]
    assert [s.epoch for s in ids if s] == [0, 0, 1]
    assert mgr.opened_epochs == 2


def test_no_shard_while_others_are_in_progress_and_finished_at_the_end() -> None:
    mgr, _ = manager(size=3, shard=3)
    shard = lease(mgr, "w0")
    assert mgr.get_shard("w1") is None and not mgr.finished
    mgr.report_done(shard.shard_id, "w0")
    assert mgr.get_shard("w1") is None and mgr.finished and mgr.progress().finished


def test_checkpoint_restore_keeps_done_and_doing_with_its_worker() -> None:
    mgr, clock = manager(size=10, shard=2, epochs=2)
    done = mgr.get_shard("w0")
    doing = mgr.get_shard("w1")
    assert done is not None and doing is not None
    mgr.report_done(done.shard_id, "w0")
    restored = ShardManager(RangeSplitter(10, 2), epochs=2, clock=clock)
    restored.restore(mgr.checkpoint())
    assert restored.state_of(done.shard_id) is ShardState.DONE
    assert restored.doing() == {doing.shard_id: "w1"}
    assert restored.progress() == mgr.progress()
    assert restored.report_done(doing.shard_id, "w1") is ReportResult.COUNTED


def test_a_restored_shard_of_a_dead_worker_goes_back_to_todo() -> None:
    mgr, clock = manager(size=10, shard=2)
    doing = lease(mgr, "w1")
    restored = ShardManager(RangeSplitter(10, 2), clock=clock)
    restored.restore(mgr.checkpoint())
    assert restored.recover("w1") == [doing.shard_id]
    again = restored.get_shard("w2")
    assert again is not None and again.shard_id == doing.shard_id


def test_a_worker_asking_again_after_a_restart_gets_its_restored_shard_back() -> None:
    mgr, clock = manager(size=10, shard=2)
    lost_answer = mgr.get_shard("w1")  # handed out and saved; the answer died with the master
    assert lost_answer is not None
    restored = ShardManager(RangeSplitter(10, 2), clock=clock)
    restored.restore(mgr.checkpoint())
    again = restored.get_shard("w1")
    assert again is not None and again.shard_id == lost_answer.shard_id
    after = restored.get_shard("w1")
    assert after is not None and after.shard_id != lost_answer.shard_id


def test_a_restored_shard_given_to_another_worker_is_not_handed_back_to_its_old_holder() -> None:
    mgr, clock = manager(size=4, shard=2)
    held = lease(mgr, "w1")
    restored = ShardManager(RangeSplitter(4, 2), clock=clock)
    restored.restore(mgr.checkpoint())
    restored.recover("w1")
    moved = restored.get_shard("w2")
    assert moved is not None and moved.shard_id == held.shard_id
    other = restored.get_shard("w1")
    assert other is not None and other.shard_id != held.shard_id


def test_a_replayed_hand_out_makes_a_todo_shard_doing_once() -> None:
    mgr, _ = manager(size=10, shard=2, epochs=2)
    assert mgr.hand_out(7, "w3")  # epoch 1: opened for the replay
    assert mgr.doing() == {7: "w3"}
    assert not mgr.hand_out(7, "w3")
    assert mgr.report_done(7, "w3") is ReportResult.COUNTED
    assert not mgr.hand_out(7, "w4")
    assert not mgr.hand_out(99, "w4")


def test_a_replayed_hand_out_to_another_worker_moves_the_shard_its_old_holder_keeps() -> None:
    mgr, _ = manager(size=10, shard=2, epochs=2)
    assert mgr.hand_out(7, "w3")
    assert mgr.hand_out(7, "w4")  # it was taken back from w3 (a slow shard) and handed to w4
    assert mgr.doing() == {7: "w4"}
    assert mgr.report_done(7, "w5") is ReportResult.REJECTED
    assert mgr.report_done(7, "w3") is ReportResult.COUNTED


def test_restore_rejects_a_checkpoint_of_another_dataset() -> None:
    mgr, _ = manager(size=10, shard=2)
    other = ShardManager(RangeSplitter(12, 2))
    with pytest.raises(ValueError, match="splitter does not match"):
        other.restore(mgr.checkpoint())


def test_checkpoint_of_a_mostly_done_epoch_stays_small() -> None:
    mgr, _ = manager(size=10_000, shard=1)
    for _ in range(5_000):
        s = lease(mgr, "w")
        mgr.report_done(s.shard_id, "w")
    assert mgr.to_dict()["done"] == {"0": [[0, 5000]]}


def test_after_a_restore_reports_of_shards_never_handed_out_are_rejected() -> None:
    mgr, _ = manager(size=20, shard=2, epochs=2)
    held = lease(mgr, "w")
    fresh = ShardManager(RangeSplitter(20, 2), epochs=2)
    fresh.restore(mgr.checkpoint())
    forged = [sid for sid in range(20) if sid != held.shard_id]
    assert [fresh.report_done(sid, "w") for sid in forged] == [ReportResult.REJECTED] * 19
    assert fresh.report_done(held.shard_id, "intruder") is ReportResult.REJECTED
    assert fresh.progress().shards_done == 0
    assert fresh.report_done(held.shard_id, "w") is ReportResult.COUNTED


def test_after_a_restore_a_slow_shard_taken_back_may_still_report_it() -> None:
    clock = FakeClock()
    mgr = ShardManager(RangeSplitter(4, 2), slow_shard_timeout=5.0, clock=clock)
    late = mgr.get_shard("slow")
    assert late is not None
    clock.advance(6.0)
    assert mgr.expire_slow_shards() == [late.shard_id]
    fresh = ShardManager(RangeSplitter(4, 2), clock=clock)
    fresh.restore(mgr.checkpoint())
    assert fresh.report_done(late.shard_id, "other") is ReportResult.REJECTED
    assert fresh.report_done(late.shard_id, "slow") is ReportResult.COUNTED


def test_a_checkpoint_without_former_holders_lets_any_worker_report_its_todo_shards() -> None:
    mgr, _ = manager(size=4, shard=2, epochs=2)
    old = mgr.to_dict()
    del old["claimable"]  # written before holders were kept
    fresh = ShardManager(RangeSplitter(4, 2), epochs=2)
    fresh.restore(old)
    late = [mgr.get_shard("w") for _ in range(3)][-1]
    assert late is not None and late.epoch == 1
    assert fresh.report_done(late.shard_id, "w") is ReportResult.COUNTED
    assert fresh.progress().shards_done == 1


def test_report_of_a_shard_another_worker_holds_is_rejected() -> None:
    mgr, _ = manager(size=6, shard=3)
    held = lease(mgr, "w0")
    assert mgr.report_done(held.shard_id, "intruder") is ReportResult.REJECTED
    assert mgr.report_done(held.shard_id, "w0") is ReportResult.COUNTED


def test_report_of_a_shard_never_handed_out_or_of_an_unopened_epoch_is_rejected() -> None:
    mgr, _ = manager(size=6, shard=3, epochs=2)
    assert mgr.get_shard("w0") is not None  # opens epoch 0: shard 1 waits in TODO
    assert mgr.report_done(1, "w0") is ReportResult.REJECTED
    assert mgr.report_done(2, "w0") is ReportResult.REJECTED  # epoch 1 not opened
    assert mgr.progress().samples_done == 0 and mgr.opened_epochs == 1


def test_a_shard_doing_at_a_restore_may_be_reported_by_its_holder_only() -> None:
    mgr, _ = manager(size=6, shard=3)
    held = lease(mgr, "w0")
    fresh = ShardManager(RangeSplitter(6, 3))
    fresh.restore(mgr.checkpoint())
    assert fresh.report_done(held.shard_id, "w1") is ReportResult.REJECTED
    assert fresh.report_done(held.shard_id, "w0") is ReportResult.COUNTED


def test_given_back_shards_return_to_the_front_of_todo_only_from_their_holder() -> None:
    m, _ = manager(size=40, shard=10)
    a, b = m.get_shard("a"), m.get_shard("a")
    assert a is not None and b is not None
    assert m.give_back([a.shard_id, b.shard_id], "intruder") == []  # not its shards
    assert m.give_back([b.shard_id, a.shard_id, 99], "a") == [b.shard_id, a.shard_id]
    assert m.state_of(a.shard_id) is ShardState.TODO
    again = m.get_shard("b")
    assert again is not None and again.shard_id in (a.shard_id, b.shard_id)
