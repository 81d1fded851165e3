"""A workload modelled on the Pollux evaluation (OSDI'21): six models, production-like arrivals.

For: ``flexjob simulate gen-trace --workload pollux`` and ``benchmarks/scheduler.py``. Not for:
the CSV format (``trace``) or running it (``simulator``).

What is modelled, after the paper's description (our own numbers, not its data): 160 jobs
submitted over 8 hours to 16 nodes x 4 GPUs, sized like the Microsoft production trace the
paper samples from — most jobs small, a few very large — each job one of six models:

=========  ==================  =====  ==================================================
category   model               share  1-GPU work (hours, lognormal median, clipped)
=========  ==================  =====  ==================================================
small      CIFAR-10/ResNet-18  0.40   0.3 (0.05 .. 1)
small      NCF (MovieLens)     0.32   0.15 (0.05 .. 1)
medium     BERT fine-tuning    0.10   2 (1 .. 10)
medium     DeepSpeech2         0.10   2.5 (1 .. 10)
large      YOLOv3              0.06   8 (4 .. 25)
xl         ImageNet/ResNet-50  0.02   30 (15 .. 80)
=========  ==================  =====  ==================================================

Each model has a step-time model (``goodput_model.ThroughputParams``: compute per sample,
all-reduce cost growing with the model's gradient size, much dearer across nodes), a base
local batch, a per-replica memory bound and a global batch bound (adaptive batch size, as
every Pollux job has), and a gradient noise scale for its statistical efficiency. Arrivals
follow a bursty hourly rate (busy and quiet hours, like a production day), Poisson within the
hour. The replicas a user asks for (what ``static`` and ``tiresias`` give) grow with the
category; every job may be resized between 1 and 64 replicas.
"""

import bisect
import random
from dataclasses import dataclass

from flexjob.scheduler.trace import TraceJob, check_workload, synthetic_job


@dataclass(frozen=True, slots=True)
class ModelClass:
    """One model of the workload (see the module docstring)."""

    name: str
    share: float
    hours: float
    hours_range: tuple[float, float]
    asks: tuple[int, ...]
    local_batch: float
    max_local_batch: float
    max_batch: float
    noise_scale: float
    alpha: float
    beta: float
    sync: tuple[float, float, float, float]


MODELS: tuple[ModelClass, ...] = (
    ModelClass(
        "cifar10", 0.40, 0.3, (0.05, 1.0), (1, 1, 2), 128.0, 1024.0, 4096.0, 1500.0,
        0.010, 0.0004, (0.008, 0.0005, 0.025, 0.001),
    ),
    ModelClass(
        "ncf", 0.32, 0.15, (0.05, 1.0), (1, 1, 2), 256.0, 4096.0, 16384.0, 6000.0,
        0.005, 0.00004, (0.004, 0.0003, 0.012, 0.0008),
    ),
    ModelClass(
        "bert", 0.10, 2.0, (1.0, 10.0), (2, 4), 12.0, 32.0, 384.0, 250.0,
        0.030, 0.030, (0.06, 0.002, 0.15, 0.006),
    ),
    ModelClass(
        "deepspeech2", 0.10, 2.5, (1.0, 10.0), (2, 4), 20.0, 40.0, 640.0, 800.0,
        0.050, 0.020, (0.04, 0.002, 0.10, 0.004),
    ),
    ModelClass(
        "yolov3", 0.06, 8.0, (4.0, 25.0), (4, 8), 8.0, 16.0, 512.0, 400.0,
        0.050, 0.040, (0.05, 0.003, 0.12, 0.006),
    ),
    ModelClass(
        "imagenet", 0.02, 30.0, (15.0, 80.0), (8, 16), 128.0, 256.0, 12800.0, 8000.0,
        0.020, 0.0028, (0.025, 0.001, 0.06, 0.002),
    ),
)  # fmt: skip

#: Relative submission rate of each hour of the 8-hour window (busy and quiet hours).
HOURLY_RATE = (1.0, 1.6, 2.2, 1.4, 0.8, 1.2, 2.0, 0.6)


def _arrivals(rng: random.Random, num_jobs: int, hours: float) -> list[float]:
    """Sorted submit times: a piecewise-constant rate over the window, scaled to ``hours``."""
    span = hours * 3600.0 / len(HOURLY_RATE)
    cumulative = []
    total = 0.0
    for rate in HOURLY_RATE:
        total += rate
        cumulative.append(total)
    times = []
    for _ in range(num_jobs):
        slot = bisect.bisect_left(cumulative, rng.uniform(0.0, total))
        times.append(span * (slot + rng.random()))
    return sorted(times)


def _pick(rng: random.Random) -> ModelClass:
    return rng.choices(MODELS, [m.share for m in MODELS])[0]


def pollux_trace(
    num_jobs: int = 160,
    *,
    seed: int = 0,
    hours: float = 8.0,
    adaptive: bool = True,
    max_replicas: int = 64,
) -> list[TraceJob]:
    """The workload of the module docstring; ``adaptive=False`` fixes every local batch."""
    check_workload(num_jobs, hours)
    rng = random.Random(seed)
    jobs = []
    for i, submit in enumerate(_arrivals(rng, num_jobs, hours)):
        m = _pick(rng)
        lo, hi = m.hours_range
        work = 3600.0 * min(max(m.hours * rng.lognormvariate(0.0, 0.7), lo), hi)
        asked = min(rng.choice(m.asks), max_replicas)
        noise_scale = round(m.noise_scale * rng.uniform(0.7, 1.4), 1)
        jobs.append(
            synthetic_job(
                m.name,
                i,
                submit,
                work,
                asked,
                max_replicas,
                m.sync,
                local_batch=m.local_batch,
                noise_scale=noise_scale,
                alpha=m.alpha,
                beta=m.beta,
                max_batch=m.max_batch if adaptive else None,
                max_local_batch=m.max_local_batch if adaptive else None,
            )
        )
    return jobs
