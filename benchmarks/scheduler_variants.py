"""What each piece of knowledge a live Allocator lacks is worth, on a workload of the benchmark.

Usage: ``PYTHONPATH=. python benchmarks/scheduler_variants.py [--seeds 5] [--workload measured]
[--variant shipped --variant true-model ...] [--policy goodput]``. Pooled average JCT and
restarts of one policy under each variant (``docs/allocator.md``, "What is left between
goodput and the goal"):

- ``shipped``: as ``benchmarks/scheduler.py`` runs it;
- ``true-model``: every job reports the fit to all profiled shapes from its first round (its
  trace row not ``learned``);
- ``true-restart``: ``goodput`` told each job's own restart cost (its row's, on the fewest
  nodes of its request) instead of the cluster's 30 s;
- ``free-restart``: ``goodput`` told restarts cost nothing;
- ``explore``: an experiment, not a shipped path - Pollux's exploration: the fit's prior has
  no all-reduce cost until measured, and a learned job may grow to at most twice the most
  replicas it has run. It patches ``sim_jobs.fit_throughput`` and ``simulator.job_info``
  for the run.
"""

import argparse
import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager

from benchmarks.scheduler import SETS
from flexjob.core.allocator import (
    FairGoodputPolicy,
    JobInfo,
    Policy,
    StepSample,
    ThroughputParams,
)
from flexjob.core.allocator.placement import min_nodes_for
from flexjob.core.training.goodput_model import fit_throughput
from flexjob.scheduler import sim_jobs, simulator
from flexjob.scheduler.registry import load_policy
from flexjob.scheduler.simulator import ClusterConfig, SimResult, simulate
from flexjob.scheduler.trace import TraceJob

VARIANTS = ("shipped", "true-model", "true-restart", "free-restart", "explore")


class TrueRestart(FairGoodputPolicy):
    """``goodput`` charging each job its own restart cost."""

    def __init__(self, trace: list[TraceJob], gpus_per_node: int) -> None:
        super().__init__()
        self.rows = {job.id: job for job in trace}
        self.per_node = gpus_per_node

    def resize_factor(self, job: JobInfo) -> float:
        row = self.rows[job.id]
        base = self.restart_delay if row.restart_delay is None else row.restart_delay
        nodes = min_nodes_for(max(job.replicas, 1) * row.gpus_per_replica, self.per_node)
        delay = base + row.restart_per_node * nodes
        return max(0.0, 1.0 - delay / max(job.age, self.min_horizon))


@contextmanager
def exploring() -> Iterator[None]:
    """The ``explore`` variant's patches, undone on exit."""
    jobs: dict[str, sim_jobs.SimJob] = {}
    init = sim_jobs.SimJob.__init__
    fit = fit_throughput  # what sim_jobs calls; patched below, by name
    info = simulator.job_info
    optimistic = ThroughputParams(
        sync_local=0.0, sync_local_per_replica=0.0, sync_remote=0.0, sync_remote_per_replica=0.0
    )

    def new_init(self: sim_jobs.SimJob, job: TraceJob) -> None:
        init(self, job)
        jobs[job.id] = self

    def new_fit(samples: list[StepSample], prior: ThroughputParams | None = None) -> object:
        return fit(samples, optimistic if prior == ThroughputParams() else prior)

    def new_info(job: TraceJob, *args: object, **kwargs: object) -> JobInfo:
        out = info(job, *args, **kwargs)  # type: ignore[arg-type]
        sim = jobs.get(job.id)
        if sim is None or not job.learned:
            return out
        most = max((n for _, n in sim._shapes), default=0)
        top = max(min(out.max_replicas, 2 * most), 1, out.min_replicas)
        return dataclasses.replace(out, max_replicas=top, replicas=min(out.replicas, top))

    patches = ((sim_jobs.SimJob, "__init__", new_init, init),
               (sim_jobs, "fit_throughput", new_fit, fit),
               (simulator, "job_info", new_info, info))  # fmt: skip
    for owner, name, new, _ in patches:
        setattr(owner, name, new)
    try:
        yield
    finally:
        for owner, name, _, old in patches:
            setattr(owner, name, old)


def run(variant: str, policy: str, trace: list[TraceJob], cluster: ClusterConfig) -> SimResult:
    chosen: Policy = load_policy(policy)
    if variant == "true-model":
        trace = [job.model_copy(update={"learned": False}) for job in trace]
    elif variant == "true-restart":
        chosen = TrueRestart(trace, cluster.gpus_per_node)
    elif variant == "free-restart":
        chosen = FairGoodputPolicy(restart_delay=0.0)
    if variant == "explore":
        with exploring():
            return simulate(trace, chosen, cluster)
    return simulate(trace, chosen, cluster)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--workload", choices=("pollux", "measured"), default="measured")
    parser.add_argument("--variant", action="append", choices=VARIANTS, default=[])
    parser.add_argument("--policy", default="goodput")
    args = parser.parse_args()
    make, first = next((m, f) for name, m, f in SETS if args.workload in name)
    cluster = ClusterConfig()
    variants = args.variant or list(VARIANTS)
    base = None
    for variant in variants:
        jct: list[float] = []
        restarts = 0
        for seed in range(first, first + args.seeds):
            result = run(variant, args.policy, make(seed=seed), cluster)
            jct.extend(result.jct.values())
            restarts += result.restarts
        avg = sum(jct) / len(jct) / 3600.0
        base = base or avg
        print(
            f"{args.workload} seeds {first}-{first + args.seeds - 1} {args.policy} {variant}: "
            f"avg JCT {avg:.4f} h ({avg / base:.3f}x), restarts {restarts}"
        )


if __name__ == "__main__":
    main()
