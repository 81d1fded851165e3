"""Scheduler benchmark: policies x (avg JCT, p99 JCT, makespan) on a trace, ratios vs ``static``.

Usage: ``PYTHONPATH=. python benchmarks/scheduler.py [--trace FILE] [--nodes 16] [--gpus 4]``.
Without ``--trace`` it runs the shipped ``examples/traces/synthetic.csv`` and a larger
synthetic trace (160 jobs); it also times one ``goodput`` optimize round for 160 jobs on
16 nodes x 4 GPUs.
"""

import argparse
import time
from pathlib import Path

from flexjob.core.policies import NodeInfo, Resources
from flexjob.scheduler.registry import load_policy
from flexjob.scheduler.report import format_table
from flexjob.scheduler.simulator import ClusterConfig, job_info, simulate
from flexjob.scheduler.trace import TraceJob, generate_trace, read_trace

SHIPPED = Path(__file__).resolve().parent.parent / "examples" / "traces" / "synthetic.csv"
POLICIES = ("static", "pack", "goodput")


def run(name: str, jobs: list[TraceJob], cluster: ClusterConfig) -> None:
    results = [simulate(jobs, load_policy(p), cluster) for p in POLICIES]
    print(f"\n{name}: {len(jobs)} jobs, {cluster.nodes} nodes x {cluster.gpus_per_node} GPUs")
    print(format_table(results, baseline="static"))


def time_optimize(jobs: list[TraceJob], nodes: int, gpus: int) -> float:
    infos = [job_info(job, job.submit_time + 600.0, 0) for job in jobs]
    cluster = [NodeInfo(f"n{i}", Resources(gpu=gpus)) for i in range(nodes)]
    previous = load_policy("static").optimize(infos, cluster, {})
    policy = load_policy("goodput")
    start = time.process_time()
    rounds = 20
    for _ in range(rounds):
        policy.optimize(infos, cluster, previous)
    return (time.process_time() - start) / rounds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trace", type=Path)
    parser.add_argument("--nodes", type=int, default=16)
    parser.add_argument("--gpus", type=int, default=4)
    args = parser.parse_args()
    cluster = ClusterConfig(nodes=args.nodes, gpus_per_node=args.gpus)
    if args.trace:
        run(str(args.trace), read_trace(args.trace), cluster)
        return
    run("shipped synthetic.csv", read_trace(SHIPPED), cluster)
    big = generate_trace(160, seed=7, mean_interarrival=60.0)
    run("synthetic, 160 jobs (seed 7)", big, cluster)
    seconds = time_optimize(big, 16, 4)
    print(f"\ngoodput optimize round, 160 jobs on 16 nodes x 4 GPUs: {seconds * 1000:.1f} ms (CPU)")


if __name__ == "__main__":
    main()
