"""How a command refuses bad input: ``error: <what is wrong>`` on stderr and exit status 2.

For: a flag, a setting or the environment that cannot work (``raise usage_error(exc) from
None``); a job or namespace name given as an argument or option (``valid_name``, a typer
callback: the one check of ``api.name_rules`` on every command). Not for a job's own failure
(exit 1, the job commands' ``_fail``).
"""

import typer

from flexjob.api.name_rules import name_problem, path_part_problem


def usage_error(message: object) -> typer.Exit:
    """Print ``error: message`` to stderr; returns the ``typer.Exit(2)`` to raise."""
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(2)


def _checked(value: str | None, problem: str | None) -> str | None:
    if problem:
        raise typer.BadParameter(problem)
    return value


def valid_name(value: str | None) -> str | None:
    """A typer callback for a job, namespace or replica name: the name, or a usage error
    (exit 2) naming the option and the rule. ``None`` (an option left out) passes."""
    return _checked(value, None if value is None else name_problem(value))


def valid_path_part(value: str | None) -> str | None:
    """A typer callback for a name that becomes one path part (``flexjob run --job-name``)."""
    return _checked(value, None if value is None else path_part_problem(value))


def valid_names(values: list[str] | None) -> list[str] | None:
    """``valid_name`` for a repeatable option or argument."""
    for value in values or ():
        valid_name(value)
    return values
