"""Guards every flexjob HTTP service installs (the server and the brain): a request body size
limit (413) and field-named messages for bad request bodies.

``BodySizeLimit`` is plain ASGI middleware: a declared ``Content-Length`` above the bound is
refused before anything is read, and a body streamed without one is read up to the bound and
refused as soon as it passes it, so a 64 MB upload never reaches the route. ``field_errors``
turns FastAPI's validation errors into ``{"field", "message"}`` pairs whose field is the JSON
path, and a body that is not JSON into ``body: invalid JSON at line L column C`` (never a byte
offset posing as a field). Not for authentication (``http_auth``).
"""

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from fastapi.exceptions import RequestValidationError

from flexjob.api.limits import MAX_HTTP_BODY_BYTES

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
#: Builds the 413 response of a service (an ASGI app) from a message: each service keeps its
#: own error body format.
Refusal = Callable[[str], ASGIApp]


class BodySizeLimit:
    """ASGI middleware refusing request bodies above ``max_bytes`` with ``refuse(message)``."""

    def __init__(self, app: ASGIApp, refuse: Refusal, max_bytes: int = MAX_HTTP_BODY_BYTES) -> None:
        self.app = app
        self.refuse = refuse
        self.max_bytes = max_bytes

    def _message(self) -> str:
        return f"request body too large: at most {self.max_bytes} bytes"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_bytes):
            await self.refuse(self._message())(scope, receive, send)
            return
        if declared is not None:  # the HTTP server delivers no more than declared
            await self.app(scope, receive, send)
            return
        body = bytearray()  # streamed without a length: read it up to the bound, then replay
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            body += message.get("body", b"")
            if len(body) > self.max_bytes:
                await self.refuse(self._message())(scope, receive, send)
                return
            if not message.get("more_body", False):
                break
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": bytes(body), "more_body": False}

        await self.app(scope, replay, send)


def field_errors(exc: RequestValidationError, body: bytes) -> list[dict[str, str]]:
    """One ``{"field": "a.b[0]", "message": ...}`` per problem of a request."""
    out = []
    for error in exc.errors():
        loc = tuple(error.get("loc", ()))
        if error.get("type") == "json_invalid":
            offset = loc[-1] if loc and isinstance(loc[-1], int) else len(body)
            line = body[:offset].count(b"\n") + 1
            column = offset - (body[:offset].rfind(b"\n") + 1) + 1
            reason = (error.get("ctx") or {}).get("error", "not JSON")
            message = f"invalid JSON at line {line} column {column}: {reason}"
            out.append({"field": "body", "message": message})
            continue
        out.append({"field": _path(loc), "message": str(error.get("msg", ""))})
    return out


def _path(loc: tuple[object, ...]) -> str:
    path = ""
    for part in loc[1:] if loc and loc[0] in ("body", "query", "path") else loc:
        path = (
            f"{path}[{part}]" if isinstance(part, int) else f"{path}.{part}" if path else str(part)
        )
    return path or "body"


def summary(errors: list[dict[str, str]]) -> str:
    """``field: message; field: message``."""
    return "; ".join(f"{e['field']}: {e['message']}" for e in errors) or "invalid request"
