"""Read request bodies sent without a ``content-type`` as JSON.

For: DI-engine's own client (``OperatorServer`` in di-engine 0.5.3), which sends
``json.dumps(body)`` with no ``content-type`` header; FastAPI would answer 422. A body that
declares its type is left alone.
"""

from starlette.types import ASGIApp, Receive, Scope, Send

_JSON = (b"content-type", b"application/json")


class JsonByDefault:
    """ASGI middleware: a request without a ``content-type`` header gets ``application/json``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = list(scope.get("headers", ()))
            if not any(name.lower() == b"content-type" for name, _ in headers):
                scope = {**scope, "headers": [*headers, _JSON]}
        await self.app(scope, receive, send)
