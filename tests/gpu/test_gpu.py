"""What one GPU can show (marked ``gpu``; skipped without a CUDA device, saying so): each
local rank on its own device with nccl, an NCCL world of one formed, aborted and re-formed
in the same process through the trainer's own path (``trainer.group``, ``NcclBreaker``), the
state broadcast from GPU memory, a flash checkpoint of a GPU model restored bit for bit, and
NVML's numbers for this process. ``benchmarks/gpu_check.py`` times the same; docs/gpu.md says
what needs two GPUs."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
from torch.distributed import TCPStore  # type: ignore[attr-defined]

from flexjob.trainer import device, group
from flexjob.trainer.breaker import NcclBreaker
from flexjob.trainer.flash import FlashCheckpoint
from flexjob.trainer.rank_sync import broadcast_tensors
from flexjob.trainer.world import Generation

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(
        not torch.cuda.is_available(),
        reason="no CUDA device visible (torch.cuda.is_available() is False): needs a GPU",
    ),
]


def test_local_rank_0_runs_on_the_first_visible_gpu_with_nccl() -> None:
    dev = device.rank_device(0)
    assert dev == torch.device("cuda", 0)
    assert torch.cuda.current_device() == 0
    assert device.backend_of(dev) == "nccl"


def test_an_nccl_world_of_one_forms_aborts_and_re_forms_in_the_same_process() -> None:
    store = TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False)
    stores = group.StoreCache(30.0)
    torch.cuda.set_device(0)
    try:
        for round_ in range(1, 4):
            gen = Generation(round_, 0, 1, f"127.0.0.1:{store.port}", f"gpu/round-{round_}/")
            group.form_group(gen, 0, 1, stores, 30.0, backend="nccl")
            assert dist.get_backend() == "nccl"
            assert device.collective_device() == torch.device("cuda", 0)
            t = torch.full((4,), float(round_), device="cuda")
            dist.all_reduce(t)
            assert t.tolist() == [float(round_)] * 4
            broadcast_tensors([t], 0)  # the state sync's broadcast, from GPU memory
            assert group.abort_group() == 1  # the communicator aborted
            assert not dist.is_initialized()
    finally:
        group.destroy_group()


def test_the_nccl_settings_are_chosen_before_the_group_forms(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("TORCH_NCCL_BLOCKING_WAIT", raising=False)
    monkeypatch.delenv("TORCH_NCCL_ASYNC_ERROR_HANDLING", raising=False)
    NcclBreaker().prepare()
    assert os.environ["TORCH_NCCL_BLOCKING_WAIT"] == "1"
    assert os.environ["TORCH_NCCL_ASYNC_ERROR_HANDLING"] == "2"


def test_a_flash_checkpoint_of_a_gpu_model_restores_bit_for_bit(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.Linear(256, 10)).cuda()
    opt = torch.optim.Adam(model.parameters())
    model(torch.randn(8, 256, device="cuda")).sum().backward()
    opt.step()
    ck = FlashCheckpoint(tmp_path / "ckpt", tmp_path / "shm")
    assert ck.save(model=model, optimizer=opt, step=7)
    other = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.Linear(256, 10)).cuda()
    other_opt = torch.optim.Adam(other.parameters())
    state = FlashCheckpoint(tmp_path / "ckpt", tmp_path / "shm").restore(
        model=other, optimizer=other_opt
    )
    ck.close()
    assert state is not None and state["step"] == 7
    for a, b in zip(model.state_dict().values(), other.state_dict().values(), strict=True):
        assert b.device.type == "cuda" and torch.equal(a, b)
    moments = [s["exp_avg"] for s in other_opt.state_dict()["state"].values()]
    expected = [s["exp_avg"] for s in opt.state_dict()["state"].values()]
    assert all(torch.equal(a.cpu(), b.cpu()) for a, b in zip(expected, moments, strict=True))


@pytest.mark.skipif(
    importlib.util.find_spec("pynvml") is None,
    reason="nvidia-ml-py is not installed (pip install flexjob[gpu])",
)
def test_nvml_sees_the_gpu_memory_this_process_holds() -> None:
    from flexjob.agent.gpu import GpuSampler

    held = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()
    sample = GpuSampler().sample({os.getpid()})
    del held
    assert sample.devices == 1
    assert sample.memory_bytes >= 256 << 20
    assert 0.0 <= sample.percent <= 100.0


@pytest.mark.timeout(300)
def test_an_elastic_job_trains_on_the_gpu_with_nccl(tmp_path: Path) -> None:
    script = Path(__file__).with_name("elastic_gpu_train.py")
    cmd = [sys.executable, "-m", "flexjob", "run", "--nnodes", "1", "--nproc-per-node", "1",
           "--no-progress", "--job-dir", str(tmp_path / "job"), str(script)]  # fmt: skip
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=280, cwd=root)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "device=cuda:0 backend=nccl steps=16 param_device=cuda:0" in done.stdout, done.stdout
