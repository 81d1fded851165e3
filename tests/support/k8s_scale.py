"""The emulator's scale subresource (``autoscaling/v1`` ``Scale``), as the API server serves it
for a CRD that declares one: read from, and a PUT or PATCH of ``spec.replicas`` written to, the
CRD's ``specReplicasPath``; ``status.replicas`` and ``status.selector`` from its
``statusReplicasPath`` and ``labelSelectorPath``. Not for routing (``k8s_emulator``) nor storing
(``k8s_store``)."""

from typing import Any

from tests.support.k8s_store import Body, ObjectStore, ResourceKind, StoreError


def _path(paths: dict[str, str], key: str) -> list[str]:
    return paths.get(key, "").lstrip(".").split(".")


def _at(body: Body, path: list[str]) -> Any:
    node: Any = body
    for key in path:
        node = node.get(key) if isinstance(node, dict) else None
    return node


def scale(
    store: ObjectStore,
    kind: ResourceKind,
    namespace: str | None,
    name: str,
    method: str,
    data: Any,
    content_type: str,
) -> Body:
    """The object's ``Scale``, after writing a PUT's or PATCH's ``spec.replicas``."""
    spec_path = _path(dict(kind.scale), "specReplicasPath")
    if method in ("PUT", "PATCH"):
        current = scale_of(store, kind, namespace, name)
        new = data or {} if method == "PUT" else store.patched(current, data, content_type)
        replicas = (new.get("spec") or {}).get("replicas")
        if not isinstance(replicas, int) or replicas < 0:
            raise StoreError(422, "Invalid", "spec.replicas: must be an integer >= 0")
        patch: Body = {}
        node = patch
        for key in spec_path[:-1]:
            node = node.setdefault(key, {})
        node[spec_path[-1]] = replicas
        store.patch(kind, namespace, name, patch, "application/merge-patch+json", "")
    return scale_of(store, kind, namespace, name)


def scale_of(store: ObjectStore, kind: ResourceKind, namespace: str | None, name: str) -> Body:
    """The stored object's ``Scale``."""
    paths = dict(kind.scale)
    body = store.get(kind, namespace, name)
    selector = _at(body, _path(paths, "labelSelectorPath"))
    meta = body["metadata"]
    return {
        "apiVersion": "autoscaling/v1",
        "kind": "Scale",
        "metadata": {
            k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion") if k in meta
        },
        "spec": {"replicas": _at(body, _path(paths, "specReplicasPath")) or 0},
        "status": {
            "replicas": _at(body, _path(paths, "statusReplicasPath")) or 0,
            **({"selector": selector} if selector else {}),
        },
    }
