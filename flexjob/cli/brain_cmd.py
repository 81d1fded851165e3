"""``flexjob brain``: run the Brain service (SQLite in FLEXJOB_HOME by default, or PostgreSQL)."""

from pathlib import Path

import typer

from flexjob.api.names import DEFAULT_HOME, ENV_BRAIN_DB, ENV_BRAIN_TOKEN, ENV_HOME
from flexjob.cli.errors import usage_error
from flexjob.cli.token_flags import TOKEN_ON_COMMAND_LINE, resolve_token, token_file_option


def register(app: typer.Typer) -> None:
    app.command("brain")(brain)


def brain(
    db: str = typer.Option(
        "",
        "--db",
        envvar=ENV_BRAIN_DB,
        show_envvar=False,
        help="Database URL: sqlite:///path or postgresql+psycopg://user:pw@host/db. "
        f"Default: ${ENV_BRAIN_DB}, else an SQLite file in ${ENV_HOME} ({DEFAULT_HOME}). Prefer "
        "the environment variable for a URL with a password (a command line is visible).",
    ),
    host: str = typer.Option("127.0.0.1", help="Address to listen on."),
    port: int = typer.Option(50100, help="Port to listen on (0: any free port)."),
    token_file: Path | None = token_file_option(ENV_BRAIN_TOKEN),
    token_argument: str | None = TOKEN_ON_COMMAND_LINE,
    log_level: str = typer.Option("INFO", help="Python log level."),
) -> None:
    """Run the Brain: it stores jobs' runtime stats and answers resource-plan requests."""
    token = resolve_token(token_argument, token_file, ENV_BRAIN_TOKEN)
    import logging

    from flexjob.brain.app import serve
    from flexjob.brain.db.engine import DatabaseUrlError, normalize_url, open_database
    from flexjob.rpc.auth import InsecureBindError

    logging.basicConfig(level=log_level.upper(), format="%(levelname)s %(name)s %(message)s")
    try:
        url = normalize_url(db or None)
    except DatabaseUrlError as exc:
        raise usage_error(exc) from None
    engine = open_database(url)

    def ready(base_url: str) -> None:
        typer.echo(f"flexjob brain listening on {base_url} (db {engine.url.render_as_string()})")

    try:
        serve(engine, host, port, on_ready=ready, token=token)
    except InsecureBindError as exc:
        raise usage_error(exc) from None
    finally:
        engine.dispose()
