"""``flexjob run`` and ``flexjob agent``: torchrun's flags with the flexjob master.

``run`` starts a master (unless ``--master`` names one) and ``--start-nodes`` agents on this
machine (default: the MIN of ``--nnodes``); ``agent`` joins one more node to a running job.
Heavy imports happen inside the commands. Not for cluster submission (``flexjob submit``).
"""

from __future__ import annotations

import typer

_PASSTHROUGH = {
    "allow_extra_args": True,
    "ignore_unknown_options": True,
    "allow_interspersed_args": False,  # everything after SCRIPT belongs to the script
}


def register(app: typer.Typer) -> None:
    app.command("run", context_settings=_PASSTHROUGH)(run)
    app.command("agent", context_settings=_PASSTHROUGH)(agent)


def _logging(verbose: bool) -> None:
    import logging

    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
    )


def run(
    script: str = typer.Argument(..., help="Training script (or module with -m)."),
    script_args: list[str] = typer.Argument(None, help="Arguments for the script."),
    nnodes: str = typer.Option("1", "--nnodes", help="Nodes: N or MIN:MAX."),
    nproc_per_node: int = typer.Option(1, "--nproc-per-node", "--nproc_per_node"),
    start_nodes: int | None = typer.Option(
        None, "--start-nodes", help="Agents to start here [MIN of --nnodes]."
    ),
    max_restarts: int = typer.Option(3, "--max-restarts", "--max_restarts"),
    monitor_interval: float = typer.Option(0.5, "--monitor-interval", "--monitor_interval"),
    rdzv_id: str = typer.Option("job", "--rdzv-id", "--rdzv_id", help="Job name."),
    master: str | None = typer.Option(
        None, "--master", "--rdzv-endpoint", help="HOST:PORT of a running master."
    ),
    job_dir: str | None = typer.Option(None, "--job-dir", help="Master state and logs."),
    last_call_timeout: float = typer.Option(1.0, "--last-call-timeout"),
    heartbeat_timeout: float = typer.Option(10.0, "--heartbeat-timeout"),
    hang_timeout: float = typer.Option(
        180.0,
        "--hang-timeout",
        help="Seconds a trainer may make no progress before it is restarted as hung (0: off).",
    ),
    module: bool = typer.Option(False, "-m", "--module", help="Run SCRIPT as a module."),
    ps: int = typer.Option(
        0,
        "--ps",
        min=0,
        help="Parameter servers to start (`flexjob ps`); trainers get "
        "their addresses in $FLEXJOB_PS_ADDRESSES.",
    ),
    no_progress: bool = typer.Option(False, "--no-progress", help="No progress line."),
    plot: str | None = typer.Option(
        None, "--plot", help="Write a PNG of throughput and world size over time here."
    ),
    verbose: bool = typer.Option(False, "-v", "--verbose"),
) -> None:
    """Run a training script on elastic nodes of this machine (torchrun-compatible flags)."""
    from flexjob.agent.launcher import RunConfig, parse_nnodes, run_job

    _logging(verbose)
    try:
        lo, hi = parse_nnodes(nnodes)
        if start_nodes is not None and not lo <= start_nodes <= hi:
            raise ValueError(f"--start-nodes must be within --nnodes {lo}:{hi}, got {start_nodes}")
        opts = RunConfig(
            target=script,
            args=tuple(script_args or ()),
            module=module,
            min_nodes=lo,
            max_nodes=hi,
            start_nodes=start_nodes,
            nproc_per_node=nproc_per_node,
            max_restarts=max_restarts,
            monitor_interval=monitor_interval,
            job_name=rdzv_id,
            master=master,
            job_dir=job_dir,
            last_call_timeout=last_call_timeout,
            heartbeat_timeout=heartbeat_timeout,
            hang_timeout=hang_timeout,
            progress=not no_progress,
            plot=plot,
            num_ps=ps,
        )
    except ValueError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    raise typer.Exit(run_job(opts))


def agent(
    script: str = typer.Argument(..., help="Training script (or module with -m)."),
    script_args: list[str] = typer.Argument(None, help="Arguments for the script."),
    master: str = typer.Option(
        ...,
        "--master",
        "--rdzv-endpoint",
        envvar="FLEXJOB_MASTER",
        help="HOST:PORT of the master [$FLEXJOB_MASTER].",
    ),
    node_id: str | None = typer.Option(None, "--node-id", help="Stable node id [HOST-PID]."),
    replica_index: int = typer.Option(0, "--replica-index", envvar="FLEXJOB_REPLICA_INDEX"),
    job_name: str = typer.Option("job", "--job-name", "--rdzv-id", envvar="FLEXJOB_JOB_NAME"),
    nproc_per_node: int = typer.Option(1, "--nproc-per-node", "--nproc_per_node"),
    max_restarts: int = typer.Option(3, "--max-restarts", "--max_restarts"),
    monitor_interval: float = typer.Option(0.5, "--monitor-interval", "--monitor_interval"),
    run_dir: str = typer.Option("", "--run-dir", help="Where worker status files go."),
    address: str = typer.Option("127.0.0.1", "--address", help="This node's reachable host."),
    hang_timeout: float = typer.Option(
        180.0,
        "--hang-timeout",
        help="Seconds a trainer may make no progress before it is restarted as hung (0: off).",
    ),
    module: bool = typer.Option(False, "-m", "--module", help="Run SCRIPT as a module."),
    verbose: bool = typer.Option(False, "-v", "--verbose"),
) -> None:
    """Run one node of a job whose master is already running."""
    import os
    import socket

    from flexjob.agent.agent import ElasticAgent
    from flexjob.agent.config import AgentConfig

    _logging(verbose)
    try:
        config = AgentConfig(
            master=master,
            target=script,
            args=tuple(script_args or ()),
            module=module,
            node_id=node_id or f"{socket.gethostname()}-{os.getpid()}",
            replica_index=replica_index,
            job_name=job_name,
            nproc_per_node=nproc_per_node,
            max_restarts=max_restarts,
            monitor_interval=monitor_interval,
            address=address,
            run_dir=run_dir,
            hang_timeout=hang_timeout,
        )
    except ValueError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    raise typer.Exit(ElasticAgent(config).run())
