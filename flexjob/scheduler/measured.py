"""A second job-model family for the simulator: jobs fitted to published measurements.

For: the held-out workload of ``benchmarks/scheduler.py`` (``flexjob simulate --workload
measured``): policies are tuned on the Pollux-like generator (``workloads``) and chosen on
this one, which was built apart from it. Not for: the trace format (``trace``) or how the
simulator runs a job (``sim_jobs``).

Each job type's true step time has Pollux's form (Qiao et al., "Pollux: Co-adaptive Cluster
Scheduling for Goodput-Optimized Deep Learning", OSDI'21, eq. 9-11; the same form as the
artifact's ``simulator/goodput.py``)::

    T_compute = alpha_c + beta_c * b
    T_sync    = alpha_r + beta_r * (n - 2)    one node, n >= 2 replicas (PCIe/NVLink all-reduce)
              = alpha_n + beta_n * (n - 2)    more than one node (network all-reduce)
    T         = (T_compute**gamma + T_sync**gamma) ** (1 / gamma)

The terms are our fits, by hand, to the step times measured on 16 nodes x 4 T4 GPUs that the
Pollux artifact publishes (petuum/adaptdl, ``simulator/traces/<model>/placements.csv``,
columns placement, local_bsz, step_time; DeepSpeech2's ``scalability.csv``): ``alpha_c`` and
``beta_c`` from one replica at the smallest and largest local batch, ``alpha_r`` / ``beta_r``
from placements ``2`` and ``4``, ``alpha_n`` / ``beta_n`` from ``11``, ``1111`` and the widest
placement, ``gamma`` from how much of the network time is hidden at the largest batch.
Base batch ``b0``, the local-batch bound and the global-batch bound are the artifact's
(``applications.py``: the smallest and largest validated batch, the largest profiled local
batch). NCF has no placement file there: its terms are our estimate (a small embedding model,
dominated by a fixed per-step cost), as are the entries marked "est." below.

The gradient noise scale grows as training progresses (McCandlish et al., "An Empirical
Model of Large-Batch Training", 2018; Pollux section 3.1). ``phi0`` and ``phi1`` are the noise
scale near the start and at the end of training, in samples, computed as
``grad_var / grad_sqr * b0`` from the artifact's ``validation-<b0>.csv`` (CIFAR-10 epoch 5 and
epoch 100; BERT epochs 1 and 2); the others are our estimates of the same order of growth.

=========== ======= ======== ======= ====== ======= ====== ===== === ===== ===== ==== ===== ====
type        alpha_c beta_c   alpha_r beta_r alpha_n beta_n gamma b0  max b max M phi0 phi1  MB
=========== ======= ======== ======= ====== ======= ====== ===== === ===== ===== ==== ===== ====
cifar10     0.0215  0.000665 0.030   0.005  0.100   0.005  2.0   256 1024  2048  900  70000 94
ncf (est.)  0.004   1.25e-5  0.003   0.0005 0.012   0.001  1.0   256 4096  16384 2000 20000 12
bert        0.222   0.0583   0.130   0.020  1.150   0.025  2.0   12  12    384   420  1120  1320
deepspeech2 0.270   0.0287   0.080   0.010  0.250   0.010  1.2   160 80    640   500  3000  280
yolov3      0.165   0.0255   0.100   0.030  0.650   0.030  1.5   8   8     128   100  1000  496
imagenet    0.061   0.00432  0.050   0.008  0.210   0.012  2.0   200 200   800   2000 20000 205
=========== ======= ======== ======= ====== ======= ====== ===== === ===== ===== ==== ===== ====

(DeepSpeech2's intra-node terms, YOLOv3's ``beta_r`` and every noise scale but CIFAR-10's
and BERT's are estimates; ``MB``: the checkpoint a restart loads - weights plus optimizer
state, 4 bytes a parameter: ResNet-18 11.7 M parameters with momentum, BERT-base 110 M with
Adam, YOLOv3 62 M, DeepSpeech2 about 35 M, ResNet-50 25.6 M, NCF about 1 M with Adam.)

Restart cost per job size: a restart costs ``RESTART_BASE`` seconds (processes, rendezvous,
data loaders: our estimate), plus loading the checkpoint at ``CHECKPOINT_MB_PER_S``, plus
``RESTART_PER_NODE`` seconds per node of the new allocation (our estimates) - 17 s for a
CIFAR-10 job on one node to about 60 s for BERT on four.

Work: a job's one-GPU hours, lognormal around the type's median (clipped), the median a
training run of the type at ``b0`` on one GPU (CIFAR-10 100 epochs, NCF 10, BERT 2 on SQuAD,
YOLOv3 a 50-epoch VOC run shortened to 30, ImageNet a 20-epoch run; DeepSpeech2 our
estimate), the mix of types the Pollux evaluation's (Table 1: 72% small, 20% medium, 6%
large, 2% XL).

Arrivals with bursts: a user often submits several jobs of one model at once (a
hyperparameter sweep; Jeon et al., "Analysis of Large-Scale Multi-Tenant GPU Clusters for
DNN Training Workloads", ATC'19). Events arrive uniformly over the window; with probability
``BURST_CHANCE`` an event is a sweep of 3 to 8 jobs of one type within ``BURST_SPREAD``
seconds, else one job.
"""

