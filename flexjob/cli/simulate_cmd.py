"""``flexjob simulate``: run a trace through the cluster simulator under one or more policies.

``flexjob simulate --trace FILE --policy static --policy goodput [--plot out.png]`` prints avg
JCT, p99 JCT, makespan, GPU utilisation, restarts and decision time per policy (ratios against
the first policy); ``--workload pollux`` simulates the Pollux-like workload
(``flexjob.scheduler.workloads``) and ``--workload measured`` the jobs fitted to published
measurements (``flexjob.scheduler.measured``) instead of a file. ``flexjob simulate gen-trace
--out FILE [--workload pollux]`` writes a trace. The CSV format is described in
``flexjob.scheduler.trace``.
"""

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from flexjob.cli.apps import new_app
from flexjob.cli.errors import usage_error
from flexjob.scheduler import DEFAULT_POLICY

if TYPE_CHECKING:
    from flexjob.scheduler.trace import TraceJob

WORKLOADS = ("synthetic", "pollux", "measured")


def _generate(workload: str, jobs: int, seed: int, **synthetic: float) -> "list[TraceJob]":
    from flexjob.scheduler.measured import measured_trace
    from flexjob.scheduler.trace import generate_trace
    from flexjob.scheduler.workloads import pollux_trace

    if workload == "pollux":
        return pollux_trace(jobs, seed=seed)
    if workload == "measured":
        return measured_trace(jobs, seed=seed)
    if workload == "synthetic":
        return generate_trace(
            jobs,
            seed=seed,
            mean_interarrival=synthetic.get("mean_interarrival", 120.0),
            max_replicas=int(synthetic.get("max_replicas", 16)),
        )
    raise typer.BadParameter(
        f"unknown workload {workload!r}; allowed: {', '.join(WORKLOADS)}", param_hint="--workload"
    )


def _simulate(
    ctx: typer.Context,
    trace: Path | None = typer.Option(
        None,
        "--trace",
        help="CSV trace: id,submit_time,work[,replicas,min_replicas,max_replicas,...] "
        "(all columns: flexjob.scheduler.trace).",
    ),
    workload: str | None = typer.Option(
        None, help=f"Simulate a generated workload instead of --trace: {', '.join(WORKLOADS)}."
    ),
    jobs: int = typer.Option(160, min=1, help="Jobs of a generated --workload."),
    seed: int = typer.Option(0, help="Seed of a generated --workload."),
    policy: list[str] = typer.Option(
        ["static", DEFAULT_POLICY], "--policy", help="Policy name, entry point or module:Class."
    ),
    nodes: int = typer.Option(16, min=1, help="Nodes in the simulated cluster."),
    gpus_per_node: int = typer.Option(4, min=1, help="GPUs per node."),
    period: float = typer.Option(60.0, min=1.0, help="Seconds between optimize rounds."),
    restart_delay: float = typer.Option(
        30.0,
        min=0.0,
        help="Seconds a re-allocation costs; restart-aware policies (goodput) are told it.",
    ),
    start_delay: float | None = typer.Option(
        None, min=0.0, help="Seconds a job's first start costs (default: --restart-delay)."
    ),
    plot: Path | None = typer.Option(None, help="Write JCT CDFs of all policies to this PNG."),
) -> None:
    """Simulate a trace under each --policy and print avg/p99 JCT, makespan, GPU utilisation."""
    if ctx.invoked_subcommand is not None:
        return
    if (trace is None) == (workload is None):
        raise typer.BadParameter(
            "give exactly one of --trace (a CSV trace file) or --workload", param_hint="--trace"
        )
    from flexjob.scheduler.registry import UnknownPolicyError, load_policy_for
    from flexjob.scheduler.report import format_table
    from flexjob.scheduler.simulator import ClusterConfig, simulate
    from flexjob.scheduler.trace import TraceError, read_trace

    try:
        trace_jobs = (
            read_trace(trace) if trace is not None else _generate(str(workload), jobs, seed)
        )
        policies = [load_policy_for(name, restart_delay=restart_delay) for name in policy]
    except (TraceError, UnknownPolicyError) as exc:
        raise usage_error(exc) from None
    cluster = ClusterConfig(
        nodes=nodes,
        gpus_per_node=gpus_per_node,
        tick=min(ClusterConfig().tick, period),  # a round every period, even a short one
        period=period,
        restart_delay=restart_delay,
        start_delay=start_delay,
    )
    results = [simulate(trace_jobs, p, cluster) for p in policies]
    typer.echo(
        f"{len(trace_jobs)} jobs on {nodes} nodes x {gpus_per_node} GPUs "
        f"(period {period:g}s, restart delay {restart_delay:g}s, "
        f"start delay {cluster.first_start_delay:g}s)"
    )
    typer.echo(format_table(results, baseline=results[0].policy))
    if plot is not None:
        from flexjob.scheduler.plot import plot_jct_cdf

        plot_jct_cdf(results, plot)
        typer.echo(f"JCT CDF written to {plot}")


def _gen_trace(
    out: Path = typer.Option(..., "--out", help="Where to write the CSV trace."),
    jobs: int = typer.Option(60, min=1, help="Number of jobs."),
    seed: int = typer.Option(1, help="Random seed."),
    workload: str = typer.Option("synthetic", help=f"One of {', '.join(WORKLOADS)}."),
    mean_interarrival: float = typer.Option(120.0, min=0.0, help="Mean seconds between jobs."),
    max_replicas: int = typer.Option(16, min=1, help="maxReplicas of every job (synthetic)."),
) -> None:
    """Write a trace: ``synthetic`` (Poisson arrivals, lognormal sizes, four classes),
    ``pollux`` (six models after the Pollux evaluation, production-like arrivals) or
    ``measured`` (six job types fitted to published measurements, arrivals with bursts)."""
    from flexjob.scheduler.trace import write_trace

    generated = _generate(
        workload, jobs, seed, mean_interarrival=mean_interarrival, max_replicas=max_replicas
    )
    write_trace(generated, out)
    typer.echo(f"wrote {jobs} jobs to {out}")


def register(app: typer.Typer) -> None:
    group = new_app(
        name="simulate",
        help="Cluster simulator: compare allocation policies on a job trace.",
        invoke_without_command=True,
    )
    group.callback()(_simulate)
    group.command("gen-trace")(_gen_trace)
    app.add_typer(group, name="simulate")
