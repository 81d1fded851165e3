"""The body of a CustomResourceDefinition, for flexjob's own kinds (``api.crd``) and for the
foreign job kinds the operator serves (``api.foreign_kinds``).

Not for schemas: each caller gives the OpenAPI schema of its versions.
"""

from typing import Any


def printer_column(name: str, kind: str, path: str) -> dict[str, str]:
    """A ``kubectl get`` column: ``name``, of OpenAPI type ``kind``, showing ``path``."""
    return {"name": name, "type": kind, "jsonPath": path}


def phase_column() -> dict[str, str]:
    return printer_column("Phase", "string", ".status.phase")


def age_column() -> dict[str, str]:
    return printer_column("Age", "date", ".metadata.creationTimestamp")


def crd_version(
    name: str,
    schema: dict[str, Any],
    columns: list[dict[str, str]],
    *,
    storage: bool = True,
    scale: dict[str, str] | None = None,
) -> dict[str, Any]:
    """One served version of a CRD, with the status subresource (and the scale subresource
    when ``scale`` gives its ``specReplicasPath`` and ``statusReplicasPath``)."""
    subresources: dict[str, Any] = {"status": {}}
    if scale is not None:
        subresources["scale"] = scale
    return {
        "name": name,
        "served": True,
        "storage": storage,
        "schema": {"openAPIV3Schema": schema},
        "subresources": subresources,
        "additionalPrinterColumns": columns,
    }


def crd_body(
    group: str,
    kind: str,
    plural: str,
    short_names: list[str],
    versions: list[dict[str, Any]],
    *,
    namespaced: bool = True,
    categories: list[str] | None = None,
) -> dict[str, Any]:
    """The CRD of ``kind`` (``plural.group``) serving ``versions`` (``crd_version``)."""
    names: dict[str, Any] = {
        "kind": kind,
        "listKind": f"{kind}List",
        "plural": plural,
        "singular": kind.lower(),
        "shortNames": short_names,
    }
    if categories is not None:
        names["categories"] = categories
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced" if namespaced else "Cluster",
            "names": names,
            "versions": versions,
        },
    }
