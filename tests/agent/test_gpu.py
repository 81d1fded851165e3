"""GPU numbers in an agent's stats (``agent.gpu``, ``agent.monitor``).

No GPU, driver or ``pynvml`` exists on this machine, so beyond the absent path NVML is a fake
module of ``pynvml``'s shape (its four calls, with the values NVML returns); the real NVML is
read by ``tests/gpu`` and ``benchmarks/gpu_check.py`` where a GPU is visible.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from dataclasses import dataclass, field
from types import SimpleNamespace

import pytest

from flexjob.agent.gpu import GpuSample, GpuSampler, load_nvml
from flexjob.agent.monitor import ResourceMonitor

GIB = 1 << 30


@dataclass
class FakeNvml:
    """``pynvml`` as a driver with GPUs would answer: per GPU its processes and utilisation."""

    gpus: list[tuple[list[tuple[int, int | None]], int]] = field(default_factory=list)
    broken: bool = False

    def nvmlDeviceGetCount(self) -> int:  # NVML's names
        if self.broken:
            raise RuntimeError("NVML_ERROR_GPU_IS_LOST")
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        return index

    def nvmlDeviceGetComputeRunningProcesses(self, handle: int) -> list[SimpleNamespace]:
        return [SimpleNamespace(pid=p, usedGpuMemory=m) for p, m in self.gpus[handle][0]]

    def nvmlDeviceGetUtilizationRates(self, handle: int) -> SimpleNamespace:
        return SimpleNamespace(gpu=self.gpus[handle][1], memory=0)


@pytest.mark.skipif(
    importlib.util.find_spec("pynvml") is not None, reason="checks the path without pynvml"
)
def test_without_nvml_the_gpu_numbers_are_zero_and_nothing_fails() -> None:
    assert load_nvml() is None
    sampler = GpuSampler()
    assert not sampler.available
    assert sampler.sample({1, 2}) == GpuSample(0, 0.0, 0)


def test_the_gpus_of_the_node_s_workers_count_and_no_other() -> None:
    nvml = FakeNvml(
        [
            ([(100, 3 * GIB), (999, 5 * GIB)], 80),  # a worker and someone else's process
            ([(101, 2 * GIB)], 60),  # the other worker
            ([(999, 7 * GIB)], 100),  # not ours: neither memory nor utilisation counts
        ]
    )
    assert GpuSampler(nvml).sample({100, 101}) == GpuSample(5 * GIB, 70.0, 2)


def test_memory_nvml_may_not_show_counts_as_zero() -> None:
    nvml = FakeNvml([([(100, None)], 50)])  # usedGpuMemory None: not permitted to read it
    assert GpuSampler(nvml).sample({100}) == GpuSample(0, 50.0, 1)


def test_a_failing_nvml_gives_zero_not_an_error() -> None:
    assert GpuSampler(FakeNvml(broken=True)).sample({100}) == GpuSample()


def test_the_agent_s_stats_carry_its_workers_gpu_memory_and_utilisation() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        worker = SimpleNamespace(
            pid=proc.pid, state=SimpleNamespace(finished=False), status=lambda: None
        )
        nvml = FakeNvml([([(proc.pid, 4 * GIB)], 90)])
        stats = ResourceMonitor(GpuSampler(nvml)).sample([worker])  # type: ignore[list-item]
    finally:
        proc.kill()
        proc.wait()
    assert (stats.gpu_memory_bytes, stats.gpu_percent) == (4 * GIB, 90.0)
