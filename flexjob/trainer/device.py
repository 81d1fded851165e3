"""The device of this training process and the backend of its collectives, with torch.

Each local rank runs on a device of its own (``LOCAL_RANK`` → ``cuda:<local rank>`` among the
devices ``CUDA_VISIBLE_DEVICES`` leaves visible; the CPU where CUDA sees none) and its
collectives on the backend that device needs (nccl on CUDA, gloo on the CPU, or
``FLEXJOB_BACKEND``): the rule is ``core.training.devices``. The tensors of flexjob's own
collectives (the step's control all-reduce, the state sync, the pre-flight check) live on
``collective_device()``. Not for forming or breaking groups (``trainer.group``,
``trainer.breaker``).
"""

from __future__ import annotations

import logging

import torch
import torch.distributed as dist

from flexjob.core.training import devices
from flexjob.trainer.settings import TrainerSettings, current_or

log = logging.getLogger(__name__)


def visible_cuda_devices() -> int:
    """How many CUDA devices this process sees (0 without CUDA or a CUDA build of torch)."""
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def rank_device(local_rank: int) -> torch.device:
    """The device of local rank ``local_rank``, made the current CUDA device when it is one."""
    device = torch.device(devices.device_for_rank(local_rank, visible_cuda_devices()))
    if device.type == devices.CUDA:
        torch.cuda.set_device(device)
    return device


def backend_of(device: torch.device, settings: TrainerSettings | None = None) -> str:
    """The collective backend of a process on ``device`` (``FLEXJOB_BACKEND`` overrides)."""
    override = (current_or(settings).backend or "").strip().lower() or None
    return devices.backend_for(str(device), override)


def collective_device() -> torch.device:
    """Where the tensors of a collective of the current group must be: the current CUDA
    device under nccl, else the CPU."""
    if dist.is_initialized() and dist.get_backend() == devices.NCCL:
        return torch.device(devices.CUDA, torch.cuda.current_device())
    return torch.device(devices.CPU)
