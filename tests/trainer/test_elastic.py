"""ElasticTrainer in one process: a real TCPStore and gloo group of size 1, a fake master."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.nn.functional as F

from flexjob.api import names
from flexjob.trainer import ElasticSampler, ElasticTrainer, flash_files
from flexjob.trainer.elastic import EXIT_NOT_IN_PLACE
from tests.support.ranks import local_store
from tests.trainer.fakes import FakeMaster, shards

GLOO_ERROR = "[gloo/transport/tcp/pair.cc:553] Connection closed by peer [127.0.0.1]:1"


@pytest.fixture
def master(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeMaster]:
    for key in (
        names.ENV_ROUND,
        names.ENV_STORE_ADDRESS,
        names.ENV_STATUS_FILE,
        names.ENV_CHECKPOINT_DIR,
        names.ENV_COLLECTIVE_TIMEOUT,
        names.ENV_FLASH_CHECKPOINT,
        names.ENV_FLASH_FD,
        names.ENV_FLASH_SHM_DIR,
    ):
        monkeypatch.delenv(key, raising=False)
    _store, address = local_store()
    yield FakeMaster(shards(4, 8), store_address=address)
    if dist.is_initialized():
        dist.destroy_process_group()


def _trainer(master: FakeMaster, tmp_path: Path | None = None) -> ElasticTrainer:
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    sampler = ElasticSampler(batch_size=4)
    return ElasticTrainer(
        model, opt, sampler, link=master, checkpoint_dir=tmp_path, checkpoint_every=2
    )


def _assert_a_new_trainer_resumes(
    master: FakeMaster, trained: ElasticTrainer, checkpoint_dir: Path | None = None
) -> None:
    """A trainer started after ``trained`` finished resumes its step and weights (not random
    ones) from the checkpoint in ``checkpoint_dir`` (None: the default one)."""
    master.shards = []
    with _trainer(master, checkpoint_dir) as again:
        assert again.step_count == 8
        assert torch.equal(again.module.weight, trained.module.weight)


def _train_step(trainer: ElasticTrainer, indices: list[int]) -> None:
    x = torch.ones(len(indices), 4)
    y = torch.zeros(len(indices), dtype=torch.int64)
    F.cross_entropy(trainer.model(x), y, reduction="sum").backward()
    trainer.optimizer.step()


def test_every_shard_is_reported_once_after_its_steps(master: FakeMaster) -> None:
    with _trainer(master) as t:
        steps = t.fit(lambda s: _train_step(t, s.indices))
    assert steps == 8
    assert master.reports == [0, 1, 2, 3]


def test_collective_error_reforms_in_place_and_retries_the_same_batch(
    master: FakeMaster,
) -> None:
    seen: list[list[int]] = []
    with _trainer(master) as t:
        for s in t.steps():
            with t.step():
                seen.append(s.indices)
                if len(seen) == 3:
                    raise RuntimeError(GLOO_ERROR)
                _train_step(t, s.indices)
        assert t.reforms == 1 and t.round == 2
    assert seen[2] == seen[3]  # the failed step's batch came back
    assert t.step_count == 8 and master.reports == [0, 1, 2, 3]


def test_a_world_that_cannot_re_form_in_place_ends_the_process_saying_why(
    master: FakeMaster, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """NCCL whose watchdog tears the process down (torchrun's default) cannot re-form in
    place: the broken world ends the process (its agent restarts it) with one log line. The
    group here is gloo (no NCCL on this machine); the trainer is told its backend is nccl."""
    monkeypatch.setenv("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1")
    with _trainer(master) as t, pytest.raises(SystemExit) as exited:
        t.backend = "nccl"
        for s in t.steps():
            with t.step():
                if s.number == 1:
                    raise RuntimeError(GLOO_ERROR)
                _train_step(t, s.indices)
    assert exited.value.code == EXIT_NOT_IN_PLACE
    lines = [r.getMessage() for r in caplog.records if "restarting the process" in r.getMessage()]
    assert lines == [
        "world of round 1 broke; restarting the process: "
        "TORCH_NCCL_ASYNC_ERROR_HANDLING=1 ends the process on a failed collective"
    ]
    assert t.reforms == 0


def test_waiting_node_makes_the_world_reform_at_a_step_boundary(master: FakeMaster) -> None:
    with _trainer(master) as t:
        for i, s in enumerate(t.steps()):
            with t.step():
                _train_step(t, s.indices)
            if i == 1:
                assert t._watcher is not None
                t._watcher._waiting = 1  # what the background poll reports
        assert t.reforms == 1


def test_user_errors_propagate_out_of_the_step(master: FakeMaster) -> None:
    with _trainer(master) as t, pytest.raises(ValueError, match="boom"):
        for _ in t.steps():
            with t.step():
                raise ValueError("boom")


def test_rank_zero_checkpoints_and_a_new_trainer_resumes_the_step(
    master: FakeMaster, tmp_path: Path
) -> None:
    with _trainer(master, tmp_path) as t:
        t.fit(lambda s: _train_step(t, s.indices))
    _assert_a_new_trainer_resumes(master, t, tmp_path)


def test_without_a_checkpoint_dir_the_trainer_checkpoints_to_the_job_directory(
    master: FakeMaster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(names.ENV_CHECKPOINT_DIR, str(tmp_path / "job-ckpt"))
    with _trainer(master) as t:
        t.fit(lambda s: _train_step(t, s.indices))
    assert (tmp_path / "job-ckpt" / "checkpoint.pt").is_file()
    _assert_a_new_trainer_resumes(master, t)


def test_checkpoint_false_turns_the_default_checkpoints_off(
    master: FakeMaster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(names.ENV_CHECKPOINT_DIR, str(tmp_path / "job-ckpt"))
    model = torch.nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with ElasticTrainer(
        model, opt, ElasticSampler(batch_size=4), link=master, checkpoint=False
    ) as t:
        t.fit(lambda s: _train_step(t, s.indices))
    assert not (tmp_path / "job-ckpt").exists()


def test_goodput_reporter_publishes_measured_step_times_to_the_master(master: FakeMaster) -> None:
    import json

    from flexjob.scheduler.profilings import read_profilings
    from flexjob.trainer.goodput import GoodputReporter, noise_hook

    with _trainer(master) as t:
        reporter = GoodputReporter(4.0, publish_every_s=0.0).attach(t)
        t.model.register_comm_hook(None, noise_hook(reporter.noise, lambda: 4.0))  # type: ignore[operator]
        before = t.module.weight.detach().clone()
        steps = t.fit(lambda s: _train_step(t, s.indices))
    assert steps == 8 and not torch.equal(before, t.module.weight)  # the hook all-reduced
    prof = read_profilings(json.loads(master.published[names.KV_PROFILINGS]))
    assert [(s.nodes, s.replicas, s.local_batch) for s in prof.steps] == [(1, 1, 4.0)]
    assert prof.steps[0].step_time > 0 and prof.local_batch == 4.0


def test_flash_off_keeps_the_ordinary_checkpoint_and_no_shared_memory(
    master: FakeMaster, tmp_path: Path
) -> None:
    with _trainer(master, tmp_path) as t:
        t.fit(lambda s: _train_step(t, s.indices))
        assert t.saver.flash is None
        shm = flash_files.default_shm_dir(tmp_path, t.ident.node_id, 0)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint.pt"]
    assert not shm.exists()


def test_flash_on_resumes_from_the_copy_in_memory_of_the_last_step(
    master: FakeMaster, tmp_path: Path
) -> None:
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    t = ElasticTrainer(
        model, opt, ElasticSampler(batch_size=4), link=master, checkpoint_dir=tmp_path,
        checkpoint_every=100, flash=True,
    )  # fmt: skip
    assert t.saver.flash is not None
    try:
        with t:
            for s in t.steps():
                if s.number == 5:
                    break  # as if killed: 5 steps done, none of them on disk
                with t.step():
                    _train_step(t, s.indices)
            weights = model.weight.detach().clone()
        assert not (tmp_path / "checkpoint.pt").exists()
        assert not (tmp_path / flash_files.FLASH_FILE).exists()

        again = torch.nn.Linear(4, 2)
        master.round = 0
        r = ElasticTrainer(
            again, torch.optim.SGD(again.parameters(), lr=0.1, momentum=0.9),
            ElasticSampler(batch_size=4), link=master, checkpoint_dir=tmp_path, flash=True,
        )  # fmt: skip
        with r:
            assert (r.resumed_from, r.step_count) == ("memory", 5)
            assert torch.equal(again.weight, weights)
            r.fit(lambda s: _train_step(r, s.indices))
        stored = flash_files.read_header(tmp_path / flash_files.FLASH_FILE)
        assert stored is not None and stored.step == r.step_count  # the end is on storage
    finally:
        flash_files.remove_slots(t.saver.flash.shm_dir)


@dataclass
class ReportFails(FakeMaster):
    """The master goes away while the third shard's report is under way."""

    def report_shard(self, dataset: str, shard_id: int) -> bool:
        if shard_id == 2:
            raise ConnectionError("master unreachable")
        return super().report_shard(dataset, shard_id)


def test_a_flash_copy_is_sealed_only_after_its_steps_shards_are_reported(
    master: FakeMaster, tmp_path: Path
) -> None:
    failing = ReportFails(shards(4, 4), store_address=master.store_address)
    model = torch.nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    t = ElasticTrainer(
        model, opt, ElasticSampler(batch_size=4), link=failing, checkpoint_dir=tmp_path,
        flash=True,
    )  # fmt: skip
    assert t.saver.flash is not None
    try:
        with pytest.raises(ConnectionError), t:
            t.fit(lambda s: _train_step(t, s.indices))
        newest = t.saver.flash.memory_header()
        # step 3's copy was staged but its shard never reported: the newest copy is step 2,
        # exactly the steps whose shards the master counts done
        assert newest is not None and newest.step == 2 and failing.reports == [0, 1]
    finally:
        flash_files.remove_slots(t.saver.flash.shm_dir)


def test_a_step_whose_flash_copy_fails_reports_no_shard(
    master: FakeMaster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from flexjob.trainer import flash

    copies = 0
    real = flash._Slot.copy_in

    def shm_full_at_step_3(self: flash._Slot, offset: int, t: torch.Tensor, n: int) -> None:
        nonlocal copies
        copies += 1
        if copies > 2 * 2:  # two tensors per copy: the third copy fails
            raise OSError(28, "No space left on device")
        real(self, offset, t, n)

    monkeypatch.setattr(flash._Slot, "copy_in", shm_full_at_step_3)
    master.shards = shards(4, 4)
    t = _trainer(master, tmp_path)
    t.saver.flash = flash.FlashCheckpoint(tmp_path, tmp_path / "shm")
    with pytest.raises(OSError, match="No space left"), t:
        t.fit(lambda s: _train_step(t, s.indices))
    newest = t.saver.flash.memory_header()
    # the copy comes before the report: step 3 failed whole, its shard goes back to the master
    assert newest is not None and newest.step == 2 and master.reports == [0, 1]
