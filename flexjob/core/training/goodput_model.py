"""A Pollux-style goodput model: fitted throughput times statistical efficiency.

For: turning a job's profilings (measured step times at some replica/node counts) into the
``speedup(num_nodes, num_replicas)`` that policies use. Not for: collecting profilings (agents
and the server do that) or deciding allocations (``goodput`` policy).

Step time of one synchronous data-parallel step with ``n`` replicas over ``k`` nodes, each
replica computing a local batch of ``b`` samples::

    T(k, n) = alpha + beta * b                                  (compute)
            + [n > 1] * (sync_local + sync_local_per_replica * (n - 1))   (all-reduce)
            + [k > 1] * (sync_remote + sync_remote_per_replica * (n - 1)) (network)

Throughput is ``n * b / T``. Statistical efficiency of the global batch ``M = n * b`` follows
Pollux (gradient noise scale ``phi``): ``E(M) = (phi + b) / (phi + M)`` — a bigger batch makes
each sample worth less. Goodput is throughput times efficiency; speedup is goodput relative to one
replica on one node. Compute and communication are assumed not to overlap (Pollux's gamma = 1).

Adaptive batch size (opt-in, ``max_batch`` set): for each shape the job picks the local batch
``b`` (from a small geometric grid between ``local_batch / n`` and ``max_local_batch``, with the
global batch within ``[local_batch, max_batch]``) that maximises goodput — the same choice the
trainer makes (``best_local_batch``); the learning rate follows AdaScale's gain
``E(M) * M / M0``. Without it, the local batch stays ``local_batch`` on every shape.
"""

from collections.abc import Sequence
from dataclasses import dataclass, fields
from functools import lru_cache

import numpy as np


@dataclass(frozen=True, slots=True)
class ThroughputParams:
    """Seconds per step, by term (see the module docstring)."""

    alpha: float = 0.05
    beta: float = 0.001
    sync_local: float = 0.01
    sync_local_per_replica: float = 0.002
    sync_remote: float = 0.03
    sync_remote_per_replica: float = 0.005

    def step_time(self, num_nodes: int, num_replicas: int, local_batch: float) -> float:
        t = self.alpha + self.beta * local_batch
        if num_replicas > 1:
            t += self.sync_local + self.sync_local_per_replica * (num_replicas - 1)
        if num_nodes > 1:
            t += self.sync_remote + self.sync_remote_per_replica * (num_replicas - 1)
        return max(t, 1e-9)


@dataclass(frozen=True, slots=True)
class StepSample:
    """One profiling measurement: mean seconds per step at a given shape."""

    num_nodes: int
    num_replicas: int
    local_batch: float
    step_time: float


@dataclass(frozen=True, slots=True)
class GoodputModel:
    """Throughput times efficiency for one job; ``noise_scale=None`` means efficiency 1.

    ``max_batch`` (global samples per step) turns adaptive batch size on; ``max_local_batch``
    bounds one replica's batch (memory), ``local_batch`` when unset.
    """

    params: ThroughputParams
    local_batch: float = 32.0
    noise_scale: float | None = None
    max_batch: float | None = None
    max_local_batch: float | None = None

    @property
    def adaptive(self) -> bool:
        return self.max_batch is not None and self.max_batch > self.local_batch

    def throughput(self, num_nodes: int, num_replicas: int, local_batch: float = 0.0) -> float:
        """Samples per second; ``local_batch`` 0 means the job's own choice for the shape."""
        if num_replicas <= 0:
            return 0.0
        b = local_batch or self.local_batch_for(num_nodes, num_replicas)
        step = self.params.step_time(max(num_nodes, 1), num_replicas, b)
        return num_replicas * b / step

    def efficiency_of(self, global_batch: float) -> float:
        """Statistical efficiency of a global batch, relative to ``local_batch`` (Pollux)."""
        if self.noise_scale is None:
            return 1.0
        phi = max(self.noise_scale, 0.0)
        return (phi + self.local_batch) / (phi + global_batch)

    def efficiency(self, num_replicas: int) -> float:
        if num_replicas <= 0:
            return 1.0
        return self.efficiency_of(num_replicas * self.local_batch_for(1, num_replicas))

    def local_batch_for(self, num_nodes: int, num_replicas: int) -> float:
        """The local batch the job runs with on this shape (``local_batch`` unless adaptive)."""
        if not self.adaptive or num_replicas <= 0:
            return self.local_batch
        return _best_local_batch(self, max(num_nodes, 1), num_replicas)

    def goodput_at(self, num_nodes: int, num_replicas: int, local_batch: float) -> float:
        if num_replicas <= 0:
            return 0.0
        return self.throughput(num_nodes, num_replicas, local_batch) * self.efficiency_of(
            num_replicas * local_batch
        )

    def goodput(self, num_nodes: int, num_replicas: int) -> float:
        if num_replicas <= 0:
            return 0.0
        return self.goodput_at(
            num_nodes, num_replicas, self.local_batch_for(num_nodes, num_replicas)
        )

    def speedup(self, num_nodes: int, num_replicas: int) -> float:
        """Goodput relative to one replica on one node at ``local_batch``; 0 for no replicas."""
        if num_replicas <= 0:
            return 0.0
        return _speedup(self, max(num_nodes, 1), num_replicas)


