"""What trainers rely on survives a master restart: registered datasets with their progress,
the KV store, the job's incarnation; a job whose saved progress is gone refuses to start."""

import threading
from pathlib import Path

import pytest

from flexjob.api import names
from flexjob.api.errors import NodeFencedError
from flexjob.core.training.dataset import Dataset
from flexjob.master.service import MasterService
from flexjob.master.state_file import StateLostError
from flexjob.rpc.messages import NodeRef
from tests.support.masters import master_config

W = NodeRef("w")
DIGITS = Dataset(name="digits", size=40, shard_size=10, epochs=2, shuffle=True, seed=3)
LONG = Dataset(name="long", size=200, shard_size=10)


def service(tmp_path: Path, **kw: object) -> MasterService:
    return MasterService(master_config("durable", tmp_path, **kw))


def report(svc: MasterService, dataset: str, n: int) -> list[int]:
    done = []
    for _ in range(n):
        shard = svc.get_shard(W, dataset)
        assert svc.report_shard(W, dataset, shard.shard_id)
        done.append(shard.shard_id)
    return done


@pytest.mark.parametrize("snapshot_every", [1, 1000], ids=["snapshots", "journal-only"])
def test_a_dataset_registered_by_trainers_keeps_its_progress_across_a_restart(
    tmp_path: Path, snapshot_every: int
) -> None:
    first = service(tmp_path, persistence__snapshot_every=snapshot_every)
    first.register_dataset(W, DIGITS)
    report(first, "digits", 3)
    held = first.get_shard(W, "digits")  # handed out, not reported when the master dies
    second = service(tmp_path, persistence__snapshot_every=snapshot_every)  # no close(): a SIGKILL
    progress = second.get_progress(W, "digits")
    assert (progress.shards_done, progress.shards_total) == (3, 8)
    assert second.get_shard(W, "digits").shard_id == held.shard_id  # its answer may be lost
    assert second.report_shard(W, "digits", held.shard_id)
    assert second.get_progress(W, "digits").shards_done == 4


def test_kv_values_and_the_incarnation_survive_a_restart(tmp_path: Path) -> None:
    first = service(tmp_path)
    first.kv_set("user/key", b"\x00\xffbytes")
    assert first.kv_add("user/count", 5) == 5
    incarnation = first.kv_get(names.KV_INCARNATION)
    second = service(tmp_path)
    assert second.kv_get("user/key") == b"\x00\xffbytes"
    assert second.kv_add("user/count", 1) == 6
    assert incarnation and second.kv_get(names.KV_INCARNATION) == incarnation


def test_each_job_directory_gets_its_own_incarnation(tmp_path: Path) -> None:
    a = service(tmp_path / "a").kv_get(names.KV_INCARNATION)
    b = service(tmp_path / "b").kv_get(names.KV_INCARNATION)
    assert a and b and a != b


def test_a_master_whose_saved_state_was_deleted_refuses_to_start_over(tmp_path: Path) -> None:
    first = service(tmp_path)
    first.register_dataset(W, Dataset(size=40, shard_size=10))
    report(first, "", 2)
    first.close()
    (tmp_path / "master_state.json").unlink()
    with pytest.raises(StateLostError, match="progress is lost"):
        service(tmp_path)


def test_an_unreadable_state_file_is_an_error_not_a_fresh_start(tmp_path: Path) -> None:
    service(tmp_path).close()
    (tmp_path / "master_state.json").write_text('{"version": 1, "sha')
    with pytest.raises(StateLostError, match="cannot be read"):
        service(tmp_path)


def test_reports_go_on_while_a_periodic_snapshot_is_written_and_survive_a_kill_then(
    tmp_path: Path,
) -> None:
    first = service(tmp_path, persistence__snapshot_every=4)
    first.register_dataset(W, LONG)
    report(first, "long", 1)  # the epoch opened: that snapshot is saved before going on
    state = first.persistence.state
    assert state is not None
    saving, release = threading.Event(), threading.Event()
    save_text = state.save_text

    def slow_save(text: str) -> None:  # the periodic snapshot's file write hangs
        saving.set()
        assert release.wait(30)
        save_text(text)

    state.save_text = slow_save  # type: ignore[method-assign]
    a_done: list[int] = []
    b_done: list[int] = []
    a = threading.Thread(target=lambda: a_done.extend(report(first, "long", 3)))
    a.start()
    try:
        assert saving.wait(10), "3 shards journal more than snapshot_every lines"
        b = threading.Thread(target=lambda: b_done.extend(report(first, "long", 2)))
        b.start()
        b.join(10)
        assert not b.is_alive(), "reports waited for the periodic snapshot's file write"
        # Killed now: the old snapshot and both journals are all there is.
        second = service(tmp_path, persistence__snapshot_every=4)
        done = second.get_progress(W, "long").shards_done
        answered = 1 + len(a_done) + len(b_done)  # a's blocked call may be a journaled report
        assert answered <= done <= answered + 1
    finally:
        release.set()
        a.join(30)


def test_a_refusal_is_answered_only_once_the_fencing_it_rests_on_is_saved(
    tmp_path: Path,
) -> None:
    """The health check fenced node a a moment ago on another thread, its snapshot not
    written yet; a's call refused meanwhile waits for it: a master killed right after the
    refusal still refuses a's old incarnation when it restarts."""
    now = [0.0]
    config = master_config("durable", tmp_path, node_health__heartbeat_timeout=1.0)
    first = MasterService(config, clock=lambda: now[0])
    old = first.heartbeat(NodeRef("a"), 0.0).incarnation
    live = first.heartbeat(NodeRef("b"), 0.0).incarnation
    now[0] = 5.0
    first.heartbeat(NodeRef("b", incarnation=live), 5.0)
    checker = threading.Thread(
        target=lambda: (first.persistence.defer_flushes_here(), first.check())
    )
    checker.start()  # (its flush deferred: as if it had not run yet)
    checker.join()
    refused: list[Exception] = []

    def late_call() -> None:
        try:
            first.get_world(NodeRef("a", incarnation=old), 0)
        except NodeFencedError as exc:
            refused.append(exc)

    caller = threading.Thread(target=late_call)
    caller.start()
    caller.join()
    assert refused, "a's call was taken"
    second = MasterService(config)  # no close(): a SIGKILL right after the refusal
    with pytest.raises(NodeFencedError):
        second.get_world(NodeRef("a", incarnation=old), 0)
    assert not second.heartbeat(NodeRef("b", incarnation=live), 6.0).fenced
