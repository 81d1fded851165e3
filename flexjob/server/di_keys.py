"""DI-engine's client on a server with a token: the job's key in the URL path.

DI-engine's ``OperatorServer`` sends no ``Authorization`` header, so a server that requires a
token (any server listening beyond loopback) would refuse every DI role. Instead the operator
gives a DI job's roles the server's URL with the job's key (``rpc.auth.di_server_url``:
``<url>/di/<key>``; the key, an HMAC of ``namespace/job`` under the token, also goes in front
of ``KUBERNETES_SERVER_API_VERSION``, the part of the URL DI's client keeps). ``DiKeyPaths``
turns ``/di/<key>/<v1 version>/...`` into ``/<v1 version>/...`` and keeps the key in the
request scope (``DI_KEY``); the bearer-token check lets such a request through, and the v1 API
answers it only for the job the key belongs to (``key_allows``). Other APIs cannot be reached
with a key.
"""

from collections.abc import Sequence

from flexjob.api import ElasticJob
from flexjob.rpc.auth import DI_KEY_PREFIX, di_key_matches
from flexjob.rpc.http_guards import ASGIApp, Receive, Scope, Send

#: Where ``DiKeyPaths`` keeps a request's DI job key in the ASGI scope.
DI_KEY = "flexjob.di_key"


class DiKeyPaths:
    """ASGI middleware: ``/di/<key>/<version>/rest`` → ``/<version>/rest`` for the DI v1
    ``versions``, with the key in ``scope[DI_KEY]``; any other path is left alone."""

    def __init__(self, app: ASGIApp, versions: Sequence[str]) -> None:
        self.app = app
        self.versions = frozenset(versions)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            parts = str(scope.get("path", "")).split("/", 4)
            keyed = len(parts) >= 5 and parts[1] == DI_KEY_PREFIX and bool(parts[2])
            if keyed and parts[3] in self.versions:
                path = "/" + "/".join(parts[3:])
                scope = {**scope, "path": path, "raw_path": path.encode(), DI_KEY: parts[2]}
        await self.app(scope, receive, send)


def key_allows(key: str | None, token: str | None, job: ElasticJob) -> bool:
    """Whether a request may act on ``job``: one without a key passed the bearer check (or the
    server has no token); one with a key only for the job it was made for."""
    if key is None or token is None:
        return key is None
    return di_key_matches(key, token, job.namespace, job.name)
