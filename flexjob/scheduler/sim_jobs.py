"""A simulated job's truth and what it reports: true speed, the model a policy sees, restart cost.

For: the cluster simulator (``simulator``). A trace row (``trace.TraceJob``) describes a job;
``SimJob`` turns it into what the simulator needs each round:

- ``view(progress)``: the goodput model the job reports (``status.profilings``), the one a
  policy plans with. Its step-time terms are the row's when the row's ``gamma`` is 1; above 1
  they are the least-squares fit (``goodput_model.fit_throughput``, the Allocator's own fit) of
  the row's form to the job's *true* step times at the shapes in ``PROFILED_SHAPES``. A row
  marked ``learned`` reports what a live job reports: the fit, from the Allocator's prior
  (``ThroughputParams()``), to the true step times of the shapes it has *run so far*
  (``ran``, called by the simulator each tick) - a new job plans with the prior's curve, and
  learns its network terms when it first runs across nodes. Its noise scale is the one
  training has reached (below).
- ``rate(num_nodes, num_replicas, progress)``: the job's true progress per second, in
  one-replica seconds, at the local batch its own view picks for that shape (the trainer
  chooses from what it has measured). True step time, after Pollux (Qiao et al., OSDI'21,
  eq. 9-11)::

      T = (T_compute**gamma + T_sync**gamma) ** (1 / gamma)

  with ``T_compute = alpha + beta * b`` and ``T_sync`` the row's all-reduce and network terms;
  ``gamma`` 1 is no overlap (the row's own step time), larger overlaps more.
- Statistical efficiency from the gradient noise scale ``phi`` (Pollux eq. 5, after
  McCandlish et al. 2018): ``E(M) = (phi + M0) / (phi + M)`` for global batch ``M`` and base
  batch ``M0``, in ``(0, 1]`` for ``M >= M0``. ``phi`` grows as training progresses, as measured
  in the Pollux artifact's traces: ``phi(f) = noise_scale * noise_growth ** f`` at progress
  fraction ``f``, held per tenth of training (``NOISE_STEPS``: a job reports a new noise
  scale now and then, not every step).
- ``restart_delay(num_nodes, default)``: what a restart of this job costs.

With ``gamma`` 1, ``noise_growth`` 1 and no restart columns a job is exactly its row's
goodput model, as before the columns existed. Not for: the trace format (``trace``) or the
workload generators (``workloads``, ``measured``).
"""

import math
from dataclasses import replace

from flexjob.core.allocator import GoodputModel, StepSample, ThroughputParams
from flexjob.core.training.goodput_model import fit_throughput
from flexjob.scheduler.trace import TraceJob

#: (nodes, replicas) a job is assumed to have profiled before its model is fitted.
PROFILED_SHAPES = ((1, 1), (1, 2), (1, 4), (2, 8), (4, 16), (8, 32), (16, 64))

#: How many times a job's noise scale changes over its training (held in between).
NOISE_STEPS = 10


def true_step_time(
    params: ThroughputParams, gamma: float, num_nodes: int, num_replicas: int, local_batch: float
) -> float:
    """Seconds per step with compute and synchronisation overlapping by ``gamma``."""
    compute = params.alpha + params.beta * local_batch
    sync = params.step_time(num_nodes, num_replicas, local_batch) - compute
    if gamma == 1.0 or sync <= 0.0:
        return compute + max(sync, 0.0)
    return float((compute**gamma + sync**gamma) ** (1.0 / gamma))


def noise_level(progress: float) -> int:
    """Which of the ``NOISE_STEPS`` levels a progress fraction in ``[0, 1]`` is at."""
    return min(max(int(progress * NOISE_STEPS), 0), NOISE_STEPS - 1)


