"""The HTTP services' bearer-token middleware (the server and the brain both install it) and
the paths that stay open without a token.

The rule for where a service may listen (``check_bind``) and the token check are
``flexjob.rpc.auth`` (shared with the job master's gRPC port). Not for authorisation (every
holder of the token may do everything).
"""

from dataclasses import dataclass

from flexjob.rpc.auth import AUTHORIZATION, token_matches
from flexjob.rpc.http_guards import ASGIApp, Receive, Refusal, Scope, Send

OPEN_PATHS = frozenset({"/healthz"})
UNAUTHORISED = "missing or wrong bearer token"


@dataclass(eq=False)
class BearerAuth:
    """ASGI middleware: every request but ``open_paths`` must carry ``Authorization: Bearer
    <token>``; others get ``refuse(UNAUTHORISED)`` (a 401 in the service's own format)."""

    app: ASGIApp
    token: str
    refuse: Refusal
    open_paths: frozenset[str] = OPEN_PATHS
    #: A scope field whose presence means the request carries its own credential (a DI
    #: job's key, checked by the route: ``server.di_keys``).
    key_field: str | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        keyed = self.key_field is not None and self.key_field in scope
        if scope["type"] == "http" and scope.get("path") not in self.open_paths and not keyed:
            header = dict(scope.get("headers") or []).get(AUTHORIZATION.encode(), b"")
            if not token_matches(header.decode("latin-1"), self.token):
                await self.refuse(UNAUTHORISED)(scope, receive, send)
                return
        await self.app(scope, receive, send)
