"""DI Orchestrator v2 API (``/v2alpha1``): a job's replicas and profilings, by job id.

Job id: ``namespace.name.generation``. ``GET /v2alpha1/{job_id}/replicas`` lists replicas with
their type, index and ``host:port``; ``POST`` / ``DELETE`` with ``{"replicas": n}`` add or remove
``n`` replicas by changing ``status.replicas`` (preemptible jobs only, else 409; the operator
creates and deletes); ``POST /v2alpha1/{job_id}/profilings`` with ``{"data": {...}}`` merges
the data into ``status.profilings`` (JSON merge patch). Not for v1 clients (``v1alpha2``).
"""

from typing import Any

from fastapi import APIRouter, Path
from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.config import JsonDict

from flexjob.api import ReplicaPhase, ReplicaType
from flexjob.api.di_tasks import task_name
from flexjob.api.limits import MAX_PROFILINGS_DEPTH, check_merged_profilings, json_depth_problem
from flexjob.core.operator.status_patch import merge_patch
from flexjob.server.envelope import Envelope, ok
from flexjob.server.jobs import JobId, JobService, job_id_of, scalable_type, scale_counts
from flexjob.server.metrics import ServerMetrics

MAX_REPLICAS_PER_REQUEST = 10_000

JOB_ID = Path(
    description="namespace.name.generation, e.g. default.mnist.1",
    pattern=r"^[^.]+\..+\.[0-9]+$",
    max_length=400,
    examples=["default.mnist.1"],
)


class ReplicasRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{"replicas": 1}]})

    replicas: int = Field(ge=1, le=MAX_REPLICAS_PER_REQUEST, description="How many to add/remove.")
    type: ReplicaType | None = Field(
        None, description="Replica type to scale; default: worker, learner, collector or ps."
    )


#: What the Allocator reads from ``status.profilings`` (``scheduler.profilings``).
PROFILINGS_EXAMPLE: JsonDict = {
    "data": {
        "steps": [{"replicas": 2, "nodes": 1, "localBatch": 32, "stepTime": 0.21}],
        "localBatch": 32,
        "gradNoiseScale": 800.0,
    }
}


class ProfilingsRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [PROFILINGS_EXAMPLE]})

    data: dict[str, Any] = Field(description="Merged into status.profilings (null removes).")

    @field_validator("data")
    @classmethod
    def _bounded(cls, data: dict[str, Any]) -> dict[str, Any]:
        problem = json_depth_problem("data", data, MAX_PROFILINGS_DEPTH)
        if problem:
            raise ValueError(problem)
        return data


class ReplicaInfo(BaseModel):
    name: str
    type: ReplicaType
    index: int
    address: str | None = Field(description="host:port, when the replica has one")
    phase: ReplicaPhase
    node: str | None = None
    task: str | None = Field(None, description="the DIJob v2 task it belongs to, when named")


class ScaleResponse(BaseModel):
    job_id: str
    type: ReplicaType
    previous: int
    replicas: int


class ProfilingsResponse(BaseModel):
    job_id: str
    profilings: dict[str, Any]


def router(store: JobService, metrics: ServerMetrics) -> APIRouter:
    api = APIRouter(prefix="/v2alpha1", tags=["v2alpha1"])

    @api.get("/{job_id}/replicas", response_model=Envelope[list[ReplicaInfo]])
    def get_replicas(job_id: str = JOB_ID) -> Envelope[list[ReplicaInfo]]:
        """The job's replicas with ``host:port`` addresses."""
        job = store.get_by_id(JobId.parse(job_id))
        specs = job.spec.replica_specs
        infos = [
            ReplicaInfo(
                name=r.name,
                type=r.type,
                index=r.index,
                address=addr,
                phase=r.phase,
                node=r.node,
                task=task_name(specs[r.type], r.index) if r.type in specs else None,
            )
            for r, addr in store.replicas(job)
        ]
        return ok(infos)

    def _scale(job_id: str, body: ReplicasRequest, sign: int) -> Envelope[ScaleResponse]:
        ref = JobId.parse(job_id)
        job = store.get_by_id(ref, fresh=True)
        rtype = scalable_type(job, body.type)
        job, changes = scale_counts(store, ref.namespace, ref.name, {rtype: sign * body.replicas})
        before, after = changes[rtype]
        metrics.scale_requests.labels("v2alpha1", "up" if sign > 0 else "down").inc()
        return ok(ScaleResponse(job_id=job_id_of(job), type=rtype, previous=before, replicas=after))

    @api.post("/{job_id}/replicas", response_model=Envelope[ScaleResponse])
    def add_replicas(body: ReplicasRequest, job_id: str = JOB_ID) -> Envelope[ScaleResponse]:
        """Add ``replicas`` replicas (preemptible jobs only; 409 otherwise)."""
        return _scale(job_id, body, +1)

    @api.delete("/{job_id}/replicas", response_model=Envelope[ScaleResponse])
    def remove_replicas(body: ReplicasRequest, job_id: str = JOB_ID) -> Envelope[ScaleResponse]:
        """Remove ``replicas`` replicas (preemptible jobs only; 409 otherwise)."""
        return _scale(job_id, body, -1)

    @api.post("/{job_id}/profilings", response_model=Envelope[ProfilingsResponse])
    def post_profilings(
        body: ProfilingsRequest, job_id: str = JOB_ID
    ) -> Envelope[ProfilingsResponse]:
        """Merge ``data`` into ``status.profilings``."""
        ref = JobId.parse(job_id)
        current = store.get_by_id(ref, fresh=True)
        merged = merge_patch(current.status.profilings if current.status else {}, body.data)
        check_merged_profilings("data", merged)
        job = store.patch_status(ref.namespace, ref.name, {"profilings": body.data})
        metrics.profilings.inc()
        profilings = job.status.profilings if job.status else {}
        return ok(ProfilingsResponse(job_id=job_id_of(job), profilings=profilings))

    return api
