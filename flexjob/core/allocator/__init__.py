"""Allocation policies for the Allocator: plain functions over plain data (see ``api.py``).

Built-in policies: ``static`` (requested size, first fit), ``pack`` (requested size, fewest
nodes), ``tiresias`` (requested size, least attained service first), ``goodput`` (resize to
maximise the p-norm of per-job speedups net of restart cost) and ``goodput-v1`` (the earlier
greedy total-speedup policy). Load one by name with ``flexjob.scheduler.registry.load_policy``.
"""

from flexjob.core.allocator.contract import (
    Allocations,
    JobInfo,
    NodeInfo,
    Policy,
    PolicyError,
    Resources,
    SpeedupFn,
    linear_speedup,
)
from flexjob.core.allocator.fair_goodput import FairGoodputPolicy
from flexjob.core.allocator.goodput import GoodputPolicy
from flexjob.core.allocator.pack import PackPolicy
from flexjob.core.allocator.rounds import changed_jobs, schedule_round
from flexjob.core.allocator.static import StaticPolicy
from flexjob.core.allocator.tiresias import TiresiasPolicy
from flexjob.core.training.goodput_model import GoodputModel, StepSample, ThroughputParams

#: The built-in policies by name; ``flexjob.scheduler.registry`` adds entry points.
BUILTIN_POLICIES: dict[str, type[Policy]] = {
    "static": StaticPolicy,
    "pack": PackPolicy,
    "tiresias": TiresiasPolicy,
    "goodput": FairGoodputPolicy,
    "goodput-v1": GoodputPolicy,
}

__all__ = [
    "BUILTIN_POLICIES",
    "Allocations",
    "FairGoodputPolicy",
    "GoodputModel",
    "GoodputPolicy",
    "JobInfo",
    "NodeInfo",
    "PackPolicy",
    "Policy",
    "PolicyError",
    "Resources",
    "SpeedupFn",
    "StaticPolicy",
    "StepSample",
    "ThroughputParams",
    "TiresiasPolicy",
    "changed_jobs",
    "linear_speedup",
    "schedule_round",
]
