"""Scheduler benchmark: policies x (avg JCT, p99 JCT, makespan, restarts, decision time).

Usage: ``PYTHONPATH=. python benchmarks/scheduler.py [--trace FILE] [--nodes 16] [--gpus 4]
[--seeds 3] [--seed-start 0]``. Without ``--trace`` it runs the shipped
``examples/traces/synthetic.csv`` (ratios vs ``static``), then the Pollux-like workload
(``flexjob.scheduler.workloads``: 160 jobs over 8 hours on 16 nodes x 4 GPUs) for each of
``--seeds`` seeds from ``--seed-start`` and pooled, with ratios against the previous goodput
policy ``goodput-v1`` (the ``goodput`` policy's defaults were chosen on seeds 0-9: seeds from
10 on are held out); and it times one optimize round of ``goodput-v1`` and ``goodput`` for 160
jobs on 16 nodes x 4 GPUs.

The comparison is fair by construction: every policy runs the same trace with the same job
settings and the same goodput models (speedup and adaptive batch size alike), and the simulator
charges every allocation change the same restart delay; only the policy differs. In the
Pollux-like workload every job opts in to adaptive batch size, as in Pollux's evaluation;
``--fixed-batch`` turns it off for every job (all policies alike).
"""

import argparse
import time
from pathlib import Path

from flexjob.core.policies import NodeInfo, Resources
from flexjob.scheduler.registry import load_policy
from flexjob.scheduler.report import format_table
from flexjob.scheduler.simulator import ClusterConfig, SimResult, job_info, simulate
from flexjob.scheduler.trace import TraceJob, read_trace
from flexjob.scheduler.workloads import pollux_trace

SHIPPED = Path(__file__).resolve().parent.parent / "examples" / "traces" / "synthetic.csv"
POLICIES = ("static", "tiresias", "goodput-v1", "goodput")


def run(name: str, jobs: list[TraceJob], cluster: ClusterConfig, baseline: str) -> list[SimResult]:
    results = [simulate(jobs, load_policy(p), cluster) for p in POLICIES]
    print(f"\n{name}: {len(jobs)} jobs, {cluster.nodes} nodes x {cluster.gpus_per_node} GPUs")
    print(format_table(results, baseline=baseline))
    return results


def pooled(runs: list[list[SimResult]]) -> list[SimResult]:
    """One result per column of ``runs`` (a list per seed) over all seeds: every job's JCT,
    summed restarts."""
    out = []
    for i in range(len(runs[0])):
        mine = [r[i] for r in runs]
        jct = {f"{k}#{s}": v for s, r in enumerate(mine) for k, v in r.jct.items()}
        out.append(
            SimResult(
                policy=mine[0].policy,
                jct=jct,
                makespan=sum(r.makespan for r in mine) / len(mine),
                gpu_utilisation=sum(r.gpu_utilisation for r in mine) / len(mine),
                restarts=sum(r.restarts for r in mine),
                unfinished=[u for r in mine for u in r.unfinished],
                decision_times=[t for r in mine for t in r.decision_times],
            )
        )
    return out


def time_optimize(policy_name: str, jobs: list[TraceJob], nodes: int, gpus: int) -> float:
    infos = [job_info(job, job.submit_time + 600.0, 0) for job in jobs]
    cluster = [NodeInfo(f"n{i}", Resources(gpu=gpus)) for i in range(nodes)]
    previous = load_policy("static").optimize(infos, cluster, {})
    policy = load_policy(policy_name)
    policy.optimize(infos, cluster, previous)  # warm: the first round fills speedup caches
    rounds = 20
    worst = 0.0
    for _ in range(rounds):
        start = time.process_time()
        policy.optimize(infos, cluster, previous)
        worst = max(worst, time.process_time() - start)
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trace", type=Path)
    parser.add_argument("--nodes", type=int, default=16)
    parser.add_argument("--gpus", type=int, default=4)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--seed-start", type=int, default=0, help="first seed of the workload")
    parser.add_argument(
        "--fixed-batch",
        action="store_true",
        help="Pollux-like workload with adaptive batch size off for every job",
    )
    args = parser.parse_args()
    cluster = ClusterConfig(nodes=args.nodes, gpus_per_node=args.gpus)
    if args.trace:
        run(str(args.trace), read_trace(args.trace), cluster, "static")
        return
    run("shipped synthetic.csv", read_trace(SHIPPED), cluster, "static")
    adaptive = not args.fixed_batch
    batch = "adaptive batch size" if adaptive else "fixed batch size"
    print(
        f"\npollux-like workload: every policy runs the same jobs with the same settings "
        f"({batch} for every job, {cluster.restart_delay:.0f} s restart delay); only the policy "
        "differs"
    )
    runs = [
        run(
            f"pollux-like workload, seed {seed}",
            pollux_trace(seed=seed, adaptive=adaptive),
            cluster,
            "goodput-v1",
        )
        for seed in range(args.seed_start, args.seed_start + args.seeds)
    ]
    seeds = f"seeds {args.seed_start}-{args.seed_start + args.seeds - 1}"
    print(f"\npollux-like workload ({batch}), {seeds} pooled (makespan: mean)")
    print(format_table(pooled(runs), baseline="goodput-v1"))
    big = pollux_trace(160, seed=0)
    print()
    for name in ("goodput-v1", "goodput"):
        seconds = time_optimize(name, big, 16, 4)
        print(
            f"{name} optimize round, 160 jobs on 16 nodes x 4 GPUs: "
            f"{seconds * 1000:.1f} ms CPU (worst of 20, warm)"
        )


if __name__ == "__main__":
    main()
