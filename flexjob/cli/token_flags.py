"""The bearer-token options of the commands that serve (``flexjob server``, ``flexjob brain``).

A token is taken from a file (``--token-file``) or the environment only: a command line is
visible to every user of the machine (``ps``), so ``--token VALUE`` is refused with the two
ways that work. Not for checking a token (``rpc.auth``).
"""

import os
from pathlib import Path

import typer

from flexjob.cli.errors import usage_error
from flexjob.rpc.auth import read_token_file

TOKEN_ON_COMMAND_LINE = typer.Option(None, "--token", hidden=True)


def token_file_option(env_name: str) -> Path | None:
    """The ``--token-file`` option of a command whose token is also ``$env_name``."""
    return typer.Option(  # type: ignore[no-any-return]
        None,
        "--token-file",
        help=f"File holding the bearer token clients must send (required beyond loopback); "
        f"or set ${env_name}.",
    )


def resolve_token(
    on_command_line: str | None, token_file: Path | None, env_name: str
) -> str | None:
    """The token a serving command uses: from ``token_file``, else ``$env_name``; a token
    given on the command line is refused (usage error, exit 2)."""
    if on_command_line is not None:
        raise usage_error(
            "--token: a token on the command line is visible to every user (ps); "
            f"use --token-file FILE or set ${env_name}"
        )
    if token_file is not None:
        try:
            return read_token_file(token_file)
        except OSError as exc:
            raise usage_error(f"--token-file: cannot read {token_file}: {exc.strerror}") from None
    return os.environ.get(env_name, "").strip() or None
