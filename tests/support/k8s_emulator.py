"""A stateful Kubernetes API emulator for tests: kmock's scaffold plus a real object store.

Stock ``kmock.KubernetesEmulator`` (0.8) cannot host a kopf operator or the official client:
it has no resourceVersion/uid/generation/creationTimestamp, ignores label and field
selectors, does not take the namespace from the URL, answers creation with 200, has no
generateName, PUT, delete-collection or watch ``timeoutSeconds``, and serves no namespaces.
``K8sEmulator`` keeps kmock's discovery endpoints and error rendering (``KubernetesScaffold``)
and serves the declared resources from ``ObjectStore`` (``tests/support/k8s_store.py``):
create (201), get, list, watch (resume from a resourceVersion, selectors, server timeout),
merge/JSON patch, PUT, the status subresource, pod logs (``tailLines``), delete with
finalizers, delete-collection and ownerReference garbage collection.

Requests for declared resources always go to the store: kmock's DSL reactions (``kmock[...] <<``)
apply only to other paths. Creates and updates go through the registered admission webhooks
first (``k8s_admission``). Not for production and not a conformance server: see ``k8s_store``
for what it leaves out.
"""

import asyncio
import bisect
import contextlib
import copy
import json
import time
from collections.abc import AsyncIterator, Mapping
from typing import Any, NamedTuple

import aiohttp.web
import attrs
import kmock
from kmock._internal import rendering

from tests.support import k8s_discovery
from tests.support.k8s_admission import ENDPOINTS, MUTATING, VALIDATING, admit
from tests.support.k8s_scale import scale
from tests.support.k8s_store import (
    Body,
    ObjectStore,
    ResourceKind,
    StoreError,
    WatchEvent,
    field_selector_matches,
    label_selector_matches,
)