#: Points of the local-batch grid the adaptive search tries (plus both ends).
BATCH_GRID = 12


def batch_candidates(model: GoodputModel, num_replicas: int) -> list[float]:
    """Local batches an adaptive job may use with ``num_replicas`` replicas, smallest first."""
    top_local = model.max_local_batch or model.local_batch
    top_global = model.max_batch if model.max_batch is not None else model.local_batch
    lo = model.local_batch / num_replicas  # the global batch never drops below local_batch
    hi = max(min(top_local, top_global / num_replicas), lo)
    if hi <= lo * (1 + 1e-9):
        return [lo]
    ratio = (hi / lo) ** (1.0 / (BATCH_GRID - 1))
    return [lo * ratio**i for i in range(BATCH_GRID - 1)] + [hi]


@lru_cache(maxsize=1 << 16)
def _best_local_batch(model: GoodputModel, num_nodes: int, num_replicas: int) -> float:
    return max(
        batch_candidates(model, num_replicas),
        key=lambda b: model.goodput_at(num_nodes, num_replicas, b),
    )


@lru_cache(maxsize=1 << 18)
def _speedup(model: GoodputModel, num_nodes: int, num_replicas: int) -> float:
    base = model.goodput_at(1, 1, model.local_batch)
    return model.goodput(num_nodes, num_replicas) / base if base > 0 else 0.0


def speedups(
    requests: Sequence[tuple[GoodputModel, Sequence[int], Sequence[int]]],
) -> list[list[float]]:
    """``[model.speedup(k, n) for k, n in zip(nodes, replicas)]`` for every ``(model, nodes,
    replicas)`` of ``requests``, all computed at once with numpy.

    The same arithmetic in the same order as ``speedup`` (IEEE-exact elementwise operations;
    the batch grid from ``batch_candidates`` itself; the first best batch wins, as ``max``
    picks it), so every value equals ``speedup``'s bit for bit. For: a policy that needs many
    jobs' curves in one round (``fair_goodput``) - one call instead of thousands.
    """
    live = [(m, np.asarray(k, dtype=np.int64), np.asarray(n, dtype=np.int64))
            for m, k, n in requests if len(n)]  # fmt: skip
    if not live:
        return [[] for _ in requests]
    n = np.concatenate([r for _, _, r in live])
    k = np.concatenate([k for _, k, _ in live])
    used = np.maximum(n, 1)
    per = np.array([_terms(m) for m, _, _ in live])
    which = np.repeat(np.arange(len(live)), [len(r) for _, _, r in live])
    b = np.concatenate([_candidate_table(m, int(r.max()))[np.maximum(r, 1) - 1]
                        for m, _, r in live])  # fmt: skip
    alpha, beta, sl, slr, sr, srr, lb, phi, noisy, base = (per[which, j] for j in range(10))
    nf = used.astype(float)[:, None]
    t = alpha[:, None] + beta[:, None] * b
    t = np.where(nf > 1, t + (sl + slr * (used - 1))[:, None], t)
    t = np.where(k[:, None] > 1, t + (sr + srr * (used - 1))[:, None], t)
    step = np.maximum(t, 1e-9)
    phi, lb = phi[:, None], lb[:, None]
    good = nf * b / step * np.where(noisy[:, None] > 0, (phi + lb) / (phi + nf * b), 1.0)
    best = good[np.arange(len(good)), np.argmax(good, axis=1)]
    ok = (base > 0) & (n > 0)
    flat = np.where(ok, best / np.where(ok, base, 1.0), 0.0).tolist()
    out: list[list[float]] = []
    at = 0
    for _, _, r in requests:
        out.append(flat[at : at + len(r)])
        at += len(r)
    return out


def _terms(model: GoodputModel) -> tuple[float, ...]:
    """The scalars ``speedups`` needs of one model, in its column order."""
    p, phi = model.params, model.noise_scale
    return (
        p.alpha, p.beta, p.sync_local, p.sync_local_per_replica, p.sync_remote,
        p.sync_remote_per_replica, model.local_batch, max(phi or 0.0, 0.0),
        float(phi is not None), model.goodput_at(1, 1, model.local_batch),
    )  # fmt: skip


#: Rows of a cached batch-candidate table: enough for every count up to this (or the next
#: power of two above it), so tables are few.
_TABLE_ROWS = 64


