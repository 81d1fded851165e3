"""GPU memory and utilisation of a node's training processes, from NVML (nvidia-ml-py).

``GpuSampler`` asks NVML, for every GPU, which processes hold memory on it; the GPUs that run
one of the node's workers count: the memory those workers hold there, summed, and the GPUs'
mean utilisation. NVML is optional: without the ``pynvml`` module (package ``nvidia-ml-py``)
or without a driver every sample is zero and nothing fails. Not for choosing devices
(``trainer.device``) nor for reporting (``agent.monitor`` puts the numbers in ``NodeStats``).
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class GpuSample:
    memory_bytes: int = 0  # held by the node's workers, over every GPU
    percent: float = 0.0  # mean utilisation of the GPUs they run on
    devices: int = 0  # how many GPUs run one of them


def load_nvml() -> Any | None:
    """The initialised ``pynvml`` module, or None without one (or without a driver)."""
    try:
        nvml = importlib.import_module("pynvml")
        nvml.nvmlInit()
    except Exception as exc:  # no module, no library, no driver: GPU numbers are 0
        log.debug("no NVML: %s", exc)
        return None
    return nvml


class GpuSampler:
    """Samples through ``nvml`` (a ``pynvml``-shaped module; ``load_nvml()`` by default)."""

    def __init__(self, nvml: Any | None = None, *, load: bool = True) -> None:
        self._nvml = nvml if nvml is not None or not load else load_nvml()

    @property
    def available(self) -> bool:
        return self._nvml is not None

    def sample(self, pids: Collection[int]) -> GpuSample:
        """The GPUs of the processes ``pids``; zero without NVML or when a call fails."""
        nvml = self._nvml
        if nvml is None or not pids:
            return GpuSample()
        memory, percent, used = 0, 0.0, 0
        try:
            for index in range(nvml.nvmlDeviceGetCount()):
                handle = nvml.nvmlDeviceGetHandleByIndex(index)
                mine = [
                    p for p in nvml.nvmlDeviceGetComputeRunningProcesses(handle) if p.pid in pids
                ]
                if not mine:
                    continue
                memory += sum(int(p.usedGpuMemory or 0) for p in mine)  # None: not permitted
                percent += float(nvml.nvmlDeviceGetUtilizationRates(handle).gpu)
                used += 1
        except Exception as exc:  # a GPU that fell off the bus must not stop the agent
            log.debug("NVML sample failed: %s", exc)
            return GpuSample()
        return GpuSample(memory, percent / used if used else 0.0, used)
