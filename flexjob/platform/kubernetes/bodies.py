"""Kubernetes bodies for flexjob objects and back: pods, headless services, events, CRs.

Pure functions over plain dicts (JSON as the API server speaks it); no client calls. The
platform (``platform.py``) sends what these build and reads what the server answers through
them. Not for defaults or validation (``flexjob.api``) and not for decisions (``flexjob.core``).
"""

import socket
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from flexjob.api import (
    ElasticJob,
    ReplicaPhase,
    ReplicaType,
    ScalePlan,
)
from flexjob.api.names import (
    API_VERSION,
    KIND_JOB,
    LABEL_JOB_NAME,
    LABEL_REPLICA_INDEX,
    LABEL_REPLICA_TYPE,
)
from flexjob.api.roles import DEFAULT_TYPE
from flexjob.core.operator.actions import EventType
from flexjob.core.replicas import Replica, ReplicaRequest, Service, ServiceRequest

Body = dict[str, Any]

#: Node label the allocator's placement is pinned with (``status.allocation`` → nodeSelector).
HOSTNAME_LABEL = "kubernetes.io/hostname"
#: Who reports job events.
COMPONENT = "flexjob-operator"
#: Annotation on a service naming the replica it addresses.
ANNOTATION_REPLICA = "flexjob.dev/replica"
#: Status keys that belong to kopf (progress, handler results), not to the flexjob model.
FOREIGN_STATUS_KEYS = ("kopf",)


def parse_time(value: str | None) -> datetime | None:
    if not value:
        return None
    parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def format_time(value: datetime) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def format_micro_time(value: datetime) -> str:
    """Kubernetes ``MicroTime`` (``eventTime``): microseconds keep events of one second ordered."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def owner_reference(kind: str, name: str, uid: str, api_version: str = API_VERSION) -> Body:
    """A controller reference: the owner's deletion removes the dependent (garbage collection)."""
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": name,
        "uid": uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _clean(body: Mapping[str, Any]) -> Body:
    """A custom-object body the pydantic models accept: no kopf status keys."""
    result = dict(body)
    status = result.get("status")
    if isinstance(status, dict):
        status = {k: v for k, v in status.items() if k not in FOREIGN_STATUS_KEYS}
        result["status"] = status or None
    return result


def job_from_body(body: Mapping[str, Any]) -> ElasticJob:
    return ElasticJob.model_validate(_clean(body))


def plan_from_body(body: Mapping[str, Any]) -> ScalePlan:
    return ScalePlan.model_validate(_clean(body))


def pod_body(request: ReplicaRequest, owner: Body | None) -> Body:
    """The pod for a replica: the rendered template plus name, labels, owner and placement."""
    template = request.template.to_wire()
    meta = dict(template.get("metadata") or {})
    spec = dict(template.get("spec") or {})
    meta.update(name=request.name, namespace=request.namespace)
    meta["labels"] = {**(meta.get("labels") or {}), **request.labels}
    if owner is not None:
        meta["ownerReferences"] = [owner]
    spec.setdefault("restartPolicy", "Never")
    spec["containers"] = [_quantities_as_strings(c) for c in spec.get("containers") or []]
    if request.node:
        spec["nodeSelector"] = {**(spec.get("nodeSelector") or {}), HOSTNAME_LABEL: request.node}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def _quantities_as_strings(container: Mapping[str, Any]) -> Body:
    """The container with its resource quantities as strings (``cpu: 6`` → ``"6"``), as the
    API's ``Quantity`` is written and the client validates."""
    resources = container.get("resources") or {}
    if not resources:
        return dict(container)
    quantities = {
        key: {name: str(value) for name, value in (resources.get(key) or {}).items()}
        for key in ("requests", "limits")
        if key in resources
    }
    return {**container, "resources": {**resources, **quantities}}


def _terminated(status: Mapping[str, Any]) -> Mapping[str, Any]:
    """The first container's ``state.terminated`` (empty while none has ended)."""
    for container in status.get("containerStatuses") or []:
        terminated = (container.get("state") or {}).get("terminated")
        if terminated:
            return dict(terminated)
    return {}


def _exit_code(status: Mapping[str, Any]) -> int | None:
    code = _terminated(status).get("exitCode")
    return None if code is None else int(code)