import random
from dataclasses import dataclass

from flexjob.scheduler.trace import TraceJob, check_workload, synthetic_job


@dataclass(frozen=True, slots=True)
class JobType:
    """One row of the module docstring's table, with its share and work."""

    name: str
    alpha_c: float
    beta_c: float
    alpha_r: float
    beta_r: float
    alpha_n: float
    beta_n: float
    gamma: float
    b0: float
    max_local_batch: float
    max_batch: float
    phi0: float
    phi1: float
    checkpoint_mb: float
    share: float
    hours: float
    hours_range: tuple[float, float]
    asks: tuple[int, ...]

    def sync_terms(self) -> tuple[float, float, float, float]:
        """Pollux's sync form as ``trace.SYNC_TERMS`` (the two are the same for n >= 2)."""
        local = self.alpha_r - self.beta_r
        return (local, self.beta_r, self.alpha_n - self.beta_n - local, self.beta_n - self.beta_r)


TYPES: tuple[JobType, ...] = (
    JobType("cifar10", 0.0215, 0.000665, 0.030, 0.005, 0.100, 0.005, 2.0, 256.0, 1024.0, 2048.0,
            900.0, 70000.0, 94.0, 0.40, 1.0, (0.2, 3.0), (1, 2)),
    JobType("ncf", 0.004, 1.25e-5, 0.003, 0.0005, 0.012, 0.001, 1.0, 256.0, 4096.0, 16384.0,
            2000.0, 20000.0, 12.0, 0.32, 0.4, (0.1, 1.5), (1,)),
    JobType("bert", 0.222, 0.0583, 0.130, 0.020, 1.150, 0.025, 2.0, 12.0, 12.0, 384.0,
            420.0, 1120.0, 1320.0, 0.10, 3.8, (1.5, 10.0), (2, 4, 8)),
    JobType("deepspeech2", 0.270, 0.0287, 0.080, 0.010, 0.250, 0.010, 1.2, 160.0, 80.0, 640.0,
            500.0, 3000.0, 280.0, 0.10, 3.0, (1.0, 10.0), (4, 8)),
    JobType("yolov3", 0.165, 0.0255, 0.100, 0.030, 0.650, 0.030, 1.5, 8.0, 8.0, 128.0,
            100.0, 1000.0, 496.0, 0.06, 6.0, (3.0, 20.0), (4, 8)),
    JobType("imagenet", 0.061, 0.00432, 0.050, 0.008, 0.210, 0.012, 2.0, 200.0, 200.0, 800.0,
            2000.0, 20000.0, 205.0, 0.02, 25.0, (12.0, 60.0), (8, 16, 32)),
)  # fmt: skip

RESTART_BASE = 15.0
CHECKPOINT_MB_PER_S = 50.0
RESTART_PER_NODE = 2.0
BURST_CHANCE = 0.25
BURST_SPREAD = 120.0


def _arrivals(rng: random.Random, num_jobs: int, hours: float) -> list[tuple[float, JobType]]:
    """(submit time, type) of ``num_jobs`` jobs: single jobs and sweeps, by submit time."""
    window = hours * 3600.0
    shares = [t.share for t in TYPES]
    jobs: list[tuple[float, JobType]] = []
    while len(jobs) < num_jobs:
        at = rng.uniform(0.0, window)
        kind = rng.choices(TYPES, shares)[0]
        size = rng.randint(3, 8) if rng.random() < BURST_CHANCE else 1
        for _ in range(min(size, num_jobs - len(jobs))):
            jobs.append((min(at + rng.uniform(0.0, BURST_SPREAD) * (size > 1), window), kind))
    return sorted(jobs, key=lambda j: j[0])


def measured_trace(
    num_jobs: int = 160, *, seed: int = 0, hours: float = 8.0, max_replicas: int = 64
) -> list[TraceJob]:
    """The workload of the module docstring (every job adaptive, as every Pollux job is)."""
    check_workload(num_jobs, hours)
    rng = random.Random(seed)
    out = []
    for i, (submit, kind) in enumerate(_arrivals(rng, num_jobs, hours)):
        lo, hi = kind.hours_range
        work = 3600.0 * min(max(kind.hours * rng.lognormvariate(0.0, 0.6), lo), hi)
        spread = rng.uniform(0.7, 1.4)  # the same model on other data: another noise scale
        out.append(
            synthetic_job(
                kind.name,
                i,
                submit,
                work,
                min(rng.choice(kind.asks), max_replicas),
                max_replicas,
                kind.sync_terms(),
                local_batch=kind.b0,
                noise_scale=round(kind.phi0 * spread, 1),
                alpha=kind.alpha_c,
                beta=kind.beta_c,
                max_batch=kind.max_batch,
                max_local_batch=kind.max_local_batch,
                gamma=kind.gamma,
                noise_growth=kind.phi1 / kind.phi0,
                restart_delay=RESTART_BASE + kind.checkpoint_mb / CHECKPOINT_MB_PER_S,
                restart_per_node=RESTART_PER_NODE,
                learned=True,
            )
        )
    return out
