"""How far the ``goodput`` policy is from what any allocation could give in the Pollux-like
workload: bounds for the average-JCT goal of ``benchmarks/scheduler.py`` (0.85x ``goodput-v1``).

Usage: ``PYTHONPATH=. python benchmarks/scheduler_bounds.py [--seeds 3]``. Each row runs the
Pollux-like workload (``flexjob.scheduler.workloads``, adaptive batch size) for each seed,
pooled, against ``goodput-v1`` with the workload's 30 s restart delay:

- ``goodput``: the policy as shipped;
- ``free restarts``: the same policy in a simulator where a resize costs nothing (and the
  policy knows it): what restart-awareness can win at most;
- ``size oracle a=A``: the policy told each job's true total work (no real scheduler knows it),
  weighing job ``j``'s utility by ``(1 GPU-hour / work_j) ** A`` - shortest jobs first, the
  ordering that minimises average completion time - with restarts charged, and free;
- ``fixed-batch goodput-v1``: the previous policy without adaptive batch size, as it shipped
  before the issue that added it (the other rows all adapt their batch size).
"""

import argparse
import dataclasses
from collections.abc import Callable

from benchmarks.scheduler import pooled
from flexjob.core.policies import JobInfo, Policy
from flexjob.core.policies.fair_goodput import FairGoodputPolicy
from flexjob.scheduler.registry import load_policy
from flexjob.scheduler.report import format_table
from flexjob.scheduler.simulator import ClusterConfig, SimResult, simulate
from flexjob.scheduler.trace import TraceJob
from flexjob.scheduler.workloads import pollux_trace

HOUR = 3600.0


class SizeOracle(FairGoodputPolicy):
    """``goodput`` with each job's utility weighed by its true size (see the docstring)."""

    def __init__(self, work: dict[str, float], exponent: float, **options: float) -> None:
        super().__init__(**options)
        self.work = work
        self.exponent = exponent

    def weight(self, job: JobInfo) -> float:
        return float((HOUR / self.work[job.id]) ** self.exponent)


Row = tuple[str, Callable[[list[TraceJob]], Policy], float, bool]


def rows() -> list[Row]:
    """(label, policy for a trace, restart delay, adaptive batch size)."""

    def oracle(exponent: float, delay: float) -> Callable[[list[TraceJob]], Policy]:
        return lambda jobs: SizeOracle({j.id: j.work for j in jobs}, exponent, restart_delay=delay)

    out: list[Row] = [
        ("goodput-v1", lambda _: load_policy("goodput-v1"), 30.0, True),
        ("goodput", lambda _: load_policy("goodput"), 30.0, True),
        ("free restarts", lambda _: load_policy("goodput", restart_delay=0.0), 0.0, True),
    ]
    for exponent in (0.1, 0.25, 0.5):
        out.append((f"size oracle a={exponent}", oracle(exponent, 30.0), 30.0, True))
        out.append((f"size oracle a={exponent}, free restarts", oracle(exponent, 0.0), 0.0, True))
    out.append(("fixed-batch goodput-v1", lambda _: load_policy("goodput-v1"), 30.0, False))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    runs: list[list[SimResult]] = []
    for seed in range(args.seeds):
        results = []
        for label, make, delay, adaptive in rows():
            jobs = pollux_trace(seed=seed, adaptive=adaptive)
            cluster = ClusterConfig(restart_delay=delay)
            result = simulate(jobs, make(jobs), cluster)
            results.append(dataclasses.replace(result, policy=label))
        runs.append(results)
    print(f"pollux-like workload, {args.seeds} seeds pooled: bounds on the average-JCT goal")
    print(format_table(pooled(runs), baseline="goodput-v1"))


if __name__ == "__main__":
    main()
