"""Create-or-replace a list of manifests through the Kubernetes API (``manifests install
--apply``), like a small ``kubectl apply`` without its three-way merge.

Each object is created; one that exists is replaced with the new body (keeping its
resourceVersion). Kinds are resolved by API discovery, so CRDs applied earlier in the same list
are usable later only after the API server serves them. Not a reconciler: it never deletes.
"""

from collections.abc import Iterator
from typing import Any

import kubernetes.client
import kubernetes.dynamic
from kubernetes.client.exceptions import ApiException

_dynamic: Any = kubernetes.dynamic  # no type hints in the client's dynamic module


def _describe(body: dict[str, Any]) -> str:
    meta = body.get("metadata") or {}
    where = f"{meta['namespace']}/" if meta.get("namespace") else ""
    return f"{body['kind']} {where}{meta.get('name', '')}"


def apply_manifests(
    configuration: kubernetes.client.Configuration, manifests: list[dict[str, Any]]
) -> Iterator[str]:
    """Apply ``manifests`` in order; yields one ``created``/``replaced`` line per object."""
    with kubernetes.client.ApiClient(configuration) as api_client:
        client = _dynamic.DynamicClient(api_client)
        for body in manifests:
            resource = client.resources.get(api_version=body["apiVersion"], kind=body["kind"])
            namespace = (body.get("metadata") or {}).get("namespace")
            try:
                resource.create(body=body, namespace=namespace)
                yield f"{_describe(body)} created"
            except ApiException as exc:
                if exc.status != 409:
                    raise
                name = body["metadata"]["name"]
                current = resource.get(name=name, namespace=namespace).to_dict()
                replacement = {**body, "metadata": {**body["metadata"]}}
                replacement["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
                resource.replace(body=replacement, namespace=namespace)
                yield f"{_describe(body)} replaced"
