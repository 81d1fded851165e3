"""Parameter-server hot spots: a PS busier than the threshold gets more CPU or a new PS joins.

A PS is hot when its mean CPU utilization over its last ``window`` samples is above ``threshold``
(0.9 = 90 % of the cores it was given). It gets ``cpu x cpu_factor`` if that fits under the job's
CPU cap, otherwise the job gets one more PS (if under its PS cap). Pure.
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import fmean

from flexjob.api.roles import PS_TYPE
from flexjob.core.planner.stats import JobLimits, NodeSample


@dataclass(frozen=True, slots=True)
class HotPsConfig:
    threshold: float = 0.9
    window: int = 3
    cpu_factor: float = 1.5
    default_cpu: float = 1.0


@dataclass(frozen=True, slots=True)
class HotPsAction:
    """Either a new CPU for one PS, or a new PS count."""

    node: str
    new_cpu: float | None = None
    new_ps_count: int | None = None


def hot_ps_nodes(samples: Sequence[NodeSample], config: HotPsConfig) -> list[str]:
    """PS replicas whose recent mean CPU utilization is above the threshold, hottest first."""
    by_node: dict[str, list[NodeSample]] = {}
    for s in sorted(samples, key=lambda s: s.timestamp):
        if s.replica_type is PS_TYPE:
            by_node.setdefault(s.node, []).append(s)
    loads = {}
    for node, node_samples in by_node.items():
        recent = node_samples[-config.window :]
        if len(recent) >= config.window:
            loads[node] = fmean(s.cpu_utilization for s in recent)
    hot = [n for n, load in loads.items() if load > config.threshold]
    return sorted(hot, key=lambda n: -loads[n])


def plan_hot_ps(
    node: str,
    cpu: float | None,
    ps_count: int,
    limits: JobLimits,
    config: HotPsConfig | None = None,
) -> HotPsAction | None:
    """More CPU for ``node`` if it fits the cap, else one more PS, else ``None``."""
    config = config or HotPsConfig()
    current = cpu if cpu else config.default_cpu
    new_cpu = math.ceil(current * config.cpu_factor * 10) / 10
    if limits.max_cpu is None or new_cpu <= limits.max_cpu:
        return HotPsAction(node=node, new_cpu=new_cpu)
    if current < limits.max_cpu:
        return HotPsAction(node=node, new_cpu=limits.max_cpu)
    if limits.max_ps is None or ps_count < limits.max_ps:
        return HotPsAction(node=node, new_ps_count=ps_count + 1)
    return None
