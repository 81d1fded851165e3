"""Allocation policies for the Allocator: plain functions over plain data (see ``api.py``).

Built-in policies: ``static`` (requested size, first fit), ``pack`` (requested size, fewest
nodes) and ``goodput`` (Pollux-style: resize to maximise total speedup). Load one by name with
``flexjob.scheduler.registry.load_policy``.
"""

from flexjob.core.policies.api import (
    Allocations,
    JobInfo,
    NodeInfo,
    Policy,
    PolicyError,
    Resources,
    SpeedupFn,
    linear_speedup,
)
from flexjob.core.policies.goodput import GoodputPolicy
from flexjob.core.policies.goodput_model import GoodputModel, StepSample, ThroughputParams
from flexjob.core.policies.pack import PackPolicy
from flexjob.core.policies.rounds import changed_jobs, schedule_round
from flexjob.core.policies.static import StaticPolicy

#: The built-in policies by name; ``flexjob.scheduler.registry`` adds entry points.
BUILTIN_POLICIES: dict[str, type[Policy]] = {
    "static": StaticPolicy,
    "pack": PackPolicy,
    "goodput": GoodputPolicy,
}

__all__ = [
    "BUILTIN_POLICIES",
    "Allocations",
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
    "changed_jobs",
    "linear_speedup",
    "schedule_round",
]
