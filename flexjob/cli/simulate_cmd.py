"""``flexjob simulate``: run a trace through the cluster simulator under one or more policies.

``flexjob simulate --trace FILE --policy static --policy goodput [--plot out.png]`` prints avg
JCT, p99 JCT, makespan and GPU utilisation per policy (ratios against the first policy);
``flexjob simulate gen-trace --out FILE`` writes a synthetic trace. The CSV format is described
in ``flexjob.scheduler.trace``.
"""

from pathlib import Path

import typer


def _simulate(
    ctx: typer.Context,
    trace: Path | None = typer.Option(
        None,
        "--trace",
        help="CSV trace: id,submit_time,work[,replicas,min_replicas,max_replicas,...] "
        "(all columns: flexjob.scheduler.trace).",
    ),
    policy: list[str] = typer.Option(
        ["static", "goodput"], "--policy", help="Policy name, entry point or module:Class."
    ),
    nodes: int = typer.Option(16, min=1, help="Nodes in the simulated cluster."),
    gpus_per_node: int = typer.Option(4, min=1, help="GPUs per node."),
    period: float = typer.Option(60.0, min=1.0, help="Seconds between optimize rounds."),
    restart_delay: float = typer.Option(30.0, min=0.0, help="Seconds a re-allocation costs."),
    plot: Path | None = typer.Option(None, help="Write JCT CDFs of all policies to this PNG."),
) -> None:
    """Simulate a trace under each --policy and print avg/p99 JCT, makespan, GPU utilisation."""
    if ctx.invoked_subcommand is not None:
        return
    if trace is None:
        raise typer.BadParameter("is required (a CSV trace file)", param_hint="--trace")
    from flexjob.scheduler.registry import UnknownPolicyError, load_policy
    from flexjob.scheduler.report import format_table
    from flexjob.scheduler.simulator import ClusterConfig, simulate
    from flexjob.scheduler.trace import TraceError, read_trace

    try:
        jobs = read_trace(trace)
        policies = [load_policy(name) for name in policy]
    except (TraceError, UnknownPolicyError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    cluster = ClusterConfig(
        nodes=nodes, gpus_per_node=gpus_per_node, period=period, restart_delay=restart_delay
    )
    results = [simulate(jobs, p, cluster) for p in policies]
    typer.echo(
        f"{len(jobs)} jobs on {nodes} nodes x {gpus_per_node} GPUs "
        f"(period {period:g}s, restart delay {restart_delay:g}s)"
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
    mean_interarrival: float = typer.Option(120.0, min=0.0, help="Mean seconds between jobs."),
    max_replicas: int = typer.Option(16, min=1, help="maxReplicas of every job."),
) -> None:
    """Write a synthetic trace: Poisson arrivals, lognormal sizes, four workload classes."""
    from flexjob.scheduler.trace import generate_trace, write_trace

    write_trace(
        generate_trace(
            jobs, seed=seed, mean_interarrival=mean_interarrival, max_replicas=max_replicas
        ),
        out,
    )
    typer.echo(f"wrote {jobs} jobs to {out}")


def register(app: typer.Typer) -> None:
    group = typer.Typer(
        name="simulate",
        help="Cluster simulator: compare allocation policies on a job trace.",
        invoke_without_command=True,
    )
    group.callback()(_simulate)
    group.command("gen-trace")(_gen_trace)
    app.add_typer(group, name="simulate")
