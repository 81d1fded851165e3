"""The typed client of the Brain service, used by masters and the cluster monitor.

Every method sends or returns a ``flexjob.rpc.brain_messages`` model (or an ``api.ResourcePlan``);
failures raise ``api.errors`` errors (``UnavailableError`` when unreachable,
``NotFoundError`` for a job the brain never saw). An ``httpx.Client`` can be passed in (tests
pass FastAPI's ``TestClient``). Requests carry the brain's bearer token (``token``, default
``$FLEXJOB_BRAIN_TOKEN``) when there is one. Not for retries policy: callers decide.
"""

from __future__ import annotations

import os
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self
from urllib.parse import quote

from flexjob.api import ResourcePlan
from flexjob.api.errors import FlexjobError, NotFoundError, UnavailableError
from flexjob.api.extras import import_extra
from flexjob.api.names import ENV_BRAIN_TOKEN
from flexjob.core.planner import OptimizeStage
from flexjob.rpc import brain_messages as schemas
from flexjob.rpc.auth import AUTHORIZATION, bearer

if TYPE_CHECKING:  # httpx is the brain extra's: imported once a client is made
    import httpx

PREFIX = "/api/v1"


def _q(job: str) -> str:
    return quote(job, safe="")


class BrainClient:
    def __init__(
        self,
        url: str,
        timeout: float = 10.0,
        http: httpx.Client | None = None,
        token: str | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        self._httpx = import_extra("httpx", "brain", "the brain's client")
        token = token if token is not None else os.environ.get(ENV_BRAIN_TOKEN, "")
        headers = {AUTHORIZATION: bearer(token)} if token else {}
        self._http = http or self._httpx.Client(base_url=self.url, timeout=timeout, headers=headers)
        self._http.headers.update(headers)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        try:
            response = self._http.request(method, path, json=body)
        except self._httpx.HTTPError as exc:
            raise UnavailableError(f"brain at {self.url} unreachable: {exc}") from exc
        if response.status_code == 404:
            raise NotFoundError(response.json().get("detail", path))
        if response.status_code >= 400:
            raise FlexjobError(f"brain {method} {path}: {response.status_code} {response.text}")
        return response.json() if response.content else None

    def healthy(self) -> bool:
        try:
            return bool(self._call("GET", "/healthz") == {"status": "ok"})
        except FlexjobError:
            return False

    def persist_metrics(self, job: str, report: schemas.MetricsReport) -> None:
        self._call("POST", f"{PREFIX}/jobs/{_q(job)}/metrics", report.to_wire())

    def optimize(self, job: str, stage: OptimizeStage) -> ResourcePlan:
        return self.optimize_detail(job, stage).plan

    def optimize_detail(self, job: str, stage: OptimizeStage) -> schemas.OptimizeResponse:
        body = schemas.OptimizeRequest(stage=stage).to_wire()
        data = self._call("POST", f"{PREFIX}/jobs/{_q(job)}/optimize", body)
        return schemas.OptimizeResponse.model_validate(data)

    def get_job_metrics(self, job: str) -> schemas.JobMetrics:
        return schemas.JobMetrics.model_validate(
            self._call("GET", f"{PREFIX}/jobs/{_q(job)}/metrics")
        )

    def list_jobs(self) -> list[str]:
        return list(self._call("GET", f"{PREFIX}/jobs"))

    def report_cluster(self, report: schemas.ClusterReport) -> None:
        self._call("POST", f"{PREFIX}/cluster/nodes", report.to_wire())

    def cluster_nodes(self) -> list[schemas.ClusterNodeReport]:
        data = self._call("GET", f"{PREFIX}/cluster/nodes")
        return [schemas.ClusterNodeReport.model_validate(n) for n in data]

    def cluster_jobs(self) -> list[schemas.ClusterJobReport]:
        data = self._call("GET", f"{PREFIX}/cluster/jobs")
        return [schemas.ClusterJobReport.model_validate(j) for j in data]
