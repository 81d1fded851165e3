"""Other projects' job kinds served on Kubernetes: DI Orchestrator's ``DIJob`` (v1alpha1,
v1alpha2 and v2alpha1) and its cluster-scoped ``AggregatorConfig``, ElasticDL's
``ElasticAIJob`` and DLRover's ``ElasticJob`` (``elastic.iml.github.io``: the same kind name
as flexjob's own in another group, so its webhook path names the project). Their CRDs,
which reader converts an object to the job model, and the object's status in its own shape.
Pure data and functions; the operator's handlers (``operator.kubernetes.foreign``) do the I/O.

The CRDs keep the documents as they are (``x-kubernetes-preserve-unknown-fields``): the
readers in ``api.readers`` own the formats, and the validating webhook checks them with the
same messages ``flexjob apply`` gives. A kind with several versions is one CRD with
conversion ``None``, so an object may be read under any served version: the reader is chosen
by the document's shape where the versions differ (DIJob v2 has ``spec.tasks``).
"""

from dataclasses import dataclass
from typing import Any

from flexjob.api.crd_body import age_column, crd_body, crd_version, phase_column
from flexjob.api.enums import JobPhase
from flexjob.api.job import ElasticJobStatus
from flexjob.api.readers import dijob, dlrover, elasticdl
from flexjob.api.readers.common import Reader

Body = dict[str, Any]


@dataclass(frozen=True, slots=True)
class ForeignKind:
    group: str
    versions: tuple[str, ...]
    kind: str
    plural: str
    short_names: tuple[str, ...] = ()
    namespaced: bool = True
    #: A job kind (run as a flexjob job); False for a companion such as AggregatorConfig.
    job: bool = True
    #: The project's name where the kind alone is not unique among flexjob's kinds.
    project: str = ""

    @property
    def crd_name(self) -> str:
        return f"{self.plural}.{self.group}"

    def api_versions(self) -> tuple[str, ...]:
        return tuple(f"{self.group}/{v}" for v in self.versions)


DIJOB = ForeignKind(dijob.GROUP, ("v1alpha1", "v1alpha2", "v2alpha1"), "DIJob", "dijobs", ("dij",))
AGGREGATOR_CONFIG = ForeignKind(
    dijob.GROUP,
    ("v1alpha1", "v1alpha2"),
    dijob.KIND_AGGREGATOR_CONFIG,
    "aggregatorconfigs",
    ("agconfig",),
    namespaced=False,
    job=False,
)
ELASTIC_AI_JOB = ForeignKind(
    elasticdl.GROUP, ("v1alpha1", "v1"), "ElasticAIJob", "elasticaijobs", ("eaijob",)
)
DLROVER_JOB = ForeignKind(
    dlrover.GROUP,
    tuple(v.split("/")[1] for v in dlrover.VERSIONS),
    "ElasticJob",
    "elasticjobs",
    project="dlrover",
)
FOREIGN_KINDS: tuple[ForeignKind, ...] = (DIJOB, AGGREGATOR_CONFIG, ELASTIC_AI_JOB, DLROVER_JOB)
#: The annotation on the ElasticJob the operator runs for a foreign object: ``plural.group``
#: of its source (whose status it writes back), and the hash of the converted spec it has.
SOURCE_ANNOTATION = "flexjob.dev/source"
SOURCE_SPEC_ANNOTATION = "flexjob.dev/source-spec"


