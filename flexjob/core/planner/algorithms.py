"""Optimize events and the algorithms that answer them: detect, pick, execute, merge.

``detect_events`` is what an administrator sees in a job's stats; ``ALGORITHMS`` maps each event
kind to the algorithm that answers it (the optimize processor's choice); ``execute`` runs one
(the algorithm executor). The brain and the master's single-job mode call the same functions.
Pure: the caller decides which stats are fresh and stores the results.
"""

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from flexjob.api import ReplicaResourceSpec, ReplicaType, ResourcePlan, ResourceSpec
from flexjob.api.roles import PS_TYPE
from flexjob.core.planner.hot_ps import HotPsConfig, hot_ps_nodes, plan_hot_ps
from flexjob.core.planner.initial import InitialPlanConfig, plan_initial
from flexjob.core.planner.oom import OomConfig, plan_oom_memory
from flexjob.core.planner.stats import (
    FinishedJob,
    JobStats,
    NodeEventKind,
    ReplicaResources,
)
from flexjob.core.planner.throughput import ThroughputConfig, plan_worker_count
from flexjob.core.planner.unbalanced_ps import (
    UnbalancedPsConfig,
    find_imbalance,
    plan_rebalance,
)


class OptimizeStage(StrEnum):
    """When a plan is asked for: before the job's replicas exist, or while it runs."""

    CREATE = "create"
    RUNNING = "running"


class EventKind(StrEnum):
    JOB_START = "job-start"
    LOW_THROUGHPUT = "low-throughput"
    HOT_PS = "hot-ps"
    UNBALANCED_PS = "unbalanced-ps"
    OOM = "oom"


@dataclass(frozen=True, slots=True)
class OptimizeEvent:
    kind: EventKind
    node: str = ""
    detail: str = ""


@dataclass(frozen=True, slots=True)
class PlannerConfig:
    throughput: ThroughputConfig = field(default_factory=ThroughputConfig)
    hot_ps: HotPsConfig = field(default_factory=HotPsConfig)
    unbalanced_ps: UnbalancedPsConfig = field(default_factory=UnbalancedPsConfig)
    oom: OomConfig = field(default_factory=OomConfig)
    initial: InitialPlanConfig = field(default_factory=InitialPlanConfig)


@dataclass(frozen=True, slots=True)
class Decision:
    """One event, the algorithm chosen for it and the plan it produced (maybe empty)."""

    event: OptimizeEvent
    algorithm: str
    plan: ResourcePlan


Algorithm = Callable[[OptimizeEvent, JobStats, Sequence[FinishedJob], PlannerConfig], ResourcePlan]


def to_spec(res: ReplicaResources) -> ReplicaResourceSpec:
    memory = int(res.memory_mb) if res.memory_mb is not None else None
    return ReplicaResourceSpec(
        replicas=res.replicas, resource=ResourceSpec(cpu=res.cpu, memory=memory)
    )


def apply_plans(
    base: Mapping[ReplicaType, ReplicaResources], plans: Sequence[ResourcePlan]
) -> dict[ReplicaType, ReplicaResources]:
    """The resources per replica type after applying ``plans`` in order to ``base``.

    A plan's unset CPU or memory keeps the value from before; per-node changes (``node_resources``)
    do not change the per-type resources.
    """
    current = dict(base)
    for plan in plans:
        for rtype, spec in plan.replica_resources.items():
            old = current.get(rtype, ReplicaResources(0))
            cpu, memory = spec.resource.cpu, spec.resource.memory
            current[rtype] = ReplicaResources(
                spec.replicas,
                cpu if cpu is not None else old.cpu,
                float(memory) if memory is not None else old.memory_mb,
            )
    return current


def detect_events(
    stats: JobStats, stage: OptimizeStage, since: float = 0.0, config: PlannerConfig | None = None
) -> list[OptimizeEvent]:
    """The events in ``stats``: node events and samples older than ``since`` are already handled."""
    config = config or PlannerConfig()
    if stage is OptimizeStage.CREATE:
        return [OptimizeEvent(EventKind.JOB_START, detail="job created")]
    events = [
        OptimizeEvent(EventKind.OOM, e.node, f"{e.node} ran out of memory")
        for e in stats.node_events
        if e.kind is NodeEventKind.OOM and e.timestamp > since
    ]
    fresh = [s for s in stats.node_samples if s.timestamp > since]
    events += [
        OptimizeEvent(EventKind.HOT_PS, n, f"{n} CPU above {config.hot_ps.threshold:.0%}")
        for n in hot_ps_nodes(fresh, config.hot_ps)
    ]
    if (imbalance := find_imbalance(fresh, config.unbalanced_ps)) is not None:
        events.append(
            OptimizeEvent(
                EventKind.UNBALANCED_PS,
                imbalance.node,
                f"{imbalance.node} serves {imbalance.load:.4g} {imbalance.measure}, above "
                f"{config.unbalanced_ps.ratio}x the PS mean {imbalance.mean:.4g}",
            )
        )
    if stats.workers() and plan_worker_count(
        stats.speed_samples, stats.workers(), stats.limits, config.throughput
    ):
        events.append(OptimizeEvent(EventKind.LOW_THROUGHPUT, detail="throughput curve"))
    return events


def _initial(
    event: OptimizeEvent, stats: JobStats, history: Sequence[FinishedJob], config: PlannerConfig
) -> ResourcePlan:
    resources, sources = plan_initial(
        stats.profile, stats.current, history, stats.limits, config.initial
    )
    reason = f"copied from similar jobs {', '.join(sources)}" if sources else "default resources"
    return ResourcePlan(
        job=stats.profile.name,
        replica_resources={t: to_spec(r) for t, r in resources.items()},
        reason=reason,
    )


