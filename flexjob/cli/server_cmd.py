"""``flexjob server``: serve the replica HTTP API (v2alpha1, v1alpha2, /healthz, /metrics).

Listens on 127.0.0.1 by default; any other address needs a bearer token (``--token-file`` or
``FLEXJOB_SERVER_TOKEN``; never on the command line), and the command refuses to start
without one. OpenAPI is served at
``/openapi.json``.
"""

from pathlib import Path

import typer

from flexjob.api.names import ENV_SERVER_TOKEN
from flexjob.cli.errors import usage_error
from flexjob.cli.token_flags import TOKEN_ON_COMMAND_LINE, resolve_token, token_file_option
from flexjob.server.read_cache import DEFAULT_TTL


def _server(
    host: str = typer.Option("127.0.0.1", help="Address to listen on."),
    port: int = typer.Option(8080, min=0, max=65535, help="Port to listen on (0: any free)."),
    token_file: Path | None = token_file_option(ENV_SERVER_TOKEN),
    token_argument: str | None = TOKEN_ON_COMMAND_LINE,
    platform: str | None = typer.Option(
        None, help="Platform holding the jobs: local or kubernetes (default $FLEXJOB_PLATFORM)."
    ),
    log_level: str = typer.Option("info", help="uvicorn log level."),
    cache_ttl: float = typer.Option(
        DEFAULT_TTL,
        min=0.0,
        max=60.0,
        help="Seconds a platform read is kept to answer requests (0: none); the server's own "
        "writes drop it at once.",
    ),
) -> None:
    """Serve the HTTP API that scales jobs and receives profilings."""
    from flexjob.rpc.auth import InsecureBindError, check_bind

    token = resolve_token(token_argument, token_file, ENV_SERVER_TOKEN)
    try:
        check_bind(host, token)
    except InsecureBindError as exc:
        raise usage_error(exc) from None

    import uvicorn

    from flexjob.platform.registry import open_platform
    from flexjob.server.app import create_app

    try:
        backend = open_platform(platform)
    except ValueError as exc:
        raise usage_error(f"--platform: {exc}") from None
    try:
        uvicorn.run(
            create_app(backend, token, cache_ttl=cache_ttl),
            host=host,
            port=port,
            log_level=log_level,
        )
    finally:
        backend.close()


def register(app: typer.Typer) -> None:
    app.command("server")(_server)