def replica_from_pod(pod: Mapping[str, Any]) -> Replica:
    meta, status = pod.get("metadata") or {}, pod.get("status") or {}
    labels = dict(meta.get("labels") or {})
    phase_value = status.get("phase") or ReplicaPhase.PENDING.value
    try:
        phase = ReplicaPhase(phase_value)
    except ValueError:
        phase = ReplicaPhase.UNKNOWN
    return Replica(
        namespace=meta.get("namespace", ""),
        job=labels.get(LABEL_JOB_NAME, ""),
        name=meta["name"],
        type=ReplicaType(labels.get(LABEL_REPLICA_TYPE, DEFAULT_TYPE.value)),
        index=int(labels.get(LABEL_REPLICA_INDEX, "0")),
        phase=phase,
        uid=meta.get("uid", ""),
        exit_code=_exit_code(status),
        address=status.get("podIP"),
        node=(pod.get("spec") or {}).get("nodeName"),
        created=parse_time(meta.get("creationTimestamp")),
        labels=labels,
        deleting=bool(meta.get("deletionTimestamp")),
        message=str(_terminated(status).get("message") or "").strip(),
        reason=str(_terminated(status).get("reason") or ""),
    )


def service_body(request: ServiceRequest, owner: Body | None) -> Body:
    """A headless service selecting exactly one replica by job, type and index labels."""
    labels = {
        **request.labels,
        LABEL_JOB_NAME: request.job,
        LABEL_REPLICA_TYPE: request.type.value,
        LABEL_REPLICA_INDEX: str(request.index),
    }
    meta: Body = {
        "name": request.name,
        "namespace": request.namespace,
        "labels": labels,
        "annotations": {ANNOTATION_REPLICA: request.replica},
    }
    if owner is not None:
        meta["ownerReferences"] = [owner]
    selector = {k: labels[k] for k in (LABEL_JOB_NAME, LABEL_REPLICA_TYPE, LABEL_REPLICA_INDEX)}
    port = {"name": "flexjob", "port": request.port, "targetPort": request.port}
    spec = {"clusterIP": "None", "selector": selector, "ports": [port]}
    return {"apiVersion": "v1", "kind": "Service", "metadata": meta, "spec": spec}


def service_from_body(body: Mapping[str, Any]) -> Service:
    meta, spec = body.get("metadata") or {}, body.get("spec") or {}
    labels = meta.get("labels") or {}
    ports = spec.get("ports") or [{}]
    port = ports[0].get("port", 0)
    namespace = meta.get("namespace", "")
    replica = (meta.get("annotations") or {}).get(ANNOTATION_REPLICA, meta["name"])
    return Service(
        namespace=namespace,
        job=labels.get(LABEL_JOB_NAME, ""),
        name=meta["name"],
        replica=replica,
        address=f"{meta['name']}.{namespace}.svc:{port}",
    )


def event_body(
    namespace: str,
    job: str,
    uid: str | None,
    reason: str,
    message: str,
    type_: EventType,
    now: datetime,
) -> Body:
    """A core/v1 Event about the job, as ``kubectl describe elasticjob`` shows them."""
    stamp = format_time(now)
    involved = {"apiVersion": API_VERSION, "kind": KIND_JOB, "name": job, "namespace": namespace}
    if uid:
        involved["uid"] = uid
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"generateName": f"{job}.", "namespace": namespace},
        "involvedObject": involved,
        "reason": reason,
        "message": message,
        "type": str(type_),
        "source": {"component": COMPONENT},
        "reportingComponent": COMPONENT,
        "reportingInstance": socket.gethostname(),
        "action": reason,
        "eventTime": format_micro_time(now),
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    }


def sort_key(body: Mapping[str, Any]) -> tuple[datetime, str]:
    """Oldest first: creation time, then name (the API server keeps whole seconds)."""
    meta = body.get("metadata") or {}
    created = parse_time(meta.get("creationTimestamp")) or datetime.min.replace(tzinfo=UTC)
    return created, meta.get("name") or ""


def event_time(body: Mapping[str, Any]) -> datetime:
    """When an event happened: ``eventTime`` (microseconds) if set, else ``lastTimestamp``."""
    stamp = body.get("eventTime") or body.get("lastTimestamp")
    return parse_time(stamp) or datetime.min.replace(tzinfo=UTC)
