"""Documents a test submits or stores, in the Kubernetes frame: ``apiVersion``, ``kind``,
``metadata`` (name and namespace) around a ``spec``."""

from typing import Any

#: The group/version of flexjob's own kinds (ElasticJob, ScalePlan).
FLEXJOB_API = "flexjob.dev/v1alpha1"


def manifest(
    kind: str,
    name: str,
    spec: dict[str, Any],
    *,
    api_version: str = FLEXJOB_API,
    namespace: str = "default",
) -> dict[str, Any]:
    """The document of a ``kind`` object ``namespace/name`` with ``spec``."""
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }
