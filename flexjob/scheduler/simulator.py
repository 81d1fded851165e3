"""A discrete-time cluster simulator that drives the same policy code as the live Allocator.

For: comparing policies on a trace (``flexjob simulate``, ``benchmarks/scheduler.py``). Jobs
arrive per the trace; every tick the simulator runs ``core.allocator.schedule_round`` (placing
new jobs; re-planning preemptible ones every ``period``); a job whose allocation changes to a
non-empty one pays ``restart_delay`` seconds with no progress (its first start pays
``start_delay``, the same unless set; a job whose trace row sets its own restart cost pays
that, ``sim_jobs.SimJob.restart_delay``), and every such change after its first start counts
as a restart (a resize, or a resume after a preemption); a running job progresses at its true
rate (``SimJob.rate``: the speedup of its goodput model, or the overlapped truth a ``gamma``
row gives) per second and finishes when its progress reaches its ``work``. Policies see the
model each job reports at its progress (``SimJob.view``: its noise scale grows as it trains
when its row says so). Each job's attained service (GPU-seconds held) is passed to the
policy; the CPU time of every re-planning round is recorded, the garbage collector's share
apart (``SimResult.decision_gc``). ``observe``, when given, sees the
work each job has left before every scheduling round: the truth an oracle in a bounds
benchmark is told (``benchmarks/scheduler_bounds.py``), which the live Allocator is not.
``on_tick``, when given, gets a ``TickRecord`` of every tick (who ran at what size and speed,
who was restarting, who waited): the per-round traces ``benchmarks/scheduler_trace.py``
explains policies with. Not for: live clusters, or fitting models (policies here see the
model each job reports, ``sim_jobs``).
"""

import gc
import logging
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from flexjob.core.allocator import (
    GoodputModel,
    JobInfo,
    NodeInfo,
    Policy,
    Resources,
    changed_jobs,
    schedule_round,
)
from flexjob.core.allocator.placement import num_nodes
from flexjob.scheduler.sim_jobs import SimJob
from flexjob.scheduler.trace import TraceJob

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ClusterConfig:
    """The simulated cluster and the scheduling cadence (seconds)."""

    nodes: int = 16
    gpus_per_node: int = 4
    tick: float = 30.0
    period: float = 60.0
    restart_delay: float = 30.0
    #: Seconds a job's first start takes; None: ``restart_delay``.
    start_delay: float | None = None

    def __post_init__(self) -> None:
        for name in ("nodes", "gpus_per_node", "tick", "period"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")
        if self.period < self.tick:
            raise ValueError(
                f"period must be >= tick ({self.tick:g}s): rounds run on ticks, got {self.period:g}"
            )
        for name in ("restart_delay", "start_delay"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ValueError(f"{name} must be >= 0, got {value}")

    @property
    def first_start_delay(self) -> float:
        return self.restart_delay if self.start_delay is None else self.start_delay

    def node_infos(self) -> list[NodeInfo]:
        free = Resources(gpu=self.gpus_per_node)
        return [NodeInfo(f"node-{i:02d}", free) for i in range(self.nodes)]


@dataclass(slots=True)
class _Running:
    job: TraceJob
    info: JobInfo
    progress: float = 0.0
    restarts: int = 0
    blocked_until: float = 0.0
    attained: float = 0.0
    started: bool = False


@dataclass(frozen=True, slots=True)
class TickRecord:
    """One tick of a simulation, for per-round traces (``simulate(on_tick=...)``)."""

    time: float
    #: Whether this tick's round re-planned every preemptible job (a period).
    optimized: bool
    #: Job id -> (replicas, true rate in one-replica seconds per second) of each placed job.
    placed: dict[str, tuple[int, float]]
    #: Job id -> seconds of this tick the job spent (re)starting instead of training.
    starting: dict[str, float]
    #: Arrived, unfinished jobs with no allocation this tick.
    waiting: tuple[str, ...]
    idle_gpus: int


@dataclass(frozen=True, slots=True)
class SimResult:
    """Per-job completion times and cluster totals of one simulation."""

    policy: str
    jct: dict[str, float]
    makespan: float
    gpu_utilisation: float
    restarts: int
    unfinished: list[str] = field(default_factory=list)
    #: CPU seconds of each scheduling round that re-planned (optimize) jobs, less the
    #: garbage collector's share (``decision_gc``).
    decision_times: list[float] = field(default_factory=list)
    #: CPU seconds the garbage collector took inside each of those rounds. A full collection
    #: walks every object of the process (a benchmark's earlier simulations, module caches), so
    #: it is counted apart from the policy's own time.
    decision_gc: list[float] = field(default_factory=list)

    @property
    def decision_ms(self) -> float:
        """Mean CPU milliseconds of an optimize round (NaN when none ran)."""
        times = self.decision_times
        return 1000.0 * sum(times) / len(times) if times else math.nan

    @property
    def decision_p99_ms(self) -> float:
        """The 99th percentile of an optimize round's CPU milliseconds (NaN when none ran)."""
        return 1000.0 * percentile(self.decision_times, 99.0)

    @property
    def decision_max_ms(self) -> float:
        return 1000.0 * max(self.decision_times) if self.decision_times else math.nan

    @property
    def decision_gc_max_ms(self) -> float:
        """The longest garbage collection inside one optimize round (0 when none ran)."""
        return 1000.0 * max(self.decision_gc, default=0.0)

    @property
    def avg_jct(self) -> float:
        return sum(self.jct.values()) / len(self.jct) if self.jct else math.nan

    @property
    def p99_jct(self) -> float:
        return percentile(list(self.jct.values()), 99.0)


def percentile(values: Sequence[float], pct: float) -> float:
    """Linear-interpolated percentile; NaN for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    pos = (len(ordered) - 1) * pct / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def job_info(
    job: TraceJob,
    now: float,
    restarts: int,
    attained: float = 0.0,
    model: GoodputModel | None = None,
) -> JobInfo:
    return JobInfo(
        id=job.id,
        replicas=job.replicas,
        min_replicas=job.min_replicas,
        max_replicas=job.top,
        preemptible=job.preemptible,
        resources=Resources(gpu=job.gpus_per_replica),
        age=now - job.submit_time,
        restarts=restarts,
        attained=attained,
        speedup=(model or job.model()).speedup,
    )


class _GcClock:
    """CPU seconds the garbage collector has taken since it was installed (``gc.callbacks``)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._began = 0.0

    def __call__(self, phase: str, info: Mapping[str, int]) -> None:
        del info
        if phase == "start":
            self._began = time.process_time()
        else:
            self.seconds += time.process_time() - self._began


_CLOCK: list[_GcClock] = []


def _gc_clock() -> _GcClock:
    """The process's one ``_GcClock``, installed on first use."""
    if not _CLOCK:
        _CLOCK.append(_GcClock())
        gc.callbacks.append(_CLOCK[0])
    return _CLOCK[0]


def simulate(
    trace: Sequence[TraceJob],
    policy: Policy,
    cluster: ClusterConfig | None = None,
    *,
    max_time: float = 365 * 86400.0,
    observe: Callable[[Mapping[str, float]], None] | None = None,
    on_tick: Callable[[TickRecord], None] | None = None,
) -> SimResult:
    """Run ``trace`` under ``policy`` until every job finishes (or ``max_time``); ``observe``
    gets each arrived job's work left (1-replica seconds) before every scheduling round,
    ``on_tick`` a record of every tick."""
    cluster = cluster or ClusterConfig()
    nodes = cluster.node_infos()
    total_gpus = cluster.nodes * cluster.gpus_per_node
    pending = sorted(trace, key=lambda j: (j.submit_time, j.id))
    running: dict[str, _Running] = {}
    allocations: dict[str, list[str]] = {}
    jct: dict[str, float] = {}
    gpu_seconds = 0.0
    restarts = 0
    now = pending[0].submit_time if pending else 0.0
    start = now
    last_optimize = -math.inf
    sims = {job.id: SimJob(job) for job in trace}

    def info(r: _Running) -> JobInfo:
        view = sims[r.job.id].view(r.progress / r.job.work)
        return job_info(r.job, now, r.restarts, r.attained, view)

    finished: list[str] = []
    decisions: list[float] = []
    collecting: list[float] = []
    clock = _gc_clock()
    while (pending or running) and now < max_time:
        arrived = bool(finished)
        while pending and pending[0].submit_time <= now:
            job = pending.pop(0)
            running[job.id] = _Running(job, job_info(job, now, 0, model=sims[job.id].view()))
            arrived = True
        infos = [info(r) for r in running.values()]
        optimize = now - last_optimize >= cluster.period
        if arrived or optimize:
            if observe is not None:
                observe({k: r.job.work - r.progress for k, r in running.items()})
            began, collected = time.process_time(), clock.seconds
            new = schedule_round(policy, infos, nodes, allocations, optimize=optimize)
            if optimize:
                collecting.append(clock.seconds - collected)
                decisions.append(time.process_time() - began - collecting[-1])
                last_optimize = now
            for job_id in changed_jobs(allocations, new):
                if new.get(job_id):
                    state = running[job_id]
                    delay = (
                        sims[job_id].restart_delay(num_nodes(new[job_id]), cluster.restart_delay)
                        if state.started
                        else cluster.first_start_delay
                    )
                    state.blocked_until = now + delay
                    if state.started:
                        state.restarts += 1
                        restarts += 1
                    state.started = True
            allocations = {k: v for k, v in new.items() if v}
        finished = []
        placed: dict[str, tuple[int, float]] = {}
        starting: dict[str, float] = {}
        for job_id, allocation in allocations.items():
            state = running[job_id]
            gpus = len(allocation) * state.job.gpus_per_replica
            fraction = state.progress / state.job.work
            sims[job_id].ran(num_nodes(allocation), len(allocation), fraction)
            rate = sims[job_id].rate(num_nodes(allocation), len(allocation), fraction)
            begin = max(now, state.blocked_until)
            usable = max(0.0, now + cluster.tick - begin)
            placed[job_id] = (len(allocation), rate)
            if usable < cluster.tick:
                starting[job_id] = cluster.tick - usable
            left = state.job.work - state.progress
            if rate > 0 and left <= rate * usable:
                done = begin + left / rate
                jct[job_id] = done - state.job.submit_time
                gpu_seconds += gpus * (done - now)
                finished.append(job_id)
            else:
                state.progress += rate * usable
                state.attained += gpus * cluster.tick
                gpu_seconds += gpus * cluster.tick
        if on_tick is not None:
            used = sum(len(a) * running[k].job.gpus_per_replica for k, a in allocations.items())
            waiting = tuple(sorted(k for k in running if k not in allocations))
            on_tick(TickRecord(now, optimize, placed, starting, waiting, total_gpus - used))
        for job_id in finished:
            del running[job_id]
            del allocations[job_id]
        if not running and pending:  # idle cluster: jump to the next arrival
            now = max(now + cluster.tick, pending[0].submit_time)
        else:
            now += cluster.tick
    end = max(
        (trace_job.submit_time + jct[trace_job.id] for trace_job in trace if trace_job.id in jct),
        default=start,
    )
    makespan = end - start
    util = gpu_seconds / (total_gpus * makespan) if makespan > 0 else 0.0
    return SimResult(
        policy=policy.name,
        jct=jct,
        makespan=makespan,
        gpu_utilisation=util,
        restarts=restarts,
        unfinished=sorted(running),
        decision_times=decisions,
        decision_gc=collecting,
    )
