"""The Brain's HTTP service (FastAPI): persist metrics, optimize, read a job's metrics.

Routes, all JSON (camelCase):
  POST /api/v1/jobs/{job}/metrics     MetricsReport -> 204
  POST /api/v1/jobs/{job}/optimize    OptimizeRequest -> OptimizeResponse
  GET  /api/v1/jobs/{job}/metrics     -> JobMetrics
  GET  /api/v1/jobs                   -> list of job names
  POST /api/v1/cluster/nodes          ClusterReport -> 204
  GET  /api/v1/cluster/nodes          -> list of ClusterNodeReport
  GET  /api/v1/cluster/jobs           -> list of ClusterJobReport (the monitor's job status)
  GET  /healthz
  GET  /metrics                       Prometheus text format
``serve`` runs it with uvicorn on a socket it binds itself, so port 0 works; beyond loopback
only with a bearer token (``flexjob.rpc.http_auth``: every route but /healthz then needs it).
Request bodies are bounded and bad ones answered field by field (``flexjob.rpc.http_guards``).
Not for decisions.
"""

import logging
import socket
from collections.abc import Callable

from fastapi import FastAPI, HTTPException, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from sqlalchemy import Engine

from flexjob.api.errors import NotFoundError
from flexjob.api.names import ENV_BRAIN_TOKEN
from flexjob.brain.processor import OptimizeProcessor
from flexjob.brain.stats_store import BrainStore
from flexjob.observe import metrics
from flexjob.rpc import brain_messages as schemas
from flexjob.rpc.auth import check_bind
from flexjob.rpc.http_auth import BearerAuth
from flexjob.rpc.http_guards import BodySizeLimit, field_errors, summary

log = logging.getLogger(__name__)
PREFIX = "/api/v1"


def _refusal(status: int) -> "Callable[[str], JSONResponse]":
    def refuse(message: str) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
        return JSONResponse({"detail": message}, status_code=status, headers=headers)

    return refuse


def create_app(
    store: BrainStore, processor: OptimizeProcessor | None = None, token: str | None = None
) -> FastAPI:
    """The brain's app; with ``token`` every route but /healthz needs ``Bearer <token>``."""
    processor = processor or OptimizeProcessor(store)
    app = FastAPI(title="flexjob brain", version="1")
    app.add_middleware(BodySizeLimit, refuse=_refusal(413))
    if token:
        app.add_middleware(BearerAuth, token=token, refuse=_refusal(401))

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = field_errors(exc, await request.body())
        return JSONResponse({"detail": summary(errors), "errors": errors}, status_code=422)

    @app.get("/metrics")
    def prometheus() -> Response:
        """This process's Prometheus metrics (``observe.metrics``)."""
        return Response(metrics.render(), media_type=CONTENT_TYPE_LATEST)

    @app.get("/healthz")
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get(f"{PREFIX}/jobs")
    def list_jobs() -> list[str]:
        return store.job_names()

    @app.post(f"{PREFIX}/jobs/{{job:path}}/metrics", status_code=204)
    def persist_metrics(job: str, report: schemas.MetricsReport) -> Response:
        try:
            store.persist(job, report)
        except NotFoundError as exc:
            raise HTTPException(404, str(exc)) from None
        except ValueError as exc:
            raise HTTPException(422, str(exc)) from None
        return Response(status_code=204)

    @app.get(f"{PREFIX}/jobs/{{job:path}}/metrics", response_model=schemas.JobMetrics)
    def get_job_metrics(job: str) -> schemas.JobMetrics:
        try:
            return store.metrics(job)
        except NotFoundError as exc:
            raise HTTPException(404, str(exc)) from None

    @app.post(f"{PREFIX}/jobs/{{job:path}}/optimize", response_model=schemas.OptimizeResponse)
    def optimize(job: str, request: schemas.OptimizeRequest) -> schemas.OptimizeResponse:
        try:
            return processor.optimize(job, request.stage)
        except NotFoundError as exc:
            raise HTTPException(404, str(exc)) from None

    @app.post(f"{PREFIX}/cluster/nodes", status_code=204)
    def report_cluster(report: schemas.ClusterReport) -> Response:
        store.report_cluster(report)
        return Response(status_code=204)

    @app.get(f"{PREFIX}/cluster/nodes", response_model=list[schemas.ClusterNodeReport])
    def cluster_nodes() -> list[schemas.ClusterNodeReport]:
        return store.cluster_nodes()

    @app.get(f"{PREFIX}/cluster/jobs", response_model=list[schemas.ClusterJobReport])
    def cluster_jobs() -> list[schemas.ClusterJobReport]:
        return store.cluster_jobs()

    return app


def serve(
    engine: Engine,
    host: str = "127.0.0.1",
    port: int = 0,
    on_ready: Callable[[str], None] | None = None,
    token: str | None = None,
) -> None:
    """Serve the brain until interrupted; ``on_ready`` gets the base URL once bound. Beyond
    loopback only with ``token`` (``InsecureBindError``)."""
    import uvicorn

    check_bind(host, token, f"pass --token-file or set {ENV_BRAIN_TOKEN}")
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(2048)  # connections wait in the backlog until uvicorn accepts: ready now
    bound = sock.getsockname()[1]
    url = f"http://{'[' + host + ']' if ':' in host else host}:{bound}"
    app = create_app(BrainStore(engine), token=token)
    config = uvicorn.Config(app, log_level="warning", access_log=False)
    server = uvicorn.Server(config)
    if on_ready is not None:
        on_ready(url)
    log.info("brain serving on %s", url)
    server.run(sockets=[sock])