def foreign_crd(kind: ForeignKind) -> Body:
    """The CRD of ``kind``: every version served, the last one stored, documents kept whole,
    the status subresource, and the phase as a printer column."""
    schema = {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
        "properties": {
            "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        },
    }
    columns = [phase_column(), age_column()] if kind.job else [age_column()]
    versions = [
        crd_version(version, schema, columns, storage=version == kind.versions[-1])
        for version in kind.versions
    ]
    return crd_body(
        kind.group,
        kind.kind,
        kind.plural,
        list(kind.short_names),
        versions,
        namespaced=kind.namespaced,
    )


def foreign_crds() -> list[Body]:
    return [foreign_crd(kind) for kind in FOREIGN_KINDS]


def source_reader(body: Body) -> Reader:
    """The reader of a foreign job object, by shape where its kind's versions differ."""
    if body.get("kind") == DIJOB.kind:
        v2 = "tasks" in (body.get("spec") or {})
        return dijob.READERS[0] if v2 else dijob.READERS[1]
    if str(body.get("apiVersion", "")).startswith(f"{DLROVER_JOB.group}/"):
        return dlrover.READERS[0]
    return elasticdl.READERS[0]


def as_read(body: Body) -> Body:
    """``body`` with the ``apiVersion`` its reader expects (the API server may serve it under
    another version of the same CRD), without its status."""
    reader = source_reader(body)
    version = body.get("apiVersion")
    if version not in reader.api_versions:
        version = reader.api_versions[-1]
    return {k: v for k, v in body.items() if k != "status"} | {"apiVersion": version}


# --- status in the source's own shape -----------------------------------------------------------
#: DI Orchestrator v1's phases (Created, Running, Succeeded, Failed, Unknown).
_DI_V1_PHASE = {
    JobPhase.PENDING: "Created",
    JobPhase.STARTING: "Created",
    JobPhase.RUNNING: "Running",
    JobPhase.RESTARTING: "Running",
    JobPhase.RESCHEDULING: "Running",
    JobPhase.SUCCEEDED: "Succeeded",
    JobPhase.FAILED: "Failed",
    JobPhase.UNKNOWN: "Unknown",
}
#: ElasticDL's phases (Pending, Running, Succeeded, Failed).
_EDL_PHASE = {
    JobPhase.PENDING: "Pending",
    JobPhase.STARTING: "Pending",
    JobPhase.SUCCEEDED: "Succeeded",
    JobPhase.FAILED: "Failed",
    JobPhase.UNKNOWN: "Pending",
}


def _conditions(status: ElasticJobStatus, phases: dict[JobPhase, str] | None) -> list[Body]:
    out = []
    for condition in status.conditions:
        wire = condition.model_dump(mode="json", by_alias=True, exclude_none=True)
        if phases is not None:
            wire["type"] = phases.get(condition.type, condition.type.value)
        out.append(wire)
    return out


def _counts(status: ElasticJobStatus, names: dict[str, str] | None = None) -> Body:
    return {
        (names or {}).get(t.value, t.value): s.model_dump(mode="json", by_alias=True)
        for t, s in status.replica_statuses.items()
    }


def source_status(body: Body, status: ElasticJobStatus) -> Body:
    """The foreign object's ``status`` for the job model's ``status``, in the kind's shape:
    DIJob v1 (``phase`` in v1's words, ``replicaStatus`` per role), DIJob v2 (``phase``,
    ``replicas``, ``readyReplicas``, ``restarts``), DLRover's ElasticJob (``phase``,
    ``replicaStatuses`` by flexjob's type names, which are DLRover's), ElasticAIJob (``phase``,
    ``replicaStatuses`` by ``Master``/``PS``/``Worker``)."""
    times = {"startTime": status.start_time, "completionTime": status.completion_time}
    times = {k: v for k, v in times.items() if v}
    reader = source_reader(body)
    if reader is dijob.READERS[1]:
        return {
            "phase": _DI_V1_PHASE[status.phase],
            "conditions": _conditions(status, _DI_V1_PHASE),
            "replicaStatus": _counts(status),
            **times,
        }
    if reader is dijob.READERS[0]:
        counts = status.replica_statuses.values()
        return {
            "phase": status.phase.value,
            "conditions": _conditions(status, None),
            "replicas": sum(s.active + s.pending for s in counts),
            "readyReplicas": sum(s.active for s in counts),
            "restarts": status.restart_count,
            **times,
        }
    if reader is dlrover.READERS[0]:
        return {
            "phase": status.phase.value,
            "conditions": _conditions(status, None),
            "replicaStatuses": _counts(status),
            **times,
        }
    aliases = {t.value: alias for t, alias in elasticdl.ALIASES.items()}
    return {
        "phase": _EDL_PHASE.get(status.phase, "Running"),
        "conditions": _conditions(status, None),
        "replicaStatuses": _counts(status, aliases),
        **times,
    }
