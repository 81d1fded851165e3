"""What kubectl asks the emulator besides objects: API discovery, OpenAPI, server-side tables.

- Discovery (``/api``, ``/api/v1``, ``/apis``, ``/apis/G``, ``/apis/G/V``) lists the declared
  resources; a resource defined by a stored CustomResourceDefinition gets that CRD's short
  names and categories (``kubectl get ej``).
- ``/openapi/v3`` has one document per group/version: a CRD's kinds with the CRD's schema,
  other kinds with an open one; every kind's PATCH takes ``fieldValidation``, so kubectl
  validates on the server (no OpenAPI v2, which kubectl would want as protobuf).
- A list or get that asks for ``as=Table`` gets a ``meta.k8s.io/v1`` Table: Name, then the
  CRD's ``additionalPrinterColumns`` (simple ``.a.b.c`` JSONPaths; ``date`` columns as an age
  such as ``42s``), else Name and Age.

Pure functions over declared kinds and stored bodies; no I/O.
"""

import datetime
from collections.abc import Iterable
from typing import Any

from tests.support.k8s_store import Body, ResourceKind

#: The short names the API server gives its own resources.
BUILTIN_SHORT_NAMES = {
    "configmaps": ["cm"],
    "customresourcedefinitions": ["crd", "crds"],
    "deployments": ["deploy"],
    "endpoints": ["ep"],
    "events": ["ev"],
    "namespaces": ["ns"],
    "nodes": ["no"],
    "pods": ["po"],
    "serviceaccounts": ["sa"],
    "services": ["svc"],
    "statefulsets": ["sts"],
}
OPENAPI_V2_PROTOBUF = "application/octet-stream"
_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


def _names(crd: Body | None) -> Body:
    return ((crd or {}).get("spec") or {}).get("names") or {}


def resource_list(group_version: str, kinds: Iterable[ResourceKind], crds: dict[str, Body]) -> Body:
    """``APIResourceList`` of one group/version (``v1`` for the core group)."""
    resources = []
    for kind in kinds:
        names = _names(crds.get(f"{kind.plural}.{kind.group}"))
        entry = {
            "name": kind.plural,
            "singularName": kind.kind.lower(),
            "namespaced": kind.namespaced,
            "kind": kind.kind,
            "verbs": _VERBS,
            "shortNames": names.get("shortNames")
            or list(kind.short_names)
            or BUILTIN_SHORT_NAMES.get(kind.plural, []),
            "categories": names.get("categories") or [],
        }
        resources.append(entry)
        if kind.status_subresource:
            status = {"name": f"{kind.plural}/status", "verbs": ["get", "patch", "update"]}
            resources.append({**entry, **status, "shortNames": [], "categories": []})
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": resources,
    }


def _group(name: str, versions: list[str]) -> Body:
    listed = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": name,
        "versions": listed,
        "preferredVersion": listed[0],
    }


def discovery(path: str, kinds: Iterable[ResourceKind], crds: dict[str, Body]) -> Body | None:
    """The discovery document at ``path``, None when ``path`` is not a discovery path."""
    kinds = list(kinds)
    parts = [p for p in path.split("/") if p]
    groups: dict[str, list[str]] = {}
    for kind in kinds:
        if kind.group and kind.version not in groups.setdefault(kind.group, []):
            groups[kind.group].append(kind.version)
    if parts == ["api"]:
        cidr = {"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}
        return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [cidr]}
    if parts == ["api", "v1"]:
        return resource_list("v1", [k for k in kinds if not k.group], crds)
    if parts == ["apis"]:
        listed = [_group(g, v) for g, v in sorted(groups.items())]
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": listed}
    if len(parts) == 2 and parts[0] == "apis" and parts[1] in groups:
        return _group(parts[1], groups[parts[1]])
    if len(parts) == 3 and parts[0] == "apis" and parts[2] in groups.get(parts[1], []):
        chosen = [k for k in kinds if (k.group, k.version) == (parts[1], parts[2])]
        return resource_list(f"{parts[1]}/{parts[2]}", chosen, crds)
    if parts == ["openapi", "v3"]:
        listed = [("api/v1", "")] + [(f"apis/{g}/{v}", g) for g, vs in groups.items() for v in vs]
        found = {p: {"serverRelativeURL": f"/openapi/v3/{p}"} for p, _ in listed}
        return {"paths": found}
    if parts[:2] == ["openapi", "v3"]:
        return openapi(parts[2:], kinds, crds)
    return None


