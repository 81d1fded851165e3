"""The resource planner: job stats in, resource plans out. Pure functions, no I/O.

The brain runs it over stats from its database; the master's single-job mode over stats in
memory. Each algorithm sits in its own module; ``algorithms`` picks and runs them per event
(``optimize``).

The names below load lazily (PEP 562, ``flexjob.lazy``): ``core.planner.stats`` (what a
master's config holds) does not pull in the algorithms and the pydantic plans they build.
"""

from typing import TYPE_CHECKING

from flexjob.lazy import lazy_exports

if TYPE_CHECKING:
    from flexjob.core.planner.algorithms import (
        ALGORITHMS,
        Decision,
        EventKind,
        OptimizeEvent,
        OptimizeStage,
        PlannerConfig,
        apply_plans,
        detect_events,
        execute,
        merge,
        optimize,
    )
    from flexjob.core.planner.hot_ps import HotPsConfig, plan_hot_ps
    from flexjob.core.planner.initial import InitialPlanConfig, plan_initial
    from flexjob.core.planner.oom import OomConfig, mentions_oom, plan_oom_memory
    from flexjob.core.planner.stats import (
        FinishedJob,
        JobLimits,
        JobProfile,
        JobStats,
        NodeEvent,
        NodeEventKind,
        NodeSample,
        PlannedJob,
        ReplicaResources,
        SpeedSample,
    )
    from flexjob.core.planner.throughput import ThroughputConfig, plan_worker_count

_EXPORTS = {
    "ALGORITHMS": "algorithms",
    "Decision": "algorithms",
    "EventKind": "algorithms",
    "FinishedJob": "stats",
    "HotPsConfig": "hot_ps",
    "InitialPlanConfig": "initial",
    "JobLimits": "stats",
    "JobProfile": "stats",
    "JobStats": "stats",
    "NodeEvent": "stats",
    "NodeEventKind": "stats",
    "NodeSample": "stats",
    "OomConfig": "oom",
    "OptimizeEvent": "algorithms",
    "OptimizeStage": "algorithms",
    "PlannedJob": "stats",
    "PlannerConfig": "algorithms",
    "ReplicaResources": "stats",
    "SpeedSample": "stats",
    "ThroughputConfig": "throughput",
    "apply_plans": "algorithms",
    "detect_events": "algorithms",
    "execute": "algorithms",
    "mentions_oom": "oom",
    "merge": "algorithms",
    "optimize": "algorithms",
    "plan_hot_ps": "hot_ps",
    "plan_initial": "initial",
    "plan_oom_memory": "oom",
    "plan_worker_count": "throughput",
}

if not TYPE_CHECKING:  # hidden from mypy, so a misspelt import is an error, not Any
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

__all__ = [
    "ALGORITHMS",
    "Decision",
    "EventKind",
    "FinishedJob",
    "HotPsConfig",
    "InitialPlanConfig",
    "JobLimits",
    "JobProfile",
    "JobStats",
    "NodeEvent",
    "NodeEventKind",
    "NodeSample",
    "OomConfig",
    "OptimizeEvent",
    "OptimizeStage",
    "PlannedJob",
    "PlannerConfig",
    "ReplicaResources",
    "SpeedSample",
    "ThroughputConfig",
    "apply_plans",
    "detect_events",
    "execute",
    "mentions_oom",
    "merge",
    "optimize",
    "plan_hot_ps",
    "plan_initial",
    "plan_oom_memory",
    "plan_worker_count",
]
