"""Parameter-server imbalance: one PS serving far more than the others gets its load spread.

A PS set is unbalanced when, over the last ``window`` samples of every PS, one PS's mean
requests/s (or, when no PS reports requests, its partition bytes) is above ``ratio`` (1.5)
times the mean over the set. Hot embedding rows and a large dense tensor both land on one PS
by the fixed partition rule (``core.ps.partition``: rows by stable hash, dense tensors whole
by size); the remedy is a re-partition of the set with one more PS (a PS-set change,
``core.ps.set_change``): every row is re-hashed and the dense tensors are assigned again over
more PS, which moves dense partitions off the busiest PS. Refused (``None``) at the job's PS
cap. Pure.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from statistics import fmean

from flexjob.api.roles import PS_TYPE
from flexjob.core.planner.stats import JobLimits, NodeSample


@dataclass(frozen=True, slots=True)
class UnbalancedPsConfig:
    ratio: float = 1.5
    window: int = 3
    #: Below this many requests/s over the whole set, loads are too small to act on.
    min_requests_per_second: float = 1.0


@dataclass(frozen=True, slots=True)
class Imbalance:
    node: str
    load: float
    mean: float
    measure: str  # "requests/s" or "partition bytes"


def _recent(samples: Sequence[NodeSample], window: int) -> dict[str, list[NodeSample]]:
    by_node: dict[str, list[NodeSample]] = {}
    for s in sorted(samples, key=lambda s: s.timestamp):
        if s.replica_type is PS_TYPE:
            by_node.setdefault(s.node, []).append(s)
    return {n: ss[-window:] for n, ss in by_node.items() if len(ss) >= window}


def find_imbalance(
    samples: Sequence[NodeSample], config: UnbalancedPsConfig | None = None
) -> Imbalance | None:
    """The PS whose load is above ``ratio`` x the set's mean (the busiest such one)."""
    config = config or UnbalancedPsConfig()
    recent = _recent(samples, config.window)
    if len(recent) < 2:
        return None
    rates = {n: fmean(s.requests_per_second for s in ss) for n, ss in recent.items()}
    if sum(rates.values()) >= config.min_requests_per_second:
        loads, measure = rates, "requests/s"
    else:
        loads = {n: fmean(float(s.partition_bytes) for s in ss) for n, ss in recent.items()}
        measure = "partition bytes"
    mean = fmean(loads.values())
    if mean <= 0:
        return None
    node = max(sorted(loads), key=lambda n: loads[n])
    if loads[node] <= config.ratio * mean:
        return None
    return Imbalance(node, loads[node], mean, measure)


def plan_rebalance(ps_count: int, limits: JobLimits) -> int | None:
    """The PS count that re-partitions the set: one more PS, unless at the job's PS cap."""
    if limits.max_ps is not None and ps_count >= limits.max_ps:
        return None
    return ps_count + 1