@lru_cache(maxsize=1 << 10)
def _candidate_rows(
    local_batch: float,
    max_local_batch: float | None,
    max_batch: float | None,
    adaptive: bool,
    rows: int,
) -> np.ndarray:
    """Row ``n - 1``: the local batches ``local_batch_for`` chooses among with ``n`` replicas,
    padded to ``BATCH_GRID`` with the first (which never wins a tie against itself)."""
    if not adaptive:
        return np.full((rows, BATCH_GRID), local_batch)
    model = GoodputModel(ThroughputParams(), local_batch, None, max_batch, max_local_batch)
    table = np.empty((rows, BATCH_GRID))
    for i in range(rows):
        grid = batch_candidates(model, i + 1)
        table[i, :] = grid + [grid[0]] * (BATCH_GRID - len(grid))
    return table


def _candidate_table(model: GoodputModel, top: int) -> np.ndarray:
    rows = max(_TABLE_ROWS, 1 << (max(top, 1) - 1).bit_length())
    return _candidate_rows(
        model.local_batch, model.max_local_batch, model.max_batch, model.adaptive, rows
    )


def model_of(speedup: object) -> GoodputModel | None:
    """The ``GoodputModel`` whose ``speedup`` method ``speedup`` is, else ``None`` (any other
    callable: a policy then calls it point by point)."""
    model = getattr(speedup, "__self__", None)
    if (
        isinstance(model, GoodputModel)
        and getattr(speedup, "__func__", None) is GoodputModel.speedup
    ):
        return model
    return None


def _features(sample: StepSample) -> list[float]:
    n, k = sample.num_replicas, sample.num_nodes
    multi, remote = float(n > 1), float(k > 1)
    return [1.0, sample.local_batch, multi, multi * (n - 1), remote, remote * (n - 1)]


def _scaled_to(
    x: np.ndarray, y: np.ndarray, coefs: list[float], active: Sequence[int]
) -> list[float]:
    """``coefs`` with the ``active`` terms (the columns of ``x`` some sample exercises) scaled
    by one factor: the geometric mean over the samples of measured over predicted time."""
    predicted = x @ np.array(coefs)
    if np.any(predicted <= 0):
        return coefs
    factor = float(np.exp(np.mean(np.log(y / predicted))))
    return [c * factor if j in active else c for j, c in enumerate(coefs)]


def fit_throughput(
    samples: Sequence[StepSample], prior: ThroughputParams | None = None
) -> ThroughputParams:
    """Least-squares fit with non-negative terms; what the samples cannot tell keeps the prior.

    Of all the fits, the one with the smallest relative change from the prior: terms no
    sample exercises stay at the prior (the sync terms with samples only at one replica), and
    terms the samples cannot tell apart (alpha and beta with one local batch size) scale
    together, keeping roughly the prior's proportions - a job that has run one batch size expects a
    bigger one to cost per sample what the prior's split says, and measures it once it runs
    it. With samples that determine every term this is the plain least-squares fit.

    The change is measured from the prior's exercised terms scaled as one to the samples
    (``_scaled_to``): a job whose steps take a fortieth of what the prior predicts keeps the
    prior's split between alpha and beta. Measured from the prior itself, the fit moved beta
    most (its share of the step is the larger), drove it below zero and dropped it - a model
    in which a bigger batch costs nothing, so the job chose its largest local batch: NCF in
    ``flexjob.scheduler.measured`` then ran at 0.87 of one replica's speed after its first
    measured step.
    """
    prior = prior or ThroughputParams()
    coefs = [getattr(prior, f.name) for f in fields(ThroughputParams)]
    usable = [s for s in samples if s.step_time > 0 and s.num_replicas > 0]
    if not usable:
        return prior
    x = np.array([_features(s) for s in usable], dtype=float)
    y = np.array([s.step_time for s in usable], dtype=float)
    active = [j for j in range(x.shape[1]) if np.any(x[:, j] != 0.0)]
    coefs = _scaled_to(x, y, coefs, active)
    fixed = [j for j in range(x.shape[1]) if j not in active]
    y_free = y - x[:, fixed] @ np.array([coefs[j] for j in fixed]) if fixed else y
    solution: dict[int, float] = {}
    while active:
        start = np.array([coefs[j] for j in active])
        scale = np.where(start > 0, start, 1.0)  # relative change; absolute for a zero prior
        residual = y_free - x[:, active] @ start
        change, *_ = np.linalg.lstsq(x[:, active] * scale, residual, rcond=None)
        beta = start + scale * change  # the minimum-norm relative change from the prior
        worst = int(np.argmin(beta))
        if beta[worst] >= 0:
            solution = {j: float(b) for j, b in zip(active, beta, strict=True)}
            break
        active.pop(worst)  # a negative term: drop it (set to 0) and refit the rest
    for j in range(x.shape[1]):
        if j not in fixed:
            coefs[j] = solution.get(j, 0.0)
    return ThroughputParams(*coefs)
