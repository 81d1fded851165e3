"""Samples what a node's workers use (CPU, memory via psutil; GPU memory and utilisation via
NVML where there is one, ``agent.gpu``) and how fast they train.

Throughput comes from the trainer helpers' status files (samples committed over time). Not
for sending: the agent reports the numbers to the master.
"""

from __future__ import annotations

import time

import psutil

from flexjob.agent.gpu import GpuSampler
from flexjob.agent.workers import Worker
from flexjob.rpc.messages import NodeStats


class ResourceMonitor:
    """Keeps per-process psutil handles so CPU percentages are measured between two calls."""

    def __init__(self, gpu: GpuSampler | None = None) -> None:
        self._gpu = gpu if gpu is not None else GpuSampler()
        self._procs: dict[int, psutil.Process] = {}
        self._last_samples: tuple[float, int] | None = None

    def sample(self, workers: list[Worker]) -> NodeStats:
        cpu = 0.0
        mem = 0
        for w in workers:
            if w.state.finished:
                continue
            proc = self._procs.get(w.pid)
            try:
                if proc is None:
                    proc = psutil.Process(w.pid)
                    self._procs[w.pid] = proc
                cpu += proc.cpu_percent(None)
                mem += proc.memory_info().rss
            except psutil.Error:
                self._procs.pop(w.pid, None)
        statuses = [s for s in (w.status() for w in workers) if s is not None]
        step = max((s.step for s in statuses), default=0)
        samples = sum(s.samples for s in statuses)
        world = max((s.world_size for s in statuses), default=0)
        now = time.monotonic()
        rate = 0.0
        if self._last_samples is not None:
            t0, n0 = self._last_samples
            if now > t0 and samples >= n0:
                rate = (samples - n0) / (now - t0)
        self._last_samples = (now, samples)
        own = max((s.step_seconds for s in statuses), default=0.0)  # the slowest process's
        gpu = self._gpu.sample({w.pid for w in workers if not w.state.finished})
        return NodeStats(
            cpu, mem, step, rate, world, time.time(), step_seconds=own,
            gpu_memory_bytes=gpu.memory_bytes, gpu_percent=gpu.percent,
        )  # fmt: skip
