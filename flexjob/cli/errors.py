"""How a command refuses bad input: ``error: <what is wrong>`` on stderr and exit status 2.

For: a flag, a setting or the environment that cannot work (``raise usage_error(exc) from
None``). Not for a job's own failure (exit 1, the job commands' ``_fail``).
"""

import typer


def usage_error(message: object) -> typer.Exit:
    """Print ``error: message`` to stderr; returns the ``typer.Exit(2)`` to raise."""
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(2)