BUILTIN_KINDS: tuple[ResourceKind, ...] = (
    ResourceKind("", "v1", "namespaces", "Namespace", namespaced=False, status_subresource=True),
    ResourceKind("", "v1", "pods", "Pod", status_subresource=True),
    ResourceKind("", "v1", "services", "Service", status_subresource=True),
    ResourceKind("", "v1", "events", "Event"),
    ResourceKind("", "v1", "serviceaccounts", "ServiceAccount"),
    ResourceKind("", "v1", "secrets", "Secret"),
    ResourceKind(
        "", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", status_subresource=True
    ),
    ResourceKind("", "v1", "nodes", "Node", namespaced=False, status_subresource=True),
    ResourceKind(
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        namespaced=False,
        status_subresource=True,
    ),
    MUTATING,
    VALIDATING,
    ENDPOINTS,
    ResourceKind("", "v1", "configmaps", "ConfigMap"),
    ResourceKind("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy"),
    ResourceKind("apps", "v1", "deployments", "Deployment", status_subresource=True),
    ResourceKind("apps", "v1", "statefulsets", "StatefulSet", status_subresource=True),
    ResourceKind("rbac.authorization.k8s.io", "v1", "roles", "Role"),
    ResourceKind("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding"),
    ResourceKind(
        "rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", namespaced=False
    ),
    ResourceKind(
        "rbac.authorization.k8s.io",
        "v1",
        "clusterrolebindings",
        "ClusterRoleBinding",
        namespaced=False,
    ),
)
_VERBS = {"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}


class Addressed(NamedTuple):
    """The declared resource a request's path addresses."""

    kind: ResourceKind
    namespace: str | None
    name: str | None
    subresource: str


def _parse_path(path: str) -> tuple[str, str, str | None, str, str | None, str] | None:
    """``/api[s]/...`` → (group, version, namespace, plural, name, subresource), else None."""
    parts = [p for p in path.split("/") if p]
    if len(parts) >= 3 and parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    elif len(parts) >= 4 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    namespace = None
    if len(rest) >= 3 and rest[0] == "namespaces":
        namespace, rest = rest[1], rest[2:]
    plural, name = rest[0], rest[1] if len(rest) > 1 else None
    return group, version, namespace, plural, name, "/".join(rest[2:])


def _grace_period(request: rendering.Request) -> float | None:
    """``gracePeriodSeconds`` of a delete: the query parameter or the DeleteOptions body."""
    value = request.params.get("gracePeriodSeconds")
    if value is None and isinstance(request.data, dict):
        value = request.data.get("gracePeriodSeconds")
    return None if value is None else float(value)


def _status_body(error: StoreError) -> Body:
    return {
        "apiVersion": "v1",
        "kind": "Status",
        "metadata": {},
        "status": "Failure",
        "code": error.status,
        "reason": error.reason,
        "message": error.message,
    }


@attrs.define(kw_only=True)
class K8sEmulator(kmock.KubernetesScaffold):
    """kmock's Kubernetes scaffold serving declared resources from an in-memory store.

    Use as ``async with K8sEmulator() as emulator, kmock.Server(emulator) as server:``;
    ``declare()`` custom resources, read ``emulator.store`` for assertions.
    """

    store: ObjectStore = attrs.field(factory=ObjectStore, init=False)
    _kinds: dict[tuple[str, str, str], ResourceKind] = attrs.field(factory=dict, init=False)
    _changed: asyncio.Condition = attrs.field(factory=asyncio.Condition, init=False)

    def __attrs_post_init__(self) -> None:
        super().__attrs_post_init__()
        for kind in BUILTIN_KINDS:
            self.declare(kind)
        self.store.create(
            self._kinds["", "v1", "namespaces"], None, {"metadata": {"name": "default"}}
        )

    def declare(self, kind: ResourceKind) -> None:
        """Serve a resource (and announce it in API discovery)."""
        self._kinds[kind.group, kind.version, kind.plural] = kind
        self.resources[
            f"{kind.group}/{kind.version}/{kind.plural}" if kind.group else f"v1/{kind.plural}"
        ] = kmock.ResourceInfo(
            kind=kind.kind,
            singular=kind.kind.lower(),
            namespaced=kind.namespaced,
            verbs=_VERBS,
            subresources=({"status"} if kind.status_subresource else set())
            | ({"scale"} if kind.scale else set()),
        )

    async def _serve_version(self, request: rendering.Request) -> rendering.Payload:
        """API discovery, with each scale subresource announced as the API server does: an
        ``autoscaling/v1`` ``Scale`` (what ``kubectl scale`` looks for)."""
        payload: Any = await super()._serve_version(request)
        for entry in payload.get("resources", []):
            if entry["name"].endswith("/scale"):
                entry.update(group="autoscaling", version="v1", kind="Scale")
                entry["verbs"] = ["get", "patch", "update"]
        return payload  # type: ignore[no-any-return]

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT`` of the first server, for clients' ``host``."""
        return str(self.url).rstrip("/")

    def kind(self, group: str, version: str, plural: str) -> ResourceKind:
        return self._kinds[group, version, plural]

    def _resolve(self, path: str) -> Addressed | None:
        """The declared resource a path addresses, if any."""
        parsed = _parse_path(path)
        if parsed is None or parsed[:2] + parsed[3:4] not in self._kinds:
            return None
        group, version, namespace, plural, name, subresource = parsed
        return Addressed(self._kinds[group, version, plural], namespace, name, subresource)

    async def __call__(self, raw_request: aiohttp.web.BaseRequest) -> aiohttp.web.StreamResponse:
        # kmock's own request parser fails on cluster-scoped paths such as /api/v1/namespaces,
        # so requests for declared resources are parsed here and never reach it.
        if raw_request.method == "GET" and raw_request.path == "/openapi/v2":
            # For kubectl before 1.27 (Debian's 1.20): an empty protobuf Document, no schemas.
            return aiohttp.web.Response(body=b"", content_type=k8s_discovery.OPENAPI_V2_PROTOBUF)
        if raw_request.method == "GET":
            document = k8s_discovery.discovery(raw_request.path, self._kinds.values(), self._crds())
            if document is not None:
                return aiohttp.web.json_response(document)
        if self._resolve(raw_request.path) is None:
            return await super().__call__(raw_request)
        body = await raw_request.read()
        request = rendering.Request(
            id=len(self._requests),
            raw_request=raw_request,
            url=raw_request.url,
            method=raw_request.method,
            params=dict(raw_request.query),
            headers=dict(raw_request.headers),
            body=body,
            data=json.loads(body) if body else None,
        )
        self._requests.append(request)
        try:
            return await self._handle(request)
        except Exception as exc:  # rendered as a Status, like the API server's 500
            return await self._render_error(exc)

    async def _handle(self, request: rendering.Request) -> aiohttp.web.StreamResponse:
        resolved = self._resolve(request.url.path)
        if resolved is None:
            return await super()._handle(request)
        kind, namespace = resolved.kind, resolved.namespace
        try:
            if request.method == "GET" and request.params.get("watch") in ("true", "1"):
                return await self._watch(request, kind, namespace)
            status, body = await self._admit_and_serve(request, resolved)
        except StoreError as error:
            return aiohttp.web.json_response(_status_body(error), status=error.status)
        if kind.plural == "customresourcedefinitions":
            self._serve_crds()
        await self.notify()
        if isinstance(body, str):
            return aiohttp.web.Response(text=body, status=status)
        return aiohttp.web.json_response(body, status=status)

    def _crds(self) -> dict[str, Body]:
        crds = self._kinds["apiextensions.k8s.io", "v1", "customresourcedefinitions"]
        return {body["metadata"]["name"]: body for body in self.store.select(crds, None)}

    def _serve_crds(self) -> None:
        """Serve the resources the stored CRDs define (as the API server does once they exist)."""
        for crd in self._crds().values():
            spec = crd.get("spec") or {}
            for version in spec.get("versions") or []:
                kind = ResourceKind(
                    spec["group"],
                    version["name"],
                    spec["names"]["plural"],
                    spec["names"]["kind"],
                    namespaced=spec.get("scope") == "Namespaced",
                    status_subresource="status" in (version.get("subresources") or {}),
                    scale=tuple(
                        sorted(((version.get("subresources") or {}).get("scale") or {}).items())
                    ),
                )
                if (kind.group, kind.version, kind.plural) not in self._kinds:
                    self.declare(kind)

    async def changed(self, since: int, timeout: float) -> int:
        """Wait until the store moved past revision ``since`` (or ``timeout``); the revision."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout), self._changed:
                await self._changed.wait_for(lambda: self.store.revision != since)
        return self.store.revision

    async def notify(self) -> None:
        """Wake the watches after the store was changed directly (not over HTTP)."""
        async with self._changed:
            self._changed.notify_all()

    async def _admit_and_serve(
        self, request: rendering.Request, target: Addressed
    ) -> tuple[int, Body | str]:
        """Serve the request after admission; a patch whose object changed while the webhooks
        looked at it is patched and admitted again (a patch carries no resourceVersion)."""
        for attempt in range(5):
            admitted = await self._admit(request, target)
            try:
                return self._serve(request, target, admitted)
            except StoreError as error:
                retry = error.status == 409 and admitted is not None and request.method == "PATCH"
                if not retry or attempt == 4:
                    raise
        raise AssertionError("unreachable")

    async def _admit(self, request: rendering.Request, target: Addressed) -> Body | None:
        """A create or update as the admission webhooks let it through (``k8s_admission``)."""
        kind, namespace, name, subresource = target
        method = request.method
        if (
            subresource
            or method not in ("POST", "PUT", "PATCH")
            or (name is None) != (method == "POST")
        ):
            return None
        if method == "POST":
            obj = copy.deepcopy(request.data or {})
            meta = obj.setdefault("metadata", {})
            if kind.namespaced:
                meta.setdefault("namespace", namespace or "default")
            return await admit(self.store, kind, "CREATE", namespace, obj, None)
        assert name is not None
        old = self.store.get(kind, namespace, name)
        content_type = request.headers.get("Content-Type", "application/json")
        new = (
            request.data if method == "PUT" else self.store.patched(old, request.data, content_type)
        )
        return await admit(self.store, kind, "UPDATE", namespace, new or {}, old)

    def _serve(
        self, request: rendering.Request, target: Addressed, admitted: Body | None = None
    ) -> tuple[int, Body | str]:
        kind, namespace, name, subresource = target
        store, method, params = self.store, request.method, request.params
        content_type = request.headers.get("Content-Type", "application/json")
        if admitted is not None and name is None:
            return 201, store.create(kind, namespace, admitted)
        if admitted is not None and name is not None:
            return 200, store.replace(kind, namespace, name, admitted, subresource)
        table = k8s_discovery.wants_table(request.headers.get("Accept", ""))
        if method == "GET" and table and subresource != "log":
            items = (
                store.select(
                    kind, namespace, params.get("labelSelector"), params.get("fieldSelector")
                )
                if name is None
                else [store.get(kind, namespace, name)]
            )
            crd = self._crds().get(f"{kind.plural}.{kind.group}")
            include = params.get("includeObject", "Metadata")
            return 200, k8s_discovery.table(items, crd, str(store.revision), include)
        if name is None and method == "GET":
            items = store.select(
                kind, namespace, params.get("labelSelector"), params.get("fieldSelector")
            )
            return 200, self._list_body(kind, items)
        if name is None and method == "POST":
            return 201, store.create(kind, namespace, request.data or {})
        if name is None and method == "DELETE":
            doomed = store.select(
                kind, namespace, params.get("labelSelector"), params.get("fieldSelector")
            )
            meta = [body["metadata"] for body in doomed]
            deleted = [store.delete(kind, m.get("namespace"), m["name"]) for m in meta]
            return 200, self._list_body(kind, deleted)
        if name is not None and subresource == "scale" and kind.scale:
            data = request.data
            return 200, scale(self.store, kind, namespace, name, request.method, data, content_type)
        if name is not None and method == "GET" and subresource == "log":
            store.get(kind, namespace, name)
            return 200, tail_lines(store.logs.get((namespace or "", name), ""), params)
        if name is not None and method == "GET":
            return 200, store.get(kind, namespace, name)
        if name is not None and method == "PUT":
            return 200, store.replace(kind, namespace, name, request.data or {}, subresource)
        if name is not None and method == "PATCH":
            return 200, store.patch(kind, namespace, name, request.data, content_type, subresource)
        if name is not None and method == "DELETE":
            return 200, store.delete(kind, namespace, name, _grace_period(request))
        raise StoreError(405, "MethodNotAllowed", f"{method} is not supported here")

    def _list_body(self, kind: ResourceKind, items: list[Body]) -> Body:
        return {
            "apiVersion": kind.api_version,
            "kind": f"{kind.kind}List",
            "metadata": {"resourceVersion": str(self.store.revision)},
            "items": items,
        }

    async def _watch(
        self, request: rendering.Request, kind: ResourceKind, namespace: str | None
    ) -> aiohttp.web.StreamResponse:
        assert request._raw_request is not None
        response = aiohttp.web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(request._raw_request)
        timeout = float(request.params.get("timeoutSeconds") or 3600)
        with contextlib.suppress(ConnectionError, TimeoutError):
            async with asyncio.timeout(timeout):
                async for event in self._events(request, kind, namespace):
                    line = {"type": event.type, "object": event.body}
                    await response.write(json.dumps(line).encode() + b"\n")
        with contextlib.suppress(ConnectionError):
            await response.write_eof()
        return response

    async def _events(
        self, request: rendering.Request, kind: ResourceKind, namespace: str | None
    ) -> AsyncIterator[WatchEvent]:
        labels, fields = request.params.get("labelSelector"), request.params.get("fieldSelector")
        since = request.params.get("resourceVersion") or "0"
        log = self.store.events
        if since == "0":  # no version: the current state first, then what follows
            for body in self.store.select(kind, namespace, labels, fields):
                yield WatchEvent(self.store.revision, kind, "ADDED", body)
            position = len(log)
        else:
            position = bisect.bisect_right(log, int(since), key=lambda e: e.resource_version)
        while True:
            while position < len(log):
                event, position = log[position], position + 1
                body = event.body
                if (
                    event.kind == kind
                    and (namespace is None or body["metadata"].get("namespace") == namespace)
                    and label_selector_matches(labels, body["metadata"].get("labels") or {})
                    and field_selector_matches(fields, body)
                ):
                    yield event
            async with self._changed:
                await self._changed.wait_for(lambda seen=position: len(log) > seen)


def tail_lines(log: str, params: Mapping[str, str]) -> str:
    """A pod's log as ``GET .../log`` serves it: its last ``tailLines`` lines when asked."""
    tail = params.get("tailLines")
    if tail is None:
        return log
    lines = log.splitlines(keepends=True)
    return "".join(lines[len(lines) - min(int(tail), len(lines)) :])


def kubeconfig(server: str) -> Body:
    """A kubeconfig for ``server`` without credentials (the emulator checks none)."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "emulator", "cluster": {"server": server}}],
        "users": [{"name": "tester", "user": {}}],
        "contexts": [{"name": "emulator", "context": {"cluster": "emulator", "user": "tester"}}],
        "current-context": "emulator",
    }


async def wait_for(predicate: Any, timeout: float = 10.0, interval: float = 0.02) -> Any:
    """Poll a sync or async predicate until it returns a truthy value or the deadline passes."""
    deadline = time.monotonic() + timeout
    while True:
        result = predicate()
        if asyncio.iscoroutine(result):
            result = await result
        if result:
            return result
        if time.monotonic() > deadline:
            raise TimeoutError(f"condition not met within {timeout} s: {predicate}")
        await asyncio.sleep(interval)
