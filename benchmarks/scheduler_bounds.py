"""How far the ``goodput`` policy is from what any allocation could give in the Pollux-like
workload: bounds for the average-JCT goal of ``benchmarks/scheduler.py`` (0.85x ``goodput-v1``).

Usage: ``PYTHONPATH=. python benchmarks/scheduler_bounds.py [--seeds 3]``. Each row runs the
Pollux-like workload (``flexjob.scheduler.workloads``, adaptive batch size) for each seed,
pooled, against ``goodput-v1`` with the workload's 30 s restart delay:

- ``goodput``: the policy as shipped;
- ``free restarts``: the same policy in a simulator where a resize costs nothing (and the
  policy knows it; each job's first start still takes the workload's 30 s): what
  restart-awareness can win at most;
- ``size oracle a=A``: the policy told each job's true total work (no real scheduler knows it),
  weighing job ``j``'s utility by ``(1 GPU-hour / work_j) ** A`` - shortest jobs first, the
  ordering that minimises average completion time - with restarts charged, and free;
- ``left-work oracle``: the policy told each job's true work *left* every round (the
  simulator's ``observe``), weighing jobs by their rank in it, shortest first, as heSRPT's
  optimal allocation does (Berg, Vesilo, Harchol-Balter, 2020), with restarts charged; with
  free restarts; and with that re-planned every 10 s
  instead of every 60 s: what knowing job sizes exactly and resizing for free and at once can
  win at most within this optimiser;
- ``fixed-batch goodput-v1``: the previous policy without adaptive batch size, as it shipped
  before the issue that added it (the other rows all adapt their batch size).
"""

import argparse
import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from benchmarks.scheduler import pooled
from flexjob.core.allocator import JobInfo, Policy
from flexjob.core.allocator.contract import Allocations, Previous
from flexjob.core.allocator.fair_goodput import FairGoodputPolicy
from flexjob.core.allocator.placement import FreeMap
from flexjob.scheduler.registry import load_policy
from flexjob.scheduler.report import format_table
from flexjob.scheduler.simulator import ClusterConfig, SimResult, simulate
from flexjob.scheduler.trace import TraceJob
from flexjob.scheduler.workloads import pollux_trace

HOUR = 3600.0
#: The left-work oracle's heSRPT exponent and utility power (the best of a scan over seeds 0-9).
LEFT_C, LEFT_P = 1.5, 0.4


class SizeOracle(FairGoodputPolicy):
    """``goodput`` with each job's utility weighed by its true size (see the docstring)."""

    def __init__(self, work: dict[str, float], exponent: float, **options: Any) -> None:
        super().__init__(**options)
        self.work = work
        self.exponent = exponent

    def weight(self, job: JobInfo) -> float:
        return float((HOUR / self.work[job.id]) ** self.exponent)


class LeftWorkOracle(FairGoodputPolicy):
    """``goodput`` with each job weighed by its rank in true work left (see the docstring).

    heSRPT: with speedup ``k**q`` and ``m`` jobs, the optimal share of the ``i``-th largest is
    ``(i/m)**c - ((i-1)/m)**c`` with ``c = 1 / (1 - q)``; maximising a sum of weighed
    utilities gives those shares with weights ``(i**c - (i-1)**c) ** (1 / c)``.
    """

    def __init__(self, c: float, **options: Any) -> None:
        super().__init__(**options)
        self.c = c
        self.left: dict[str, float] = {}
        self.weights: dict[str, float] = {}

    def observe(self, left: Mapping[str, float]) -> None:
        self.left = dict(left)

    def plan(self, jobs: Sequence[JobInfo], free: FreeMap, previous: Previous) -> Allocations:
        largest_first = sorted(jobs, key=lambda j: (-self.left.get(j.id, 0.0), j.id))
        c = self.c
        self.weights = {
            job.id: (i**c - (i - 1) ** c) ** (1.0 / c)
            for i, job in enumerate(largest_first, start=1)
        }
        return super().plan(jobs, free, previous)

    def weight(self, job: JobInfo) -> float:
        return self.weights.get(job.id, 1.0)


#: The workload's cluster (30 s for a start and a resize); a resize free, a start still 30 s;
#: the same re-planned every 10 s instead of every 60 s.
WORKLOAD = ClusterConfig()
FREE = ClusterConfig(restart_delay=0.0, start_delay=WORKLOAD.first_start_delay)
FREE_10S = dataclasses.replace(FREE, tick=10.0, period=10.0)

Row = tuple[str, Callable[[list[TraceJob]], Policy], ClusterConfig, bool]


def rows() -> list[Row]:
    """(label, policy for a trace, cluster, adaptive batch size)."""

    def oracle(exponent: float, delay: float) -> Callable[[list[TraceJob]], Policy]:
        return lambda jobs: SizeOracle({j.id: j.work for j in jobs}, exponent, restart_delay=delay)

    out: list[Row] = [
        ("goodput-v1", lambda _: load_policy("goodput-v1"), WORKLOAD, True),
        ("goodput", lambda _: load_policy("goodput"), WORKLOAD, True),
        ("free restarts", lambda _: load_policy("goodput", restart_delay=0.0), FREE, True),
    ]
    for exponent in (0.1, 0.25, 0.5):
        out.append((f"size oracle a={exponent}", oracle(exponent, 30.0), WORKLOAD, True))
        out.append((f"size oracle a={exponent}, free restarts", oracle(exponent, 0.0), FREE, True))
    out.append(("left-work oracle", lambda _: LeftWorkOracle(LEFT_C, p=LEFT_P), WORKLOAD, True))
    free: dict[str, float] = {"restart_delay": 0.0}
    for label, cluster in (("free restarts", FREE), ("free restarts, 10 s rounds", FREE_10S)):
        make = lambda _: LeftWorkOracle(LEFT_C, p=LEFT_P, **free)  # noqa: E731
        out.append((f"left-work oracle, {label}", make, cluster, True))
    out.append(("fixed-batch goodput-v1", lambda _: load_policy("goodput-v1"), WORKLOAD, False))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    runs: list[list[SimResult]] = []
    for seed in range(args.seeds):
        results = []
        for label, make, cluster, adaptive in rows():
            jobs = pollux_trace(seed=seed, adaptive=adaptive)
            policy = make(jobs)
            observe = policy.observe if isinstance(policy, LeftWorkOracle) else None
            result = simulate(jobs, policy, cluster, observe=observe)
            results.append(dataclasses.replace(result, policy=label))
        runs.append(results)
    print(f"pollux-like workload, {args.seeds} seeds pooled: bounds on the average-JCT goal")
    print(format_table(pooled(runs), baseline="goodput-v1"))


if __name__ == "__main__":
    main()
