"""A training process's device and backend (``trainer.device``) and the breaker chosen for
its backend (``trainer.breaker``), on this machine's CPU. The CUDA side runs in
``tests/gpu`` where a GPU is visible."""

from __future__ import annotations

import os

import pytest
import torch

from flexjob.api.errors import InvalidSpecError
from flexjob.trainer import breaker, device

needs_no_gpu = pytest.mark.skipif(
    torch.cuda.is_available(), reason="checks the CPU path: this machine has a CUDA device"
)


@needs_no_gpu
def test_without_cuda_every_local_rank_runs_on_the_cpu_with_gloo() -> None:
    for local_rank in (0, 1, 3):
        dev = device.rank_device(local_rank)
        assert dev == torch.device("cpu")
        assert device.backend_of(dev) == "gloo"


def test_flexjob_backend_overrides_the_device_s_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLEXJOB_BACKEND", "gloo")
    assert device.backend_of(torch.device("cuda", 0)) == "gloo"


def test_a_wrong_flexjob_backend_is_refused_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLEXJOB_BACKEND", "ucc")
    with pytest.raises(InvalidSpecError, match="FLEXJOB_BACKEND='ucc'"):
        device.backend_of(torch.device("cpu"))


def test_collectives_run_on_the_cpu_without_a_group() -> None:
    assert device.collective_device() == torch.device("cpu")


def test_gloo_and_nccl_groups_get_their_own_breaker() -> None:
    assert isinstance(breaker.for_backend("gloo"), breaker.GlooBreaker)
    assert isinstance(breaker.for_backend("nccl"), breaker.NcclBreaker)


def test_a_gloo_world_re_forms_in_place() -> None:
    assert breaker.in_place_problem("gloo") is None


def test_an_nccl_world_re_forms_in_place_with_this_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TORCH_NCCL_ASYNC_ERROR_HANDLING", raising=False)
    assert breaker.in_place_problem("nccl") is None


@pytest.mark.parametrize("mode", ["1", "3"])
def test_an_nccl_watchdog_that_ends_the_process_means_the_restart_path(
    monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    monkeypatch.setenv("TORCH_NCCL_ASYNC_ERROR_HANDLING", mode)
    problem = breaker.in_place_problem("nccl")
    assert (
        problem == f"TORCH_NCCL_ASYNC_ERROR_HANDLING={mode} ends the process on a failed collective"
    )


def test_a_torch_without_process_group_abort_means_the_restart_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delattr(torch.distributed.distributed_c10d, "_abort_process_group")
    assert "no distributed_c10d._abort_process_group" in str(breaker.in_place_problem("nccl"))


def test_the_nccl_breaker_sets_blocking_wait_and_cleanup_only_error_handling(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("TORCH_NCCL_BLOCKING_WAIT", raising=False)
    monkeypatch.delenv("TORCH_NCCL_ASYNC_ERROR_HANDLING", raising=False)
    breaker.NcclBreaker().prepare()

    assert os.environ["TORCH_NCCL_BLOCKING_WAIT"] == "1"
    assert os.environ["TORCH_NCCL_ASYNC_ERROR_HANDLING"] == "2"


def test_the_nccl_breaker_keeps_the_user_s_nccl_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TORCH_NCCL_BLOCKING_WAIT", "0")
    breaker.NcclBreaker().prepare()

    assert os.environ["TORCH_NCCL_BLOCKING_WAIT"] == "0"


def test_an_nccl_breaker_of_no_group_breaks_nothing() -> None:
    assert breaker.NcclBreaker().break_world() == 0
