"""``flexjob run`` and ``flexjob agent``: torchrun's flags with the flexjob master.

``run`` starts a master (unless ``--master`` names one) and ``--start-nodes`` agents on this
machine (default: the MIN of ``--nnodes``); ``agent`` joins one more node to a running job.
torchrun's flags are taken with both spellings (``cli.torchrun_flags``); an unknown option is
an error, never the script. Heavy imports happen inside the commands. Not for cluster
submission (``flexjob submit``).
"""

from __future__ import annotations

from typing import Any

import typer

from flexjob.agent.config import AgentConfig, agent_default
from flexjob.agent.output import OutputConfig
from flexjob.api.enums import StragglerPolicy
from flexjob.api.names import ENV_MAX_RESTARTS, ENV_NPROC_PER_NODE
from flexjob.cli import torchrun_flags
from flexjob.cli.errors import usage_error, valid_path_part
from flexjob.cli.master_flags import FLAGS, master_flag, overrides
from flexjob.runner.config import RUN_MASTER, RunConfig

_PASSTHROUGH = {
    "allow_extra_args": True,
    "ignore_unknown_options": True,
    "allow_interspersed_args": False,  # everything after SCRIPT belongs to the script
}

STOPPING = (
    "SIGTERM, SIGINT (Ctrl-C) and SIGHUP stop every process of the job: trainers get SIGTERM "
    "and 5 s to save a checkpoint before SIGKILL; the exit code is then 128 + the signal."
)


def register(app: typer.Typer) -> None:
    app.command("run", context_settings=_PASSTHROUGH, epilog=STOPPING)(run)
    app.command("agent", context_settings=_PASSTHROUGH, epilog=STOPPING)(agent)


def _check_option(script: str) -> None:
    """Exit 2 when an option was taken as the script."""
    problem = torchrun_flags.option_problem(script)
    if problem is not None:
        raise usage_error(problem)


def _check_target(script: str, module: bool) -> None:
    """Exit 127 for a script that is not there (after the options were checked)."""
    from flexjob.agent.target import EXIT_NOT_FOUND, target_problem

    problem = target_problem(script, module)
    if problem is not None:
        typer.echo(f"error: {problem}", err=True)
        raise typer.Exit(EXIT_NOT_FOUND)


SCRIPT = typer.Argument(..., help="Training script (or module with -m).")
SCRIPT_ARGS = typer.Argument(None, help="Arguments for the script.")
NPROC = typer.Option("1", "--nproc-per-node", "--nproc_per_node", help="N, cpu, gpu or auto.")
MAX_RESTARTS = typer.Option(agent_default("max_restarts"), "--max-restarts", "--max_restarts")
# `flexjob agent` in a job's replica: the job's elasticPolicy (the operator sets the variables).
AGENT_NPROC = typer.Option(
    "1",
    "--nproc-per-node",
    "--nproc_per_node",
    envvar=ENV_NPROC_PER_NODE,
    help=f"N, cpu, gpu or auto [${ENV_NPROC_PER_NODE}: the job's elasticPolicy.nProcPerNode].",
)
AGENT_MAX_RESTARTS = typer.Option(
    agent_default("max_restarts"),
    "--max-restarts",
    "--max_restarts",
    envvar=ENV_MAX_RESTARTS,
    help=f"[${ENV_MAX_RESTARTS}: the job's elasticPolicy.maxRestarts].",
)
MONITOR = typer.Option(
    agent_default("monitor_interval"), "--monitor-interval", "--monitor_interval"
)
RDZV_BACKEND = typer.Option(
    "flexjob", "--rdzv-backend", "--rdzv_backend", help="flexjob (c10d means the same)."
)
RDZV_CONF = typer.Option(
    "", "--rdzv-conf", "--rdzv_conf", help="join_timeout=S,last_call_timeout=S."
)
LOG_DIR = typer.Option(
    "", "--log-dir", "--log_dir", help="Per-rank stdout/stderr files: DIR/NODE/LOCAL_RANK/."
)
REDIRECTS = typer.Option(
    "0", "-r", "--redirects", help="Streams sent only to --log-dir: 0-3 or RANK:0-3,..."
)
TEE = typer.Option("0", "-t", "--tee", help="Streams also copied to --log-dir: 0-3 or RANK:0-3,...")
RUN_PATH = typer.Option(
    False, "--run-path", "--run_path", help="Run SCRIPT as a path (the default)."
)
MODULE = typer.Option(False, "-m", "--module", help="Run SCRIPT as a module.")
HANG_TIMEOUT = typer.Option(
    agent_default("hang_timeout"),
    "--hang-timeout",
    help="Seconds a trainer may make no progress before it is restarted as hung (0: off).",
)
STRAGGLERS = master_flag("stragglers", RUN_MASTER)
PREFLIGHT = typer.Option(
    False,
    "--preflight",
    help="Every new world runs a small check (compute + all-reduce) before it trains; nodes "
    "that fail it or take over 3x the others' median are kept out ($FLEXJOB_PREFLIGHT=1).",
)
ADDRESS = typer.Option(
    agent_default("address"),
    "--address",
    help="This node's address others reach: its workers' groups bind it, and the master "
    "(and --ps servers) `run` starts listen on and advertise it; beyond loopback the master "
    "needs $FLEXJOB_MASTER_TOKEN.",
)
STRAGGLER_RATIO = master_flag("straggler_ratio", RUN_MASTER)
STRAGGLER_WINDOW = master_flag("straggler_window", RUN_MASTER)


