"""The ``flexjob`` command: one Typer app; each command group lives in its own module.

Each module listed in ``COMMAND_MODULES`` exposes ``register(app)``. Modules import heavy
dependencies (torch, kopf, grpc) inside their command functions so that ``flexjob --help``
stays fast. A process started with one of the ``PROCESS_COMMANDS`` (the job processes that
``flexjob run`` and the operator start: run, agent, master, ps) loads only that command's
module, so a job's processes skip the rest of the CLI (the pydantic job models among it).
"""

import importlib
import sys
from collections.abc import Sequence

import typer

from flexjob import __version__
from flexjob.api.roles import MASTER_TYPE, PS_TYPE, command_of
from flexjob.cli.apps import new_app
from flexjob.cli.errors import usage_error

app = new_app(
    name="flexjob",
    help="Elastic distributed deep-learning training: run, submit and manage elastic jobs.",
    no_args_is_help=True,
    add_completion=True,  # flexjob --install-completion [bash|zsh|fish|powershell]
    pretty_exceptions_enable=False,
)

COMMAND_MODULES: tuple[str, ...] = (
    "spec_cmds",
    "cluster_cmds",
    "manifests_app",
    "job_cmds",
    "log_cmds",
    "operator_cmd",
    "simulate_cmd",
    "server_cmd",
    "allocator_cmd",
    "master_cmd",
    "ps_cmd",
    "brain_cmd",
    "monitor_cmd",
    "run_cmd",
    "timeline_cmds",
)

#: Commands that start a job's processes → the one module that registers each.
PROCESS_COMMANDS: dict[str, str] = {
    "run": "run_cmd",
    "agent": "run_cmd",
    command_of(MASTER_TYPE): "master_cmd",
    command_of(PS_TYPE): "ps_cmd",
}


def command_modules(argv: Sequence[str]) -> tuple[str, ...]:
    """The modules to load for the command line ``argv``: only the process command's own
    module when ``argv[1]`` names one, else every module."""
    module = PROCESS_COMMANDS.get(argv[1]) if len(argv) > 1 else None
    return (module,) if module else COMMAND_MODULES


def _version(value: bool) -> None:
    if value:
        typer.echo(f"flexjob {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """flexjob runs training jobs whose workers can die, join and leave while training goes on.

    Settings come from a command's flags, then environment variables, then
    ~/.config/flexjob/config.yaml ($FLEXJOB_CONFIG), then defaults.
    """
    from flexjob.client.config import ConfigError, apply_config

    try:
        apply_config()
    except ConfigError as exc:
        raise usage_error(exc) from None


for _name in command_modules(sys.argv):
    importlib.import_module(f"flexjob.cli.{_name}").register(app)
