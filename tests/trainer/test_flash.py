"""Flash checkpoints in one process: shared-memory slots, restore order, torn copies, and the
trainer with the option on and off (real files in /dev/shm, real SIGKILL for a torn copy)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from flexjob.api import names
from flexjob.trainer import flash_files
from flexjob.trainer.flash import FlashCheckpoint, flash_enabled
from flexjob.trainer.flash_files import locked

HERE = Path(__file__).resolve().parent


@pytest.fixture
def shm(tmp_path: Path) -> Iterator[Path]:
    path = flash_files.default_shm_dir(tmp_path / "ckpt", f"test-{os.getpid()}", 0)
    yield path
    flash_files.remove_slots(path)


def trained(seed: int = 0) -> tuple[torch.nn.Module, torch.optim.Optimizer]:
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    for _ in range(2):
        model(torch.randn(4, 8)).sum().backward()
        opt.step()
    return model, opt


def same(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    pairs = zip(a.state_dict().values(), b.state_dict().values(), strict=True)
    return all(torch.equal(x, y) for x, y in pairs)


def test_restore_reads_model_optimizer_sampler_and_step_from_memory(
    tmp_path: Path, shm: Path
) -> None:
    model, opt = trained()
    ck = FlashCheckpoint(tmp_path / "ckpt", shm)
    assert ck.save(model=model, optimizer=opt, sampler_state={"epoch": 2}, step=7)
    ck.close()

    other, other_opt = trained(seed=1)
    state = FlashCheckpoint(tmp_path / "ckpt", shm).restore(model=other, optimizer=other_opt)
    assert state is not None
    assert (state["source"], state["step"], state["sampler"]) == ("memory", 7, {"epoch": 2})
    assert same(model, other)
    want, got = opt.state_dict(), other_opt.state_dict()
    assert want["param_groups"] == got["param_groups"]
    for key, value in want["state"][0].items():
        assert torch.equal(value, got["state"][0][key])
    assert not (tmp_path / "ckpt").exists()  # nothing written to storage: no persist asked


def test_tensors_of_any_dtype_shape_and_layout_come_back_equal(tmp_path: Path, shm: Path) -> None:
    extra = {
        "transposed": torch.arange(6.0).reshape(2, 3).t(),  # not contiguous
        "scalar": torch.tensor(3, dtype=torch.int64),
        "empty": torch.empty(0, 4),
        "bf16": torch.randn(5, dtype=torch.bfloat16),
        "mask": torch.tensor([True, False, True]),
        "nested": [{"x": torch.ones(2)}, (torch.zeros(1), "label")],
    }
    model, _ = trained()
    ck = FlashCheckpoint(tmp_path / "ckpt", shm)
    ck.save(model=model, step=1, extra=extra)
    state = FlashCheckpoint(tmp_path / "ckpt", shm).restore(model=trained(seed=1)[0])
    assert state is not None
    got = state["extra"]
    for key in ("transposed", "scalar", "empty", "bf16", "mask"):
        assert got[key].dtype == extra[key].dtype and torch.equal(got[key], extra[key]), key
    assert torch.equal(got["nested"][0]["x"], torch.ones(2))
    assert got["nested"][1][1] == "label" and isinstance(got["nested"][1], tuple)
    ck.close()


def test_saves_reuse_the_same_shared_memory_buffers(tmp_path: Path, shm: Path) -> None:
    model, opt = trained()
    ck = FlashCheckpoint(tmp_path / "ckpt", shm)
    for step in range(1, 3):
        ck.save(model=model, optimizer=opt, step=step)
    files = {p: (p.stat().st_ino, p.stat().st_size) for p in flash_files.slot_paths(shm)}
    for step in range(3, 9):
        assert ck.save(model=model, optimizer=opt, step=step)
    assert {p: (p.stat().st_ino, p.stat().st_size) for p in flash_files.slot_paths(shm)} == files
    assert sorted(os.listdir(shm)) == ["slot-0", "slot-1"]
    ck.close()


def test_without_an_agent_the_process_writes_storage_itself_and_restores_from_it(
    tmp_path: Path, shm: Path
) -> None:
    model, opt = trained()
    ck = FlashCheckpoint(tmp_path / "ckpt", shm)
    ck.save(model=model, optimizer=opt, step=3, persist=True)
    ck.finish()  # waits for the write, frees the shared memory
    assert not shm.exists()
    stored = flash_files.read_header(tmp_path / "ckpt" / flash_files.FLASH_FILE)
    assert stored is not None and stored.sealed and stored.step == 3

    other, other_opt = trained(seed=1)
    state = FlashCheckpoint(tmp_path / "ckpt", shm).restore(model=other, optimizer=other_opt)
    assert state is not None and (state["source"], state["step"]) == ("storage", 3)
    assert same(model, other)


def test_storage_newer_than_memory_wins(tmp_path: Path, shm: Path) -> None:
    model, _ = trained()
    writer = FlashCheckpoint(tmp_path / "ckpt", tmp_path / "other-shm")
    writer.save(model=model, step=9, persist=True)
    writer.finish()
    old, _ = trained(seed=2)
    FlashCheckpoint(tmp_path / "ckpt", shm).save(model=old, step=4)
    fresh, _ = trained(seed=3)
    state = FlashCheckpoint(tmp_path / "ckpt", shm).restore(model=fresh)
    assert state is not None and (state["source"], state["step"]) == ("storage", 9)
    assert same(model, fresh)


def test_a_copy_torn_by_a_kill_mid_save_is_never_restored(tmp_path: Path, shm: Path) -> None:
    script = HERE / "flash_torn_writer.py"
    run = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "ckpt"), str(shm)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == -9, run.stderr
    headers = [flash_files.read_header(p) for p in flash_files.slot_paths(shm)]
    torn = [h for h in headers if h is not None and h.step == 2]
    assert len(torn) == 1 and not torn[0].sealed  # step 2 was written but never sealed

    model = torch.nn.Linear(64, 64)
    state = FlashCheckpoint(tmp_path / "ckpt", shm).restore(model=model)
    assert state is not None and state["step"] == 1
    assert model.weight.sum().item() == pytest.approx(float(run.stdout.split()[0]), abs=1e-3)


def test_a_save_is_skipped_while_its_slot_is_written_to_storage(tmp_path: Path, shm: Path) -> None:
    model, _ = trained()
    ck = FlashCheckpoint(tmp_path / "ckpt", shm)
    ck.save(model=model, step=1)
    ck.save(model=model, step=2)  # slot 1; slot 0 (step 1) is next to be overwritten
    fd = os.open(flash_files.slot_paths(shm)[0], os.O_RDONLY)
    try:
        with locked(fd, exclusive=False) as got:  # as the agent holds it while copying
            assert got
            assert not ck.save(model=model, step=3)
    finally:
        os.close(fd)
    header = ck.memory_header()
    assert header is not None and header.step == 2 and ck.skipped == 1
    assert ck.save(model=model, step=3)
    ck.close()


def test_the_switch_reads_the_environment_and_refuses_other_values(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(names.ENV_FLASH_CHECKPOINT, raising=False)
    assert not flash_enabled(None)
    monkeypatch.setenv(names.ENV_FLASH_CHECKPOINT, "1")
    assert flash_enabled(None) and not flash_enabled(False)
    monkeypatch.setenv(names.ENV_FLASH_CHECKPOINT, "maybe")
    with pytest.raises(ValueError, match="FLEXJOB_FLASH_CHECKPOINT='maybe': use 1"):
        flash_enabled(None)


def test_a_flash_fd_that_is_no_agent_socket_falls_back_to_the_processs_own_writer(
    tmp_path: Path, shm: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with (tmp_path / "not-a-socket").open("w") as f:
        monkeypatch.setenv(names.ENV_FLASH_FD, str(f.fileno()))
        assert flash_files.FlashNotice.from_env() is None
    monkeypatch.setenv(names.ENV_FLASH_SHM_DIR, str(shm))
    ck = FlashCheckpoint.for_process(tmp_path / "ckpt", "node", 0)
    model, _ = trained()
    assert ck.save(model=model, step=4, persist=True)
    ck.finish()  # its own thread wrote the copy
    stored = flash_files.read_header(tmp_path / "ckpt" / flash_files.FLASH_FILE)
    assert stored is not None and stored.step == 4
