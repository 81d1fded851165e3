"""``flexjob ps``: run one parameter-server replica of a job until stopped.

Defaults come from the replica's environment (``FLEXJOB_REPLICA_INDEX``, ``FLEXJOB_NUM_PS``,
``FLEXJOB_MASTER``, ``FLEXJOB_REPLICA_ADDRESS``), so the operator starts it with no flags.
Imports grpc and numpy only when the command runs. Not for training code (``flexjob.trainer``).
"""

import os

import typer

from flexjob.api.roles import PS_TYPE, command_of
from flexjob.cli.errors import usage_error


def register(app: typer.Typer) -> None:
    app.command(command_of(PS_TYPE))(ps)


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name, "")
    if not value:
        return default
    if not value.isdigit():
        raise typer.BadParameter(f"environment variable {name}={value!r} is not an integer")
    return int(value)


def ps(
    index: int | None = typer.Option(
        None, "--index", help="This PS's index [$FLEXJOB_REPLICA_INDEX]."
    ),
    num_ps: int | None = typer.Option(
        None, "--num-ps", help="Size of the PS set [$FLEXJOB_NUM_PS]."
    ),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to bind."),
    port: int | None = typer.Option(
        None, "--port", help="Port; 0 picks a free one [port of $FLEXJOB_REPLICA_ADDRESS, else 0]."
    ),
    master: str | None = typer.Option(
        None, "--master", help="Job master HOST:PORT [$FLEXJOB_MASTER]."
    ),
    advertise: str | None = typer.Option(
        None, "--advertise", help="Address published to the master [$FLEXJOB_REPLICA_ADDRESS]."
    ),
    checkpoint_dir: str | None = typer.Option(
        None,
        "--checkpoint-dir",
        help="Write partition checkpoints here and restore from them [$FLEXJOB_PS_CHECKPOINT_DIR].",
    ),
    checkpoint_interval: float | None = typer.Option(
        None,
        "--checkpoint-interval",
        help="Seconds between checkpoints [$FLEXJOB_PS_CHECKPOINT_INTERVAL, else 30].",
    ),
) -> None:
    """Serve one partition of a job's dense parameters and embedding tables."""
    import logging

    from flexjob.api import names
    from flexjob.api.names import ENV_REPLICA_ADDRESS
    from flexjob.observe import log_lines
    from flexjob.ps.main import PsConfig, run_ps

    log_lines.configure(logging.INFO, "%(asctime)s %(levelname)s %(name)s %(message)s")
    own = os.environ.get(ENV_REPLICA_ADDRESS, "")
    own_port = own.rpartition(":")[2]
    config = PsConfig(
        index=index if index is not None else _env_int(names.ENV_REPLICA_INDEX, 0),
        num_ps=num_ps if num_ps is not None else _env_int(names.ENV_NUM_PS, 1),
        host=host,
        port=port if port is not None else (int(own_port) if own_port.isdigit() else 0),
        master=master if master is not None else os.environ.get(names.ENV_MASTER, ""),
        advertise=advertise if advertise is not None else own,
        checkpoint_dir=checkpoint_dir
        if checkpoint_dir is not None
        else os.environ.get(names.ENV_PS_CHECKPOINT_DIR, ""),
        checkpoint_interval=checkpoint_interval
        if checkpoint_interval is not None
        else float(_env_int(names.ENV_PS_CHECKPOINT_INTERVAL, 30)),
    )
    if not config.checkpoint_interval > 0:
        raise typer.BadParameter(
            f"--checkpoint-interval must be > 0 seconds, got {config.checkpoint_interval}",
            param_hint="--checkpoint-interval",
        )
    if not 0 <= config.index < config.num_ps:
        raise typer.BadParameter(
            f"--index {config.index} must be in [0, --num-ps {config.num_ps})", param_hint="--index"
        )
    from flexjob.rpc.auth import InsecureBindError

    try:
        code = run_ps(config)
    except InsecureBindError as exc:
        raise usage_error(exc) from None
    raise typer.Exit(code)
