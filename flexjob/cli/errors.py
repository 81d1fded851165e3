"""How a command refuses bad input: ``error: <what is wrong>`` on stderr and a usage exit status.

For: a flag, a setting or the environment that cannot work (``raise usage_error(exc) from
None``); a job or namespace name given as an argument or option (``valid_name``, a typer
callback: the one check of ``api.name_rules`` on every command). Not for a job's own failure
(exit 1, the job commands' ``_fail``). The status is 2, as click and torchrun's argparse exit,
except for the kubectl-like job commands (``get``, ``describe``, ``logs``, ``scale``,
``delete``, ``apply``, ...), which exit 1 as kubectl does: they pass ``KUBECTL_USAGE_EXIT`` and
are registered with ``cls=KubectlCommand`` so that click's own usage errors (an unknown flag, a
missing argument, a name refused by ``valid_name``) exit 1 there too.
"""

from typing import Any

import typer
from typer._click.core import Context
from typer._click.exceptions import UsageError  # typer vendors click: its errors are these
from typer.core import TyperCommand

from flexjob.api.name_rules import name_problem, path_part_problem

#: click's and argparse's (torchrun's) exit status for a usage error.
USAGE_EXIT = 2
#: kubectl's exit status for a usage error.
KUBECTL_USAGE_EXIT = 1


def usage_error(message: object, code: int = USAGE_EXIT) -> typer.Exit:
    """Print ``error: message`` to stderr; returns the ``typer.Exit(code)`` to raise."""
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


class KubectlCommand(TyperCommand):
    """A command whose usage errors exit ``KUBECTL_USAGE_EXIT``, as kubectl's do."""

    def parse_args(self, ctx: Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except UsageError as exc:
            exc.exit_code = KUBECTL_USAGE_EXIT
            raise

    def invoke(self, ctx: Context) -> Any:
        try:
            return super().invoke(ctx)
        except UsageError as exc:  # a parameter's type refused its value
            exc.exit_code = KUBECTL_USAGE_EXIT
            raise


def _checked(value: str | None, problem: str | None) -> str | None:
    if problem:
        raise typer.BadParameter(problem)
    return value


def valid_name(value: str | None) -> str | None:
    """A typer callback for a job, namespace or replica name: the name, or a usage error
    naming the option and the rule. ``None`` (an option left out) passes."""
    return _checked(value, None if value is None else name_problem(value))


def valid_path_part(value: str | None) -> str | None:
    """A typer callback for a name that becomes one path part (``flexjob run --job-name``)."""
    return _checked(value, None if value is None else path_part_problem(value))


def valid_names(values: list[str] | None) -> list[str] | None:
    """``valid_name`` for a repeatable option or argument."""
    for value in values or ():
        valid_name(value)
    return values
