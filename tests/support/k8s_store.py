"""The in-memory object store behind the Kubernetes emulator: metadata, selectors, patches.

It is for tests: it keeps objects of declared resources, stamps server-side metadata
(uid, resourceVersion, generation, creationTimestamp, generateName), applies merge and JSON
patches, honours the status subresource, finalizers and ownerReference garbage collection,
and records every change as a watch event. It is not a Kubernetes: no admission, no schema
validation, no strategic-merge list semantics (strategic merge is applied as a JSON merge patch).
"""

import copy
import dataclasses
import datetime
import functools
import random
import string
import uuid
from collections.abc import Callable
from typing import Any

import jsonpatch  # type: ignore[import-untyped]

Body = dict[str, Any]


class StoreError(Exception):
    """A Kubernetes API error with its HTTP status and reason (rendered as a Status object)."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason
        self.message = message


@dataclasses.dataclass(frozen=True, slots=True)
class ResourceKind:
    """A declared resource: where it lives, what it is called, whether status is separate."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True
    status_subresource: bool = False
    #: Short names discovery announces (``kubectl get ej``); a stored CRD's names win.
    short_names: tuple[str, ...] = ()
    #: The CRD's scale subresource (``specReplicasPath``, ``statusReplicasPath``), if any.
    scale: tuple[tuple[str, str], ...] = ()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


@dataclasses.dataclass(frozen=True, slots=True)
class WatchEvent:
    resource_version: int
    kind: ResourceKind
    type: str
    body: Body


