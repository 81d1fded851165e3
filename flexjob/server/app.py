"""The HTTP server's FastAPI application: ``create_app(platform, token)``.

For: wiring the two API versions, ``/healthz``, ``/metrics``, bearer-token auth and error
mapping (every error is JSON in the envelope, with a message naming the field) and the request
body size limit (``guards``). OpenAPI is at ``/openapi.json``, docs at ``/docs``. Not for:
listening (``flexjob.cli.server_cmd``) or job logic (``jobs``).
"""

import logging
import time
from collections.abc import Awaitable, Callable

from fastapi import FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException

from flexjob import __version__
from flexjob.api.errors import (
    ConflictError,
    FlexjobError,
    InvalidSpecError,
    NotFoundError,
    UnavailableError,
)
from flexjob.platform.contract import Platform
from flexjob.rpc.http_auth import BearerAuth
from flexjob.rpc.http_guards import BodySizeLimit, field_errors, summary
from flexjob.server import v1alpha2, v2alpha1
from flexjob.server.di_keys import DI_KEY, DiKeyPaths
from flexjob.server.envelope import Envelope
from flexjob.server.jobs import JobService
from flexjob.server.json_body import JsonByDefault
from flexjob.server.metrics import CONTENT_TYPE_LATEST, ServerMetrics
from flexjob.server.read_cache import DEFAULT_TTL, ReadCache

log = logging.getLogger(__name__)


class Health(BaseModel):
    status: str = "ok"
    platform: str


def _error(status: int, message: str, data: object = None) -> JSONResponse:
    body = Envelope[object](success=False, code=status, message=message, data=data)
    return JSONResponse(body.model_dump(mode="json"), status_code=status)


def _unauthorised(message: str) -> JSONResponse:
    response = _error(401, message)
    response.headers["WWW-Authenticate"] = "Bearer"
    return response


#: The HTTP status of each kind of error (``api.errors``); the first match wins.
HTTP_STATUS: tuple[tuple[type[FlexjobError], int], ...] = (
    (NotFoundError, 404),
    (ConflictError, 409),
    (InvalidSpecError, 400),
    (UnavailableError, 503),
)


def http_status(exc: FlexjobError) -> int:
    return next((code for kind, code in HTTP_STATUS if isinstance(exc, kind)), 500)


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(FlexjobError)
    async def _flexjob_error(_: Request, exc: FlexjobError) -> JSONResponse:
        status = http_status(exc)
        if status == 503:
            log.warning("platform error: %s", exc)
            return _error(status, f"platform error: {exc}")
        return _error(status, str(exc))

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = field_errors(exc, await request.body())
        return _error(422, summary(errors), errors)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        return _error(exc.status_code, str(exc.detail))


def create_app(
    platform: Platform,
    token: str | None = None,
    di_address_wait: float = v1alpha2.DEFAULT_ADDRESS_WAIT,
    cache_ttl: float = DEFAULT_TTL,
) -> FastAPI:
    """The server app over ``platform``; with ``token``, every route but /healthz needs it;
    DI's POSTs wait up to ``di_address_wait`` seconds for their replicas' addresses; reads are
    kept ``cache_ttl`` seconds (``server.read_cache``; 0: every request reads the platform)."""
    app = FastAPI(
        title="flexjob server",
        version=__version__,
        description="Change the size of elastic jobs, report profilings, list replicas.",
    )
    metrics = ServerMetrics()
    store = JobService(platform, ReadCache(cache_ttl, metrics.platform_reads))
    app.state.platform = platform
    app.state.metrics = metrics
    _install_error_handlers(app)
    app.add_middleware(JsonByDefault)
    app.add_middleware(BodySizeLimit, refuse=lambda message: _error(413, message))
    if token:
        app.add_middleware(BearerAuth, token=token, refuse=_unauthorised, key_field=DI_KEY)
        app.add_middleware(DiKeyPaths, versions=v1alpha2.VERSIONS)  # outside the token check

    @app.middleware("http")
    async def _metrics(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        start = time.perf_counter()
        response = await call_next(request)
        route = request.scope.get("route")
        name = getattr(route, "path", "unmatched")
        metrics.requests.labels(request.method, name, str(response.status_code)).inc()
        metrics.latency.labels(name).observe(time.perf_counter() - start)
        return response

    @app.get("/healthz", response_model=Health, tags=["health"])
    def healthz() -> Health:
        """Liveness: the server answers (no platform call)."""
        return Health(platform=platform.name)

    @app.get(
        "/metrics",
        tags=["health"],
        response_class=Response,
        responses={200: {"content": {CONTENT_TYPE_LATEST: {}}}},
    )
    def prometheus() -> Response:
        """Prometheus metrics in the text exposition format."""
        return Response(metrics.render(), media_type=CONTENT_TYPE_LATEST)

    app.include_router(v2alpha1.router(store, metrics))
    for version in v1alpha2.VERSIONS:
        app.include_router(v1alpha2.router(store, metrics, version, token, di_address_wait))
    return app