def _workers(
    event: OptimizeEvent, stats: JobStats, history: Sequence[FinishedJob], config: PlannerConfig
) -> ResourcePlan:
    current = stats.workers()
    target = plan_worker_count(stats.speed_samples, current, stats.limits, config.throughput)
    plan = ResourcePlan(job=stats.profile.name)
    if target is None:
        return plan
    trainer = stats.training_type()
    worker = stats.current[trainer]
    plan.replica_resources = {
        trainer: to_spec(ReplicaResources(target, worker.cpu, worker.memory_mb))
    }
    plan.reason = f"throughput curve: workers {current} -> {target}"
    return plan


def _latest_limit(stats: JobStats, node: str) -> tuple[float | None, float | None]:
    """CPU and memory limits last reported for ``node`` (from samples, else events)."""
    for s in sorted(stats.node_samples, key=lambda s: -s.timestamp):
        if s.node == node:
            return s.cpu_limit, s.memory_limit_mb
    for e in sorted(stats.node_events, key=lambda e: -e.timestamp):
        if e.node == node:
            return None, e.memory_mb
    return None, None


def _hot_ps(
    event: OptimizeEvent, stats: JobStats, history: Sequence[FinishedJob], config: PlannerConfig
) -> ResourcePlan:
    cpu, _ = _latest_limit(stats, event.node)
    ps = stats.current.get(PS_TYPE, ReplicaResources(0))
    action = plan_hot_ps(event.node, cpu or ps.cpu, ps.replicas, stats.limits, config.hot_ps)
    plan = ResourcePlan(job=stats.profile.name)
    if action is None:
        return plan
    if action.new_cpu is not None:
        plan.node_resources = {event.node: ResourceSpec(cpu=action.new_cpu)}
        plan.reason = f"hot PS {event.node}: cpu -> {action.new_cpu}"
    elif action.new_ps_count is not None:
        plan.replica_resources = {
            PS_TYPE: to_spec(ReplicaResources(action.new_ps_count, ps.cpu, ps.memory_mb))
        }
        plan.reason = f"hot PS {event.node}: ps {ps.replicas} -> {action.new_ps_count}"
    return plan


def _unbalanced_ps(
    event: OptimizeEvent, stats: JobStats, history: Sequence[FinishedJob], config: PlannerConfig
) -> ResourcePlan:
    ps = stats.current.get(PS_TYPE, ReplicaResources(0))
    plan = ResourcePlan(job=stats.profile.name)
    count = plan_rebalance(ps.replicas, stats.limits)
    if count is None:
        return plan
    plan.replica_resources = {PS_TYPE: to_spec(ReplicaResources(count, ps.cpu, ps.memory_mb))}
    plan.reason = f"unbalanced PS ({event.detail}): re-partition over ps {ps.replicas} -> {count}"
    return plan


def _oom(
    event: OptimizeEvent, stats: JobStats, history: Sequence[FinishedJob], config: PlannerConfig
) -> ResourcePlan:
    _, memory = _latest_limit(stats, event.node)
    for e in stats.node_events:
        if e.node == event.node and e.kind is NodeEventKind.OOM and e.memory_mb:
            memory = e.memory_mb
    new = plan_oom_memory(memory, stats.limits.max_memory_mb, config.oom)
    plan = ResourcePlan(job=stats.profile.name)
    if new is not None:
        plan.node_resources = {event.node: ResourceSpec(memory=int(new))}
        plan.reason = f"OOM on {event.node}: memory {memory} -> {int(new)} MiB"
    return plan


#: The optimize processor's choice: which algorithm answers which event.
ALGORITHMS: Mapping[EventKind, tuple[str, Algorithm]] = {
    EventKind.JOB_START: ("initial-from-similar-jobs", _initial),
    EventKind.LOW_THROUGHPUT: ("worker-throughput-curve", _workers),
    EventKind.HOT_PS: ("hot-ps", _hot_ps),
    EventKind.UNBALANCED_PS: ("unbalanced-ps-rehash", _unbalanced_ps),
    EventKind.OOM: ("oom-memory", _oom),
}


def execute(
    event: OptimizeEvent,
    stats: JobStats,
    history: Sequence[FinishedJob] = (),
    config: PlannerConfig | None = None,
) -> Decision:
    name, algorithm = ALGORITHMS[event.kind]
    return Decision(event, name, algorithm(event, stats, history, config or PlannerConfig()))


def merge(job: str, plans: Sequence[ResourcePlan]) -> ResourcePlan:
    """One plan from many: later plans win per replica type and per node; reasons are joined."""
    merged = ResourcePlan(job=job)
    for plan in plans:
        merged.replica_resources = {**merged.replica_resources, **plan.replica_resources}
        nodes = dict(merged.node_resources)
        for node, res in plan.node_resources.items():
            old = nodes.get(node)
            nodes[node] = (
                res if old is None else old.model_copy(update=res.model_dump(exclude_none=True))
            )
        merged.node_resources = nodes
    merged.reason = "; ".join(p.reason for p in plans if p.reason)
    return merged


def optimize(
    stats: JobStats,
    stage: OptimizeStage,
    history: Sequence[FinishedJob] = (),
    since: float = 0.0,
    config: PlannerConfig | None = None,
) -> tuple[ResourcePlan, list[Decision]]:
    """Detect events, answer each, and merge the non-empty answers into one plan."""
    config = config or PlannerConfig()
    decisions = [
        execute(e, stats, history, config) for e in detect_events(stats, stage, since, config)
    ]
    return merge(stats.profile.name, [d.plan for d in decisions if not d.plan.empty]), decisions
