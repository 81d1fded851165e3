"""Where a policy's job completion time goes, from the simulator's per-round traces.

Usage: ``PYTHONPATH=. python benchmarks/scheduler_trace.py [--seeds 3] [--workload measured]
[--policy goodput-v1 --policy goodput]``. For each policy, pooled over the seeds of the
workload (``benchmarks/scheduler.SETS``), every job's time from submission to completion is
split into waiting (no allocation), (re)starting (paying a start or restart delay) and
training; with the time-weighted replicas and speedup it trained at, the GPU-hours left idle
while some job waited, and the average JCT per job type. Ratios against the first policy.
This is how the cause in ``docs/allocator.md`` ("Why goodput lost average JCT") was found.
"""

import argparse
from collections import defaultdict
from dataclasses import dataclass, field

from benchmarks.scheduler import SETS
from benchmarks.table import print_table
from flexjob.scheduler.registry import load_policy
from flexjob.scheduler.simulator import ClusterConfig, TickRecord, simulate

TICK = ClusterConfig().tick


@dataclass
class Breakdown:
    """Sums over the jobs (and ticks) of one policy."""

    jct: list[float] = field(default_factory=list)
    waiting: float = 0.0
    starting: float = 0.0
    training: float = 0.0
    replica_seconds: float = 0.0
    rate_seconds: float = 0.0
    idle_while_waiting: float = 0.0
    idle: float = 0.0
    restarts: int = 0
    by_type: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))

    def tick(self, record: TickRecord) -> None:
        tick = TICK
        self.waiting += tick * len(record.waiting)
        self.idle += tick * record.idle_gpus
        if record.waiting:
            self.idle_while_waiting += tick * record.idle_gpus
        for job, (replicas, rate) in record.placed.items():
            start = record.starting.get(job, 0.0)
            self.starting += start
            self.training += tick - start
            self.replica_seconds += replicas * (tick - start)
            self.rate_seconds += rate * (tick - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--workload", choices=("pollux", "measured"), default="measured")
    parser.add_argument("--policy", action="append", default=[])
    args = parser.parse_args()
    policies = args.policy or ["goodput-v1", "goodput"]
    make, first = next((m, f) for name, m, f in SETS if args.workload in name)
    cluster = ClusterConfig()
    sums = {p: Breakdown() for p in policies}
    for seed in range(first, first + args.seeds):
        jobs = make(seed=seed)
        for name in policies:
            b = sums[name]
            result = simulate(jobs, load_policy(name), cluster, on_tick=b.tick)
            b.jct.extend(result.jct.values())
            b.restarts += result.restarts
            for job, jct in result.jct.items():
                b.by_type[job.rsplit("-", 1)[0]].append(jct)
    base = sums[policies[0]]
    count = len(base.jct)
    hour = 3600.0

    def cell(value: float, of: float) -> str:
        return f"{value:.3f} ({value / of:.2f}x)" if of else f"{value:.3f}"

    rows = [["policy", "avg JCT h", "waiting h/job", "starting h/job", "training h/job",
             "replicas (train-weighted)", "speedup (train-weighted)", "idle GPU-h while jobs wait",
             "idle GPU-h", "restarts"]]  # fmt: skip
    for name, b in sums.items():
        rows.append([
            name,
            cell(sum(b.jct) / count / hour, sum(base.jct) / count / hour),
            cell(b.waiting / count / hour, base.waiting / count / hour),
            cell(b.starting / count / hour, base.starting / count / hour),
            cell(b.training / count / hour, base.training / count / hour),
            f"{b.replica_seconds / b.training:.2f}",
            f"{b.rate_seconds / b.training:.2f}",
            f"{b.idle_while_waiting / hour:.0f}",
            f"{b.idle / hour:.0f}",
            str(b.restarts),
        ])  # fmt: skip
    print(f"{args.workload} workload, seeds {first}-{first + args.seeds - 1}: where JCT goes")
    print_table(rows)
    print()
    types = sorted(base.by_type)
    rows = [["job type", "jobs", *(f"avg JCT h {p}" for p in policies)]]
    for kind in types:
        avgs = [sum(sums[p].by_type[kind]) / len(sums[p].by_type[kind]) / hour for p in policies]
        rows.append([kind, str(len(base.by_type[kind])), *(cell(a, avgs[0]) for a in avgs)])
    print_table(rows)


if __name__ == "__main__":
    main()
