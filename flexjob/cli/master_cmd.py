"""``flexjob master``: run one job's training master (rendezvous, shards, stats) until stopped.

Imports the master (and grpc / torch) only when the command runs, so ``flexjob --help`` stays
fast. Not for submitting jobs.
"""

from pathlib import Path

import typer

from flexjob.api.enums import StragglerPolicy
from flexjob.api.roles import MASTER_TYPE, command_of
from flexjob.cli.errors import usage_error
from flexjob.cli.master_flags import master_flag, overrides


def register(app: typer.Typer) -> None:
    app.command(command_of(MASTER_TYPE))(master)


def master(
    job: Path | None = typer.Option(
        None, "--job", help="Job YAML (ElasticJob, or any format `flexjob` reads)."
    ),
    config: Path | None = typer.Option(
        None, "--config", help="MasterConfig JSON (what spawn_master writes)."
    ),
    port: int | None = typer.Option(None, "--port", help="RPC port; 0 picks a free one."),
    host: str | None = typer.Option(None, "--host", help="Address to bind [127.0.0.1]."),
    job_dir: Path | None = typer.Option(
        None, "--job-dir", help="Where state and master.addr are written."
    ),
    heartbeat_timeout: float | None = master_flag("heartbeat_timeout"),
    last_call_timeout: float | None = master_flag("last_call_timeout"),
    slow_shard_timeout: float | None = master_flag("slow_shard_timeout"),
    stragglers: StragglerPolicy | None = master_flag("stragglers"),
    straggler_ratio: float | None = master_flag("straggler_ratio"),
    straggler_window: float | None = master_flag("straggler_window"),
    advertise_host: str | None = typer.Option(
        None, "--advertise-host", help="Host name clients use to reach this master."
    ),
    replica_pending_timeout: float | None = master_flag("replica_pending_timeout"),
    cpu: int | None = typer.Option(
        None, "--cpu", help="Run the master on this one CPU only [any]."
    ),
    no_store: bool = typer.Option(
        False, "--no-store", help="Do not host the torch TCPStore (rank 0's agent does)."
    ),
    scale_plan_platform: str | None = typer.Option(
        None,
        "--scale-plan-platform",
        help="Where ScalePlans go: local | kubernetes [files in the job dir].",
    ),
) -> None:
    """Run the training master of one job.

    Without --job/--config the config is read from $FLEXJOB_MASTER_CONFIG (JSON; what the
    operator sets for the job master it adds); without --port the port of $FLEXJOB_MASTER is
    bound."""
    import os

    from flexjob.core.training.master_config import MasterConfig
    from flexjob.master.process import (
        configure_logging,
        confine_to_cpu,
        exit_now,
        serve_until_stopped,
    )

    configure_logging()
    from flexjob.api import names

    config_env = os.environ.get(names.ENV_MASTER_CONFIG)
    if (job is not None and config is not None) or (
        job is None and config is None and not config_env
    ):
        raise typer.BadParameter(
            f"give exactly one of --job FILE or --config FILE (or ${names.ENV_MASTER_CONFIG})"
        )
    own_host, own_port = _own_address(os.environ.get(names.ENV_MASTER, ""))
    try:
        if job is not None:
            from flexjob.api.load import load_job  # the readers of every job format: only here

            base = MasterConfig.from_job(load_job(job))
        elif config is None:
            assert config_env is not None
            base = MasterConfig.from_json(config_env)
        else:
            assert config is not None
            base = MasterConfig.from_json(config.read_text())
        cfg = base.with_overrides(
            port=port if port is not None else own_port,
            host=host,
            job_dir=str(job_dir) if job_dir else None,
            host_store=False if no_store else None,
            advertise_host=advertise_host or own_host,
            scale_plan_platform=scale_plan_platform,
            cpu=cpu,
            **overrides(
                {
                    "heartbeat_timeout": heartbeat_timeout,
                    "last_call_timeout": last_call_timeout,
                    "slow_shard_timeout": slow_shard_timeout,
                    "replica_pending_timeout": replica_pending_timeout,
                    "stragglers": stragglers,
                    "straggler_ratio": straggler_ratio,
                    "straggler_window": straggler_window,
                }
            ),
        )
        confine_to_cpu(cfg.cpu)  # before the master starts its threads
    except (ValueError, OSError) as exc:
        raise usage_error(exc) from None
    from flexjob.rpc.auth import InsecureBindError

    try:
        code = serve_until_stopped(cfg)
    except InsecureBindError as exc:
        raise usage_error(exc) from None
    exit_now(code)


def _own_address(address: str) -> tuple[str | None, int | None]:
    """Host and port of ``host:port`` (the master's own ``FLEXJOB_MASTER``); Nones if unset."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        return None, None
    return host or None, int(port)