def _now() -> str:
    # Microseconds (the API server keeps seconds) so that "oldest first" is exact in tests.
    return datetime.datetime.now(tz=datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _suffix() -> str:
    return "".join(random.choices(string.ascii_lowercase + string.digits, k=5))


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch: dicts merge recursively, ``None`` removes, the rest replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _parse_set(text: str) -> set[str]:
    return {item.strip() for item in text.strip().strip("()").split(",") if item.strip()}


def _split_requirements(selector: str) -> list[str]:
    """Split on commas outside parentheses (``a in (x,y),b=c`` → two requirements)."""
    parts: list[str] = []
    depth, start = 0, 0
    for index, char in enumerate(selector):
        depth += char == "("
        depth -= char == ")"
        if char == "," and depth == 0:
            parts.append(selector[start:index])
            start = index + 1
    parts.append(selector[start:])
    return [part.strip() for part in parts if part.strip()]


Predicate = Callable[[dict[str, str]], bool]


def _requirement(requirement: str) -> Predicate:
    words = requirement.split()
    if len(words) >= 3 and words[1] in ("in", "notin"):
        values = _parse_set(requirement.split(words[1], 1)[1])
        key, wanted = words[0], words[1] == "in"
        return lambda labels: (labels.get(key) in values) == wanted
    if "!=" in requirement:
        key, value = (s.strip() for s in requirement.split("!=", 1))
        return lambda labels: labels.get(key) != value
    if "=" in requirement:
        key, value = (s.strip() for s in requirement.replace("==", "=").split("=", 1))
        return lambda labels: labels.get(key) == value
    if requirement.startswith("!"):
        absent = requirement[1:].strip()
        return lambda labels: absent not in labels
    return lambda labels: requirement in labels


@functools.lru_cache(maxsize=1024)
def compile_label_selector(selector: str | None) -> Predicate:
    """The selector parsed once (lists and watches apply it to every object or event):
    equality (``=``, ``==``, ``!=``), set (``in``, ``notin``) and existence (``k``, ``!k``)."""
    checks = tuple(_requirement(r) for r in _split_requirements(selector or ""))
    return lambda labels: all(check(labels) for check in checks)


def label_selector_matches(selector: str | None, labels: dict[str, str]) -> bool:
    """Whether ``labels`` match the selector (see ``compile_label_selector``)."""
    return compile_label_selector(selector)(labels)


def _field_value(body: Body, path: str) -> str:
    value: Any = body
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return "" if value is None else str(value)


def field_selector_matches(selector: str | None, body: Body) -> bool:
    """``path=value``, ``path==value`` and ``path!=value`` over dotted paths of the body."""
    for requirement in _split_requirements(selector or ""):
        if "!=" in requirement:
            path, value = requirement.split("!=", 1)
            if _field_value(body, path.strip()) == value.strip():
                return False
        else:
            path, value = requirement.replace("==", "=").split("=", 1)
            if _field_value(body, path.strip()) != value.strip():
                return False
    return True


ObjectKey = tuple[ResourceKind, str | None, str]
#: Decides whether a delete of this object waits for someone (a kubelet) to finish it:
#: the grace period in seconds it gets by default, or None to remove it at once.
GracePolicy = Callable[[ResourceKind, Body], float | None]


def _owner_uids(body: Body) -> set[str]:
    return {ref["uid"] for ref in body["metadata"].get("ownerReferences") or [] if ref.get("uid")}


class ObjectStore:
    """Objects by (resource, namespace, name), one global resourceVersion counter, an event log."""

    def __init__(self) -> None:
        #: Objects by resource, then by (namespace, name).
        self.objects: dict[ResourceKind, dict[tuple[str | None, str], Body]] = {}
        self._dependents: dict[str, set[ObjectKey]] = {}
        #: Container output by (namespace, pod name), served at ``.../pods/NAME/log``.
        self.logs: dict[tuple[str, str], str] = {}
        self.events: list[WatchEvent] = []
        self.revision = 0
        #: Set by a kubelet: pods bound to its nodes terminate gracefully (see ``delete``).
        self.grace_policy: GracePolicy | None = None

    # -- reading ---------------------------------------------------------------------------
    def get(self, kind: ResourceKind, namespace: str | None, name: str) -> Body:
        body = self.objects.get(kind, {}).get((namespace if kind.namespaced else None, name))
        if body is None:
            raise StoreError(404, "NotFound", f'{kind.plural} "{name}" not found')
        return body

    def select(
        self,
        kind: ResourceKind,
        namespace: str | None,
        labels: str | None = None,
        fields: str | None = None,
    ) -> list[Body]:
        objects = self.objects.get(kind, {})
        matches = compile_label_selector(labels)
        found = [
            (key, body)
            for key, body in objects.items()
            if (namespace is None or key[0] == namespace)
            and matches(body["metadata"].get("labels") or {})
            and (not fields or field_selector_matches(fields, body))
        ]
        found.sort(key=lambda item: (item[0][0] or "", item[0][1]))
        return [body for _, body in found]

    # -- writing ---------------------------------------------------------------------------
    def _record(self, kind: ResourceKind, type_: str, body: Body) -> None:
        self.events.append(WatchEvent(self.revision, kind, type_, copy.deepcopy(body)))

    def _put(self, kind: ResourceKind, body: Body) -> None:
        meta = body["metadata"]
        key: ObjectKey = (kind, meta.get("namespace"), meta["name"])
        old = self.objects.setdefault(kind, {}).get(key[1:])
        for uid in _owner_uids(old) if old else ():
            self._dependents.get(uid, set()).discard(key)
        self.objects[kind][key[1:]] = body
        for uid in _owner_uids(body):
            self._dependents.setdefault(uid, set()).add(key)

    def _bump(self, body: Body) -> None:
        self.revision += 1
        body["metadata"]["resourceVersion"] = str(self.revision)

    def create(self, kind: ResourceKind, namespace: str | None, body: Body) -> Body:
        body = copy.deepcopy(body)
        meta = body.setdefault("metadata", {})
        if kind.namespaced:
            url_namespace = namespace or meta.get("namespace") or "default"
            if meta.get("namespace") not in (None, url_namespace):
                raise StoreError(400, "BadRequest", "the namespace of the object does not match")
            meta["namespace"] = url_namespace
        if not meta.get("name"):
            if not meta.get("generateName"):
                raise StoreError(422, "Invalid", "metadata.name or generateName is required")
            meta["name"] = meta["generateName"] + _suffix()
        if (meta.get("namespace"), meta["name"]) in self.objects.get(kind, {}):
            raise StoreError(409, "AlreadyExists", f'{kind.plural} "{meta["name"]}" already exists')
        body["apiVersion"] = kind.api_version
        body["kind"] = kind.kind
        if kind.status_subresource and kind.group:
            body.pop("status", None)  # custom resources take status only through /status
        meta.update(uid=str(uuid.uuid4()), generation=1, creationTimestamp=_now())
        meta.pop("deletionTimestamp", None)
        self._bump(body)
        self._put(kind, body)
        self._record(kind, "ADDED", body)
        return body

    def replace(
        self, kind: ResourceKind, namespace: str | None, name: str, new: Body, subresource: str
    ) -> Body:
        old = self.get(kind, namespace, name)
        expected = (new.get("metadata") or {}).get("resourceVersion")
        if expected and expected != old["metadata"]["resourceVersion"]:
            raise StoreError(409, "Conflict", "the object has been modified; please retry")
        return self._commit(kind, old, copy.deepcopy(new), subresource)

    def patch(
        self,
        kind: ResourceKind,
        namespace: str | None,
        name: str,
        patch: Any,
        content_type: str,
        subresource: str,
    ) -> Body:
        old = self.get(kind, namespace, name)
        return self._commit(kind, old, self.patched(old, patch, content_type), subresource)

    @staticmethod
    def patched(old: Body, patch: Any, content_type: str) -> Body:
        """``old`` with a merge or JSON ``patch`` applied (nothing stored)."""
        if "json-patch" in content_type:
            if not isinstance(patch, list):
                raise StoreError(400, "BadRequest", "a JSON patch must be a list of operations")
            try:
                new = jsonpatch.apply_patch(old, patch)
            except jsonpatch.JsonPatchTestFailed as exc:
                raise StoreError(422, "Invalid", f"the test operation failed: {exc}") from exc
            except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as exc:
                raise StoreError(422, "Invalid", f"the JSON patch cannot apply: {exc}") from exc
        elif isinstance(patch, dict):
            new = merge_patch(old, patch)
        else:
            raise StoreError(400, "BadRequest", "a merge patch must be a JSON object")
        return new  # type: ignore[no-any-return]

    def _commit(self, kind: ResourceKind, old: Body, new: Body, subresource: str) -> Body:
        """Keep what the endpoint may not change, bump versions, emit the event, maybe delete."""
        if subresource == "status":
            new = {**copy.deepcopy(old), "status": new.get("status")}
        elif kind.status_subresource:
            new["status"] = copy.deepcopy(old.get("status"))
        if new.get("status") is None:
            new.pop("status", None)
        meta = new.setdefault("metadata", {})
        for field in ("uid", "name", "namespace", "creationTimestamp", "generation"):
            if field in old["metadata"]:
                meta[field] = old["metadata"][field]
        if "deletionTimestamp" in old["metadata"]:
            meta["deletionTimestamp"] = old["metadata"]["deletionTimestamp"]
        new["apiVersion"], new["kind"] = old["apiVersion"], old["kind"]
        meta["resourceVersion"] = old["metadata"]["resourceVersion"]
        if new == old:
            return old  # a no-op write changes nothing, like the real API server
        unchanged = ("metadata", "status")
        if any(new.get(k) != old.get(k) for k in set(new) | set(old) if k not in unchanged):
            meta["generation"] = int(old["metadata"].get("generation", 1)) + 1
        self._bump(new)
        self._put(kind, new)
        self._record(kind, "MODIFIED", new)
        graceful = "deletionGracePeriodSeconds" in meta  # its kubelet removes it when done
        if meta.get("deletionTimestamp") and not meta.get("finalizers") and not graceful:
            self._remove(kind, new)
        return new

    def delete(
        self, kind: ResourceKind, namespace: str | None, name: str, grace: float | None = None
    ) -> Body:
        """Remove the object, or mark it terminating: while it has finalizers, or while the
        ``grace_policy`` gives it a grace period (``grace``, when given, overrides it; 0
        removes a terminating object whose finalizers are done, as ``kubectl --force`` does)."""
        body = self.get(kind, namespace, name)
        meta = body["metadata"]
        if meta.get("deletionTimestamp"):
            if grace == 0 and not meta.get("finalizers"):
                self._remove(kind, body)
            return body
        policy = self.grace_policy(kind, body) if self.grace_policy else None
        period = None if policy is None or grace == 0 else (grace if grace is not None else policy)
        if meta.get("finalizers") or period is not None:
            new = copy.deepcopy(body)
            new["metadata"]["deletionTimestamp"] = _now()
            if period is not None:
                new["metadata"]["deletionGracePeriodSeconds"] = int(period)
            self._bump(new)
            self._put(kind, new)
            self._record(kind, "MODIFIED", new)
            return new
        self._remove(kind, body)
        return body

    def _remove(self, kind: ResourceKind, body: Body) -> None:
        meta = body["metadata"]
        del self.objects[kind][meta.get("namespace"), meta["name"]]
        for uid in _owner_uids(body):
            self._dependents.get(uid, set()).discard((kind, meta.get("namespace"), meta["name"]))
        self._bump(body)
        self._record(kind, "DELETED", body)
        self._collect_garbage(meta["uid"])

    def _collect_garbage(self, owner_uid: str) -> None:
        """Background cascading deletion: dependents whose ownerReferences name the owner."""
        for kind, ns, name in sorted(self._dependents.pop(owner_uid, set()), key=str):
            if (ns, name) in self.objects.get(kind, {}):
                self.delete(kind, ns, name)