def run(
    ctx: typer.Context,
    script: str = SCRIPT,
    script_args: list[str] = SCRIPT_ARGS,
    nnodes: str = typer.Option("1", "--nnodes", help="Nodes: N or MIN:MAX."),
    nproc_per_node: str = NPROC,
    standalone: bool = typer.Option(
        False, "--standalone", help="One node with its own master (what run does by default)."
    ),
    start_nodes: int | None = typer.Option(
        None, "--start-nodes", help="Agents to start here [MIN of --nnodes]."
    ),
    node_rank: int = typer.Option(
        RunConfig.__dataclass_fields__["node_rank"].default,
        "--node-rank",
        "--node_rank",
        help="First node id here (ranks: by join order).",
    ),
    max_restarts: int = MAX_RESTARTS,
    monitor_interval: float = MONITOR,
    rdzv_id: str = typer.Option(
        "job", "--rdzv-id", "--rdzv_id", help="Job name.", callback=valid_path_part
    ),
    rdzv_backend: str = RDZV_BACKEND,
    rdzv_conf: str = RDZV_CONF,
    master: str | None = typer.Option(
        None,
        "--master",
        "--rdzv-endpoint",
        "--rdzv_endpoint",
        help="HOST:PORT of a running flexjob master.",
    ),
    job_dir: str | None = typer.Option(
        None,
        "--job-dir",
        help="Master state, logs and default checkpoints, kept [a temporary dir, removed after "
        "success].",
    ),
    address: str = ADDRESS,
    log_dir: str = LOG_DIR,
    redirects: str = REDIRECTS,
    tee: str = TEE,
    last_call_timeout: float = master_flag("last_call_timeout", RUN_MASTER),
    heartbeat_timeout: float = master_flag("heartbeat_timeout", RUN_MASTER),
    hang_timeout: float = HANG_TIMEOUT,
    stragglers: StragglerPolicy = STRAGGLERS,
    straggler_ratio: float = STRAGGLER_RATIO,
    straggler_window: float = STRAGGLER_WINDOW,
    preflight: bool = PREFLIGHT,
    run_path: bool = RUN_PATH,
    module: bool = MODULE,
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
    """Run a training script on elastic nodes of this machine (torchrun's flags).

    Prints the master's address (for `flexjob agent --master`) when it starts, marks every
    output line with its node and rank ([worker-0/rank1]: ...), and stops the whole job
    within seconds of a node giving up, with a root-cause summary."""
    from flexjob.agent.process import configure_logging
    from flexjob.api.names import ENV_PREFLIGHT
    from flexjob.runner.config import parse_nnodes

    configure_logging(verbose)
    _check_option(script)
    try:
        lo, hi = parse_nnodes(nnodes)
        if standalone and (master is not None or hi > 1):
            raise ValueError("--standalone is one node with its own master: no --rdzv-endpoint")
        if start_nodes is not None and not lo <= start_nodes <= hi:
            raise ValueError(f"--start-nodes must be within --nnodes {lo}:{hi}, got {start_nodes}")
        if node_rank < 0:
            raise ValueError(f"--node-rank must be >= 0, got {node_rank}")
        torchrun_flags.check_backend(rdzv_backend)
        conf = torchrun_flags.parse_rdzv_conf(rdzv_conf)
        flags = {
            "last_call_timeout": last_call_timeout,
            "heartbeat_timeout": heartbeat_timeout,
            "stragglers": stragglers,
            "straggler_ratio": straggler_ratio,
            "straggler_window": straggler_window,
        }
        if master is not None:
            _no_master_flags(
                "with --master `flexjob run` starts no master",
                ("--rdzv-conf last_call_timeout", conf.last_call_timeout is not None),
                *((FLAGS[n].flags[0], _given(ctx, n)) for n in flags),
            )
            if plot is not None:  # the timeline is written by the master, in its job dir
                raise ValueError(
                    "--plot draws the timeline of the master `flexjob run` starts, and with "
                    "--master it starts none: plot that master's job dir (`flexjob plot DIR`)"
                )
        flags["last_call_timeout"] = conf.last_call_timeout or last_call_timeout
        opts = RunConfig(
            agent=_agent_config(
                (script, script_args, module and not run_path, nproc_per_node, conf),
                OutputConfig(log_dir=log_dir, redirects=redirects, tee=tee),
                job_name=rdzv_id,
                max_restarts=max_restarts,
                monitor_interval=monitor_interval,
                address=address,
                hang_timeout=hang_timeout,
            ),
            master=RUN_MASTER.with_overrides(
                job_name=rdzv_id,
                job_dir=job_dir,
                rendezvous__min_nodes=lo,
                rendezvous__max_nodes=hi,
                ps__num_ps=ps,
                **overrides(flags),
            ),
            join_master=master,
            start_nodes=start_nodes,
            node_rank=node_rank,
            progress=not no_progress,
            plot=plot,
            env={ENV_PREFLIGHT: "1"} if preflight else {},
        )
    except ValueError as exc:
        raise usage_error(exc) from None
    _check_target(script, module)
    from flexjob.runner.launcher import run_job

    raise typer.Exit(run_job(opts))


def _agent_config(
    target: tuple[str, list[str] | None, bool, str, torchrun_flags.RdzvConf],
    output: OutputConfig,
    **fields: Any,
) -> AgentConfig:
    """The ``AgentConfig`` of ``target`` (SCRIPT, its args, ``-m``, ``--nproc-per-node``,
    ``--rdzv-conf``) with ``output`` and the flags named as its ``fields``."""
    script, script_args, module, nproc, conf = target
    return AgentConfig(
        target=script,
        args=tuple(script_args or ()),
        module=module,
        nproc_per_node=torchrun_flags.parse_nproc(nproc),
        rendezvous_timeout=conf.join_timeout,
        output=output,
        **fields,
    )


def _given(ctx: typer.Context, parameter: str) -> bool:
    """Whether the user gave the command's ``parameter`` (on its command line or in its
    environment variable), its default's value included."""
    source = ctx.get_parameter_source(parameter)  # typer's own click: compared by name
    return source is not None and source.name in ("COMMANDLINE", "ENVIRONMENT")


def _no_master_flags(why: str, *flags: tuple[str, bool]) -> None:
    """A flag that tunes the job's master, given to a command that starts none (``agent``,
    ``run --master``), would be dropped: one given at all is an error."""
    for flag, given in flags:
        if given:
            raise ValueError(
                f"{flag} is a setting of the job's master, and {why}: give it to the master "
                "(`flexjob master`)"
            )


SPARE_DIR = typer.Option(
    None,
    "--spare-dir",
    help="Where warm spares wait [$FLEXJOB_SPARE_DIR, else flexjob-spares-UID in the temp dir].",
)


def agent(
    script: str | None = typer.Argument(None, help="Training script (or module with -m)."),
    script_args: list[str] = SCRIPT_ARGS,
    master: str | None = typer.Option(
        None,
        "--master",
        "--rdzv-endpoint",
        "--rdzv_endpoint",
        envvar="FLEXJOB_MASTER",
        help="HOST:PORT of the master [$FLEXJOB_MASTER].",
    ),
    node_id: str | None = typer.Option(
        None, "--node-id", help="Stable node id [the replica's name, else HOST-PID]."
    ),
    replica_index: int = typer.Option(
        agent_default("replica_index"), "--replica-index", envvar="FLEXJOB_REPLICA_INDEX"
    ),
    job_name: str = typer.Option(
        "job",
        "--job-name",
        "--rdzv-id",
        "--rdzv_id",
        envvar="FLEXJOB_JOB_NAME",
        callback=valid_path_part,
    ),
    nproc_per_node: str = AGENT_NPROC,
    max_restarts: int = AGENT_MAX_RESTARTS,
    monitor_interval: float = MONITOR,
    rdzv_backend: str = RDZV_BACKEND,
    rdzv_conf: str = RDZV_CONF,
    run_dir: str = typer.Option("", "--run-dir", help="Where worker status files go."),
    address: str = ADDRESS,
    log_dir: str = LOG_DIR,
    redirects: str = REDIRECTS,
    tee: str = TEE,
    hang_timeout: float = HANG_TIMEOUT,
    run_path: bool = RUN_PATH,
    module: bool = MODULE,
    spare: bool = typer.Option(
        False,
        "--spare",
        help="Start a warm spare: workers with torch imported wait in --spare-dir until a "
        "later `flexjob agent` hands them its node (no SCRIPT; --master is ignored).",
    ),
    spare_dir: str | None = SPARE_DIR,
    verbose: bool = typer.Option(False, "-v", "--verbose"),
) -> None:
    """Run one node of a job whose master is already running (exit 127 at once when the
    script is not there); a warm spare in --spare-dir with the same --nproc-per-node runs it
    if there is one. With --spare: become such a spare."""
    from flexjob.agent import spare as spares
    from flexjob.agent.process import configure_logging, run_node

    configure_logging(verbose)
    if spare:
        _spare(spares, script, nproc_per_node, spare_dir)
    if script is None or master is None:
        missing = "SCRIPT" if script is None else "--master (or $FLEXJOB_MASTER)"
        raise usage_error(f"{missing} is required (unless --spare)")
    _check_option(script)
    from flexjob.agent.config import default_node_id, default_replica_type

    try:
        torchrun_flags.check_backend(rdzv_backend)
        conf = torchrun_flags.parse_rdzv_conf(rdzv_conf)
        _no_master_flags(
            "`flexjob agent` joins a running master",
            ("--rdzv-conf last_call_timeout", conf.last_call_timeout is not None),
        )
        config = _agent_config(
            (script, script_args, module and not run_path, nproc_per_node, conf),
            OutputConfig(log_dir=log_dir, redirects=redirects, tee=tee),
            master=master,
            node_id=node_id or default_node_id(),
            replica_type=default_replica_type(),
            replica_index=replica_index,
            job_name=job_name,
            max_restarts=max_restarts,
            monitor_interval=monitor_interval,
            address=address,
            run_dir=run_dir,
            hang_timeout=hang_timeout,
        )
    except ValueError as exc:
        raise usage_error(exc) from None
    _check_target(script, module)
    raise typer.Exit(run_node(config, spares.spare_dir(spare_dir)))


def _spare(spares: Any, script: str | None, nproc: str, directory: str | None) -> None:
    """``flexjob agent --spare``: wait warm for a node, run it, exit with its code."""
    if script is not None:
        raise usage_error("--spare takes no SCRIPT (the node it runs brings one)")
    try:
        config = spares.SpareConfig(spares.spare_dir(directory), torchrun_flags.parse_nproc(nproc))
    except ValueError as exc:
        raise usage_error(exc) from None
    raise typer.Exit(spares.serve_spare(config))