class SimJob:
    """One trace job as the simulator runs it; see the module docstring."""

    __slots__ = ("_fitted", "_rates", "_shapes", "_views", "job")

    def __init__(self, job: TraceJob) -> None:
        self.job = job
        self._fitted: ThroughputParams | None = None
        self._views: dict[int, GoodputModel] = {}
        self._rates: dict[tuple[int, int, int], float] = {}
        #: (nodes, replicas) -> local batch, of each shape a ``learned`` job has run.
        self._shapes: dict[tuple[int, int], float] = {}

    def ran(self, num_nodes: int, num_replicas: int, progress: float = 0.0) -> None:
        """The job trains on this shape now: a ``learned`` job measures its step time there."""
        if not self.job.learned or num_replicas <= 0:
            return
        shape = (max(num_nodes, 1), num_replicas)
        if shape in self._shapes:
            return
        self._shapes[shape] = self.view(progress).local_batch_for(*shape)
        self._fitted = None
        self._views.clear()
        self._rates.clear()

    @property
    def dynamic(self) -> bool:
        """Whether what the job reports changes as it trains (a growing noise scale)."""
        return self.job.noise_growth != 1.0 and self.job.noise_scale is not None

    def level(self, progress: float) -> int:
        return noise_level(progress) if self.dynamic else 0

    def noise_scale(self, progress: float) -> float | None:
        """The gradient noise scale training has reached at a progress fraction."""
        base = self.job.noise_scale
        if base is None or not self.dynamic:
            return base
        return float(base * self.job.noise_growth ** (self.level(progress) / (NOISE_STEPS - 1)))

    def params(self) -> ThroughputParams:
        """The step-time terms the job reports: the row's, or their fit to the truth."""
        if self._fitted is None:
            truth = self.job.params()
            if self.job.learned:
                self._fitted = fit_throughput(
                    [
                        StepSample(k, n, b, true_step_time(truth, self.job.gamma, k, n, b))
                        for (k, n), b in self._shapes.items()
                    ],
                    ThroughputParams(),
                )
            elif self.job.gamma == 1.0:
                self._fitted = truth
            else:
                batches = sorted({self.job.local_batch, self.job.max_local_batch or 0.0} - {0.0})
                samples = [
                    StepSample(k, n, b, true_step_time(truth, self.job.gamma, k, n, b))
                    for k, n in PROFILED_SHAPES
                    for b in batches
                ]
                self._fitted = fit_throughput(samples, truth)
        return self._fitted

    def view(self, progress: float = 0.0) -> GoodputModel:
        """The goodput model the job reports at a progress fraction (``[0, 1]``)."""
        level = self.level(progress)
        model = self._views.get(level)
        if model is None:
            model = replace(
                self.job.model(), params=self.params(), noise_scale=self.noise_scale(progress)
            )
            self._views[level] = model
        return model

    def rate(self, num_nodes: int, num_replicas: int, progress: float = 0.0) -> float:
        """True one-replica seconds of work done per second on that shape."""
        if num_replicas <= 0:
            return 0.0
        num_nodes = max(num_nodes, 1)
        view = self.view(progress)
        if self.job.gamma == 1.0 and not self.job.learned:
            return view.speedup(num_nodes, num_replicas)
        key = (self.level(progress), num_nodes, num_replicas)
        value = self._rates.get(key)
        if value is None:
            value = _true_speedup(self.job, view, num_nodes, num_replicas)
            self._rates[key] = value
        return value

    def restart_delay(self, num_nodes: int, default: float) -> float:
        """Seconds a restart onto ``num_nodes`` nodes costs; ``default`` unless the row says."""
        base = default if self.job.restart_delay is None else self.job.restart_delay
        return base + self.job.restart_per_node * num_nodes


def _true_speedup(job: TraceJob, view: GoodputModel, num_nodes: int, num_replicas: int) -> float:
    """Goodput over one replica's at the base batch, with the true step time; the local batch
    is the one the job's view picks."""
    truth, gamma = job.params(), job.gamma
    b = view.local_batch_for(num_nodes, num_replicas)
    b0 = view.local_batch
    good = num_replicas * b / true_step_time(truth, gamma, num_nodes, num_replicas, b)
    base = b0 / true_step_time(truth, gamma, 1, 1, b0)
    value = good * view.efficiency_of(num_replicas * b) / base
    return value if math.isfinite(value) and value > 0 else 0.0
