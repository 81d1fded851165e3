"""Scheduler benchmark: every policy on a tuning set and a held-out set of workloads.

Usage: ``PYTHONPATH=. python benchmarks/scheduler.py [--seeds 3] [--jobs 1] [--trace FILE]
[--nodes 16] [--gpus 4]``. Without ``--trace`` it runs the shipped
``examples/traces/synthetic.csv`` (ratios vs ``static``), then two sets of 160-job workloads on
16 nodes x 4 GPUs, each pooled over ``--seeds`` seeds, ratios against the previous default
``goodput-v1``:

- the **tuning set**: the Pollux-like generator (``flexjob.scheduler.workloads``), seeds from
  ``TUNING_SEEDS``: what policy settings were chosen on;
- the **held-out set**: a different job-model family (``flexjob.scheduler.measured``: step
  times fitted to published measurements, overlapped compute and all-reduce, a noise scale
  growing as jobs train, restart costs by model size, bursty arrivals) on different seeds
  (from ``HELD_OUT_SEEDS``): what the default is chosen on (``choose_default``, the rule in
  ``docs/allocator.md``). Nothing in any policy was tuned on it.

Each table has avg and p99 JCT, makespan, GPU utilisation, restarts and the CPU time of a
re-planning round (mean/p99/max); then one optimize round of ``goodput-v1`` and ``goodput``
for 160 jobs is timed on its own, warm and with every job's model new. The comparison is fair
by construction: every policy runs the same traces with the same job settings; only the
policy differs.
"""

import argparse
import multiprocessing
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from flexjob.core.allocator import JobInfo, NodeInfo, Resources
from flexjob.scheduler.measured import measured_trace
from flexjob.scheduler.registry import load_policy
from flexjob.scheduler.report import format_table
from flexjob.scheduler.simulator import ClusterConfig, SimResult, job_info, simulate
from flexjob.scheduler.trace import TraceJob, read_trace
from flexjob.scheduler.workloads import pollux_trace

SHIPPED = Path(__file__).resolve().parent.parent / "examples" / "traces" / "synthetic.csv"
POLICIES = ("static", "tiresias", "goodput-v1", "goodput")
BASELINE = "goodput-v1"
#: First seed of each set: the held-out seeds never overlap the tuning ones.
TUNING_SEEDS = 0
HELD_OUT_SEEDS = 100
#: Average JCTs closer than this (relative) are a tie, broken by the lower p99.
TIE = 0.02

#: (set name, generator, first seed).
SETS: tuple[tuple[str, Callable[..., list[TraceJob]], int], ...] = (
    ("tuning: pollux-like", pollux_trace, TUNING_SEEDS),
    ("held-out: measured", measured_trace, HELD_OUT_SEEDS),
)


def run(name: str, jobs: list[TraceJob], cluster: ClusterConfig, baseline: str) -> list[SimResult]:
    results = [simulate(jobs, load_policy(p), cluster) for p in POLICIES]
    print(f"\n{name}: {len(jobs)} jobs, {cluster.nodes} nodes x {cluster.gpus_per_node} GPUs")
    print(format_table(results, baseline=baseline))
    return results


def _one(task: tuple[Callable[..., list[TraceJob]], int, str, ClusterConfig]) -> SimResult:
    make, seed, policy, cluster = task
    return simulate(make(seed=seed), load_policy(policy), cluster)


def run_set(
    make: Callable[..., list[TraceJob]], first: int, seeds: int, cluster: ClusterConfig, procs: int
) -> list[SimResult]:
    """Every policy on ``seeds`` seeds of a workload from ``first``, pooled."""
    tasks = [(make, s, p, cluster) for s in range(first, first + seeds) for p in POLICIES]
    if procs > 1:
        with multiprocessing.Pool(procs) as pool:
            flat = pool.map(_one, tasks)
    else:
        flat = [_one(t) for t in tasks]
    k = len(POLICIES)
    return pooled([flat[i : i + k] for i in range(0, len(flat), k)])


def choose_default(held_out: list[SimResult]) -> str:
    """The policy with the lowest pooled average JCT on the held-out set; within ``TIE`` of
    it, the lowest p99; ``BASELINE`` when it is among the tied best."""
    best = min(r.avg_jct for r in held_out)
    tied = [r for r in held_out if r.avg_jct <= best * (1 + TIE)]
    if any(r.policy == BASELINE for r in tied) and len(tied) > 1:
        base = next(r for r in tied if r.policy == BASELINE)
        better = [r for r in tied if r.avg_jct < base.avg_jct and r.p99_jct <= base.p99_jct]
        return min(better, key=lambda r: r.avg_jct).policy if better else BASELINE
    return min(tied, key=lambda r: r.p99_jct).policy


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
                decision_gc=[t for r in mine for t in r.decision_gc],
            )
        )
    return out


def time_optimize(
    policy_name: str, jobs: list[TraceJob], nodes: int, gpus: int, *, cold: bool = False
) -> float:
    """The worst CPU seconds of 20 optimize rounds of 160 running jobs; ``cold``: every job
    reports a new model every round (no speedup curve is kept), else the same models."""
    cluster = [NodeInfo(f"n{i}", Resources(gpu=gpus)) for i in range(nodes)]

    def infos(round_: int) -> list[JobInfo]:
        out = []
        for job in jobs:
            info = job_info(job, job.submit_time + 600.0, 0)
            if cold:
                model = job.model()
                phi = (model.noise_scale or 100.0) * (1.0 + 1e-6 * round_)
                info = replace(info, speedup=replace(model, noise_scale=phi).speedup)
            out.append(info)
        return out

    first = infos(0)
    previous = load_policy("static").optimize(first, cluster, {})
    policy = load_policy(policy_name)
    policy.optimize(first, cluster, previous)  # warm: the first round fills speedup caches
    worst = 0.0
    for round_ in range(1, 21):
        now = infos(round_)
        start = time.process_time()
        policy.optimize(now, cluster, previous)
        worst = max(worst, time.process_time() - start)
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trace", type=Path)
    parser.add_argument("--nodes", type=int, default=16)
    parser.add_argument("--gpus", type=int, default=4)
    parser.add_argument("--seeds", type=int, default=3, help="seeds of each set")
    parser.add_argument("--jobs", type=int, default=1, help="simulations run at once")
    args = parser.parse_args()
    cluster = ClusterConfig(nodes=args.nodes, gpus_per_node=args.gpus)
    if args.trace:
        run(str(args.trace), read_trace(args.trace), cluster, "static")
        return
    run("shipped synthetic.csv", read_trace(SHIPPED), cluster, "static")
    held_out: list[SimResult] = []
    for name, make, first in SETS:
        results = run_set(make, first, args.seeds, cluster, args.jobs)
        seeds = f"seeds {first}-{first + args.seeds - 1}"
        print(f"\n{name} workload, {seeds} pooled (makespan: mean)")
        print(format_table(results, baseline=BASELINE))
        held_out = results
    print(f"\ndefault by the held-out rule (docs/allocator.md): {choose_default(held_out)}")
    big = pollux_trace(160, seed=0)
    print()
    for name in ("goodput-v1", "goodput"):
        for cold in (False, True):
            seconds = time_optimize(name, big, 16, 4, cold=cold)
            how = "every model new each round" if cold else "warm"
            print(
                f"{name} optimize round, 160 jobs on 16 nodes x 4 GPUs: "
                f"{seconds * 1000:.1f} ms CPU (worst of 20, {how})"
            )


if __name__ == "__main__":
    main()
