"""What an agent shows on its ``/metrics``: its workers' CPU (in cores), memory and GPU, the
step, the samples trained (a counter: Prometheus' ``rate()`` is the throughput) and seconds per
step (from the trainer's status), and restarts (counted where they happen).

The metrics are made when this module is imported, so every family is listed from the first
scrape. Not for sending stats to the master (``agent.agent`` does, from the same
``NodeStats``).
"""

from __future__ import annotations

import time
from pathlib import Path

from flexjob.observe import metrics, metrics_http
from flexjob.rpc.messages import NodeStats

LABELS = ("job_name", "node")
RESTARTS = metrics.counter("flexjob_agent_restarts", "Restarts of failed workers.", LABELS)
CPU = metrics.gauge(
    "flexjob_agent_cpu_ratio", "Workers' CPU use in cores (1: one core busy).", LABELS
)
MEMORY = metrics.gauge("flexjob_agent_memory_bytes", "Workers' resident memory.", LABELS)
GPU_MEMORY = metrics.gauge(
    "flexjob_agent_gpu_memory_bytes", "GPU memory the workers hold (0: no GPU).", LABELS
)
GPU = metrics.gauge(
    "flexjob_agent_gpu_percent", "Mean utilisation of the workers' GPUs, %.", LABELS
)
STEP = metrics.gauge("flexjob_agent_step", "The trainer's last step.", LABELS)
SAMPLES = metrics.counter(
    "flexjob_agent_samples",
    "Samples this node trained, from its reported throughput (throughput: rate() of it).",
    LABELS,
)
STEP_SECONDS = metrics.gauge("flexjob_agent_step_seconds", "Seconds per step, recently.", LABELS)


def serve(run_dir: str, node_id: str) -> metrics_http.MetricsServer | None:
    """The agent's endpoint (``$FLEXJOB_METRICS_ADDR``); its address goes to
    ``<run-dir>/metrics-<node>.addr``."""
    return metrics_http.serve_configured(addr_file=Path(run_dir) / f"metrics-{node_id}.addr")


def restarted(job: str, node: str) -> None:
    RESTARTS.labels(job, node).inc()


class StepClock:
    """Sets the node's gauges from a sample; seconds per step from the steps the trainer
    reached between two samples."""

    def __init__(self) -> None:
        self._last: tuple[float, int] | None = None
        self._seen: float | None = None  # time.monotonic() of the last sample

    def observe(self, job: str, node: str, sample: NodeStats) -> None:
        CPU.labels(job, node).set(sample.cpu_percent / 100.0)
        MEMORY.labels(job, node).set(sample.memory_bytes)
        GPU_MEMORY.labels(job, node).set(sample.gpu_memory_bytes)
        GPU.labels(job, node).set(sample.gpu_percent)
        STEP.labels(job, node).set(sample.step)
        now = time.monotonic()
        if self._seen is not None:  # the samples trained since the last sample, at its rate
            SAMPLES.labels(job, node).inc(max(sample.samples_per_second, 0.0) * (now - self._seen))
        self._seen = now
        if self._last is not None and sample.step > self._last[1]:
            seconds = (now - self._last[0]) / (sample.step - self._last[1])
            STEP_SECONDS.labels(job, node).set(seconds)
        if self._last is None or sample.step != self._last[1]:
            self._last = (now, sample.step)
