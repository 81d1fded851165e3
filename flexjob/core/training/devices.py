"""Which device and which collective backend a training process uses: the rule, no I/O.

A device per local rank: with ``visible`` CUDA devices (what CUDA counts after
``CUDA_VISIBLE_DEVICES``; device 0 is the first one listed there), local rank ``r`` runs on
``cuda:r``; with none, on the CPU. The backend follows the device (``nccl`` on CUDA, ``gloo``
on the CPU) unless the user names one (``FLEXJOB_BACKEND``). Not for placing anything
(``trainer.device`` does, with torch) nor for forming the group (``trainer.group``).
"""

from __future__ import annotations

from flexjob.api import names
from flexjob.api.errors import InvalidSpecError

CPU = "cpu"
CUDA = "cuda"
GLOO = "gloo"
NCCL = "nccl"
#: The backends a training process may be told to use (``FLEXJOB_BACKEND``).
BACKENDS = (GLOO, NCCL)


def device_for_rank(local_rank: int, visible: int) -> str:
    """The device of local rank ``local_rank`` when ``visible`` CUDA devices are visible:
    ``cuda:<local rank>``, or ``cpu`` when none is. More local ranks than visible devices is
    an error: NCCL refuses two ranks on one device."""
    if local_rank < 0:
        raise InvalidSpecError(f"{names.ENV_LOCAL_RANK} must be >= 0, got {local_rank}")
    if visible <= 0:
        return CPU
    if local_rank >= visible:
        raise InvalidSpecError(
            f"{names.ENV_LOCAL_RANK}={local_rank} has no device of its own: {visible} CUDA "
            f"device(s) visible (CUDA_VISIBLE_DEVICES); run at most {visible} process(es) "
            "per node (--nproc-per-node gpu)"
        )
    return f"{CUDA}:{local_rank}"


def backend_for(device: str, override: str | None = None) -> str:
    """The collective backend of a process on ``device``: ``override`` when given (one of
    ``BACKENDS``), else ``nccl`` on CUDA and ``gloo`` on the CPU."""
    if override:
        if override not in BACKENDS:
            raise InvalidSpecError(
                f"{names.ENV_BACKEND}={override!r} is not a backend; allowed: {', '.join(BACKENDS)}"
            )
        if override == NCCL and not device.startswith(CUDA):
            raise InvalidSpecError(
                f"{names.ENV_BACKEND}=nccl needs a CUDA device; this process runs on {device}"
            )
        return override
    return NCCL if device.startswith(CUDA) else GLOO
