"""CustomResourceDefinitions (apiextensions.k8s.io/v1) generated from the job models.

The pydantic JSON schema is made structural, as Kubernetes requires: every ``$ref`` is inlined,
``X | None`` becomes ``X``, literals become one-value enums, maps keyed by replica type list the
types as properties, quantities are int-or-string, and pod templates and other open objects
keep unknown fields. Defaults are left to the mutating webhook (``api.defaults``), so the schema
carries none. ``structural_problems`` (in ``api.crd_check``) checks the result. No I/O.
"""

import json
from typing import Any

from pydantic import BaseModel

from flexjob.api.crd_body import age_column, crd_body, crd_version, phase_column, printer_column
from flexjob.api.enums import ReplicaType
from flexjob.api.foreign_kinds import foreign_crds
from flexjob.api.job import ElasticJob
from flexjob.api.names import (
    GROUP,
    KIND_JOB,
    KIND_SCALE_PLAN,
    PLURAL_JOB,
    PLURAL_SCALE_PLAN,
    VERSION,
)
from flexjob.api.scaleplan import ScalePlan

#: Models kept as opaque objects: Kubernetes owns their schema.
OPAQUE = frozenset({"PodTemplateSpec"})
#: Keywords of pydantic's schema that a CRD schema leaves out.
_DROPPED = frozenset({"title", "default", "$defs", "propertyNames"})
_PRESERVE = "x-kubernetes-preserve-unknown-fields"
_INT_OR_STRING = "x-kubernetes-int-or-string"


def _merge(node: dict[str, Any], resolved: dict[str, Any]) -> dict[str, Any]:
    """``resolved`` with the outer node's description, which wins."""
    out = dict(resolved)
    if "description" in node:
        out["description"] = node["description"]
    return out


def _structural(node: Any, defs: dict[str, Any]) -> Any:
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        if name in OPAQUE:
            return _merge(node, {"type": "object", _PRESERVE: True})
        return _merge(node, _structural(defs[name], defs))
    if "anyOf" in node:
        members = [m for m in node["anyOf"] if m.get("type") != "null"]
        if len(members) == 1:
            return _merge(node, _structural(members[0], defs))
        if {m.get("type") for m in members} <= {"string", "integer", "number"}:
            return _merge(node, {_INT_OR_STRING: True})
        raise ValueError(f"no structural form for anyOf {members}")
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _DROPPED:
            continue
        if key == "const":
            out["enum"] = [value]
        elif key == "properties":
            out[key] = {k: _structural(v, defs) for k, v in value.items()}
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            out[key] = _structural(value, defs)
        else:
            out[key] = value
    if out.get("type") == "object":
        out = _object(node, out, defs)
    return out


def _object(node: dict[str, Any], out: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    extra = out.get("additionalProperties")
    keys = node.get("propertyNames", {}).get("$ref")
    if keys is not None and isinstance(extra, dict):  # a map keyed by an enum
        names = defs[keys.rsplit("/", 1)[-1]]["enum"]
        del out["additionalProperties"]
        out["properties"] = {name: extra for name in names}
    elif extra is True:  # open: a dict[str, Any] or a model that keeps unknown fields
        del out["additionalProperties"]
        out[_PRESERVE] = True
    elif extra is False:
        del out["additionalProperties"]
    return out


def openapi_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The structural openAPIV3Schema of a custom resource model."""
    schema = model.model_json_schema(by_alias=True)
    out: dict[str, Any] = _structural(schema, schema.get("$defs", {}))
    props = out["properties"]
    props["apiVersion"] = {"type": "string"}
    props["kind"] = {"type": "string"}
    props["metadata"] = {"type": "object"}
    out.pop("required", None)
    out["required"] = ["spec"]
    unshared: dict[str, Any] = json.loads(json.dumps(out))  # no shared nodes (no YAML anchors)
    return unshared


#: The ElasticJob's scale subresource (``kubectl scale ej/NAME --replicas N``, an HPA): the
#: count of its workers, the type a job scales (``api.roles.scaling_target``), as Kubeflow's
#: PyTorchJob scales its Worker replicas; the workers' pods' label selector (which an HPA
#: reads) is in their replica status, as PyTorchJob's is.
JOB_SCALE = {
    "specReplicasPath": f".spec.replicaSpecs.{ReplicaType.WORKER.value}.replicas",
    "statusReplicasPath": f".status.replicaStatuses.{ReplicaType.WORKER.value}.active",
    "labelSelectorPath": f".status.replicaStatuses.{ReplicaType.WORKER.value}.selector",
}


def _crd(
    model: type[BaseModel],
    kind: str,
    plural: str,
    short_names: list[str],
    columns: list[dict[str, str]],
    scale: dict[str, str] | None = None,
) -> dict[str, Any]:
    version = crd_version(VERSION, openapi_schema(model), columns, scale=scale)
    return crd_body(GROUP, kind, plural, short_names, [version], categories=["flexjob"])


def job_crd() -> dict[str, Any]:
    workers = printer_column("Workers", "integer", ".status.replicaStatuses.worker.active")
    columns = [phase_column(), workers, age_column()]
    return _crd(ElasticJob, KIND_JOB, PLURAL_JOB, ["ej"], columns, scale=JOB_SCALE)


def scale_plan_crd() -> dict[str, Any]:
    job = printer_column("Job", "string", ".spec.ownerJob")
    columns = [job, phase_column(), age_column()]
    return _crd(ScalePlan, KIND_SCALE_PLAN, PLURAL_SCALE_PLAN, ["sp"], columns)


def crds() -> list[dict[str, Any]]:
    """Every CRD flexjob installs, in install order: its own, then the foreign job kinds the
    operator serves (``api.foreign_kinds``)."""
    return [job_crd(), scale_plan_crd(), *foreign_crds()]
