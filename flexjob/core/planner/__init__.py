"""The resource planner: job stats in, resource plans out. Pure functions, no I/O.

The brain runs it over stats from its database; the master's single-job mode over stats in
memory. Each algorithm sits in its own module; ``optimize`` picks and runs them per event.
"""

from flexjob.core.planner.hot_ps import HotPsConfig, plan_hot_ps
from flexjob.core.planner.initial import InitialPlanConfig, plan_initial
from flexjob.core.planner.oom import OomConfig, mentions_oom, plan_oom_memory
from flexjob.core.planner.optimize import (
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