def _schema(kind: ResourceKind, crd: Body | None) -> Body:
    """A kind's OpenAPI v3 schema: its CRD's, else anything goes (no client-side checks)."""
    versions = ((crd or {}).get("spec") or {}).get("versions") or []
    schema = next(
        (
            (v.get("schema") or {}).get("openAPIV3Schema")
            for v in versions
            if v["name"] == kind.version
        ),
        None,
    ) or {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    gvk = {"group": kind.group, "version": kind.version, "kind": kind.kind}
    return {**schema, "x-kubernetes-group-version-kind": [gvk]}


def openapi(parts: list[str], kinds: list[ResourceKind], crds: dict[str, Body]) -> Body | None:
    """The OpenAPI v3 document of one group/version (``api/v1`` or ``apis/G/V``)."""
    if parts == ["api", "v1"]:
        group, version = "", "v1"
    elif len(parts) == 3 and parts[0] == "apis":
        group, version = parts[1], parts[2]
    else:
        return None
    chosen = [k for k in kinds if (k.group, k.version) == (group, version)]
    schemas = {
        f"{k.group or 'core'}.{k.version}.{k.kind}": _schema(k, crds.get(f"{k.plural}.{k.group}"))
        for k in chosen
    }
    info = {"title": "flexjob Kubernetes emulator", "version": version}
    paths = {_item_path(k): {"patch": _patch_operation(k)} for k in chosen}
    return {"openapi": "3.0.0", "info": info, "paths": paths, "components": {"schemas": schemas}}


def _item_path(kind: ResourceKind) -> str:
    prefix = f"/apis/{kind.group}/{kind.version}" if kind.group else "/api/v1"
    scope = "/namespaces/{namespace}" if kind.namespaced else ""
    return f"{prefix}{scope}/{kind.plural}/{{name}}"


def _patch_operation(kind: ResourceKind) -> Body:
    """A PATCH that takes ``fieldValidation``: kubectl then leaves validation to the server
    (the emulator checks nothing itself; the admission webhooks do)."""
    gvk = {"group": kind.group, "version": kind.version, "kind": kind.kind}
    parameter = {"name": "fieldValidation", "in": "query", "schema": {"type": "string"}}
    return {
        "x-kubernetes-action": "patch",
        "x-kubernetes-group-version-kind": gvk,
        "parameters": [parameter],
        "responses": {"200": {"description": "OK"}},
    }


def _dig(body: Body, json_path: str) -> Any:
    value: Any = body
    for part in json_path.strip(".").split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _age(stamp: str | None, now: datetime.datetime) -> str:
    if not stamp:
        return "<unknown>"
    then = datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    seconds = max(0, int((now - then).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def wants_table(accept: str) -> bool:
    return "as=Table" in accept


def table(items: list[Body], crd: Body | None, resource_version: str, include_object: str) -> Body:
    """A ``meta.k8s.io/v1`` Table of ``items`` (see module doc)."""
    now = datetime.datetime.now(tz=datetime.UTC)
    versions = ((crd or {}).get("spec") or {}).get("versions") or [{}]
    columns = versions[0].get("additionalPrinterColumns") or [
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}
    ]
    definitions = [
        {"name": "Name", "type": "string", "format": "name", "description": "", "priority": 0}
    ]
    definitions += [
        {
            "name": c["name"],
            "type": c.get("type", "string"),
            "format": "",
            "description": "",
            "priority": 0,
        }
        for c in columns
    ]
    rows = []
    for item in items:
        cells: list[Any] = [item["metadata"]["name"]]
        for column in columns:
            value = _dig(item, column["jsonPath"])
            cells.append(
                _age(value, now)
                if column.get("type") == "date"
                else ("" if value is None else value)
            )
        partial = {
            "kind": "PartialObjectMetadata",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": item["metadata"],
        }
        rows.append({"cells": cells, "object": item if include_object == "Object" else partial})
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": resource_version},
        "columnDefinitions": definitions,
        "rows": rows,
    }
