"""The device-per-rank and backend rule (``core.training.devices``)."""

from __future__ import annotations

import pytest

from flexjob.api.errors import InvalidSpecError
from flexjob.core.training.devices import backend_for, device_for_rank


@pytest.mark.parametrize("local_rank", [0, 1, 7])
def test_a_rank_runs_on_the_cpu_when_no_cuda_device_is_visible(local_rank: int) -> None:
    assert device_for_rank(local_rank, visible=0) == "cpu"


@pytest.mark.parametrize(("local_rank", "visible"), [(0, 1), (0, 8), (3, 4), (7, 8)])
def test_each_local_rank_has_the_visible_device_of_its_number(
    local_rank: int, visible: int
) -> None:
    assert device_for_rank(local_rank, visible) == f"cuda:{local_rank}"


def test_more_local_ranks_than_visible_devices_is_refused_naming_the_count() -> None:
    with pytest.raises(InvalidSpecError, match=r"LOCAL_RANK=2 .* 2 CUDA device\(s\) visible"):
        device_for_rank(2, visible=2)


def test_a_negative_local_rank_is_refused() -> None:
    with pytest.raises(InvalidSpecError, match="LOCAL_RANK must be >= 0"):
        device_for_rank(-1, visible=0)


@pytest.mark.parametrize(
    ("device", "backend"), [("cpu", "gloo"), ("cuda:0", "nccl"), ("cuda:3", "nccl")]
)
def test_the_backend_follows_the_device(device: str, backend: str) -> None:
    assert backend_for(device) == backend


@pytest.mark.parametrize(
    ("device", "override"), [("cuda:0", "gloo"), ("cpu", "gloo"), ("cuda:1", "nccl")]
)
def test_a_named_backend_overrides_the_device_s(device: str, override: str) -> None:
    assert backend_for(device, override) == override


def test_an_unknown_backend_is_refused_naming_the_allowed_ones() -> None:
    with pytest.raises(InvalidSpecError, match=r"FLEXJOB_BACKEND='mpi' .* allowed: gloo, nccl"):
        backend_for("cpu", "mpi")


def test_nccl_on_the_cpu_is_refused() -> None:
    with pytest.raises(
        InvalidSpecError, match="nccl needs a CUDA device; this process runs on cpu"
    ):
        backend_for("cpu", "nccl")
