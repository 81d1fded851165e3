"""Admission for the Kubernetes emulator: it calls the registered webhooks as an API server does.

A create or update of an object (not of its status) is sent, as an ``admission.k8s.io/v1``
AdmissionReview, first to every ``MutatingWebhookConfiguration`` webhook whose rules match the
resource and operation (their JSON patches are applied in order), then to every
``ValidatingWebhookConfiguration`` webhook; a refusal is the request's answer (the webhook's
code and message), a webhook that cannot be reached fails the request unless its
``failurePolicy`` is ``Ignore``.

Where a webhook is: ``clientConfig.url``, or ``clientConfig.service`` resolved through the
service's ``Endpoints`` object (the first address and port), as the API server's service
resolver does; the scheme is https when a ``caBundle`` is given (verified against it), else
http (a liberty: test webhook servers may serve plain HTTP). Not supported: namespace and
object selectors, ``matchPolicy``, side-effect dry runs, reinvocation.
"""

import base64
import ssl
import uuid

import aiohttp
import jsonpatch  # type: ignore[import-untyped]

from tests.support.k8s_store import Body, ObjectStore, ResourceKind, StoreError

MUTATING = ResourceKind(
    "admissionregistration.k8s.io",
    "v1",
    "mutatingwebhookconfigurations",
    "MutatingWebhookConfiguration",
    namespaced=False,
)
VALIDATING = ResourceKind(
    "admissionregistration.k8s.io",
    "v1",
    "validatingwebhookconfigurations",
    "ValidatingWebhookConfiguration",
    namespaced=False,
)
ENDPOINTS = ResourceKind("", "v1", "endpoints", "Endpoints")


def _matches(values: list[str] | None, value: str) -> bool:
    return bool(values) and ("*" in values or value in values)  # type: ignore[operator]


def matching_webhooks(
    store: ObjectStore, config: ResourceKind, kind: ResourceKind, op: str
) -> list[Body]:
    """The webhooks of every ``config`` object whose rules cover ``kind`` and ``op``."""
    found = []
    for configuration in store.select(config, None):
        for hook in configuration.get("webhooks") or []:
            if any(
                _matches(rule.get("apiGroups"), kind.group)
                and _matches(rule.get("apiVersions"), kind.version)
                and _matches(rule.get("resources"), kind.plural)
                and _matches(rule.get("operations"), op)
                for rule in hook.get("rules") or []
            ):
                found.append(hook)
    return found


def _url(store: ObjectStore, client: Body) -> str:
    if client.get("url"):
        return str(client["url"])
    service = client.get("service") or {}
    namespace, name = service.get("namespace", "default"), service.get("name", "")
    try:
        endpoints = store.get(ENDPOINTS, namespace, name)
    except StoreError:
        raise ConnectionError(f"service {namespace}/{name} has no endpoints") from None
    subsets = endpoints.get("subsets") or [{}]
    addresses, ports = subsets[0].get("addresses") or [], subsets[0].get("ports") or []
    if not addresses or not ports:
        raise ConnectionError(f"service {namespace}/{name} has no ready endpoints")
    scheme = "https" if client.get("caBundle") else "http"
    path = service.get("path") or "/"
    return f"{scheme}://{addresses[0]['ip']}:{ports[0]['port']}{path}"


def _ssl(client: Body) -> ssl.SSLContext | bool:
    bundle = client.get("caBundle")
    if not bundle:
        return False
    return ssl.create_default_context(cadata=base64.b64decode(bundle).decode())


def review(kind: ResourceKind, op: str, namespace: str | None, obj: Body, old: Body | None) -> Body:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": str(uuid.uuid4()),
            "kind": {"group": kind.group, "version": kind.version, "kind": kind.kind},
            "resource": {"group": kind.group, "version": kind.version, "resource": kind.plural},
            "requestKind": {"group": kind.group, "version": kind.version, "kind": kind.kind},
            "operation": op,
            "namespace": namespace or "",
            "name": (obj.get("metadata") or {}).get("name", ""),
            "object": obj,
            "oldObject": old,
            "userInfo": {"username": "system:admin"},
            "dryRun": False,
            "options": {},
        },
    }


async def _call(store: ObjectStore, hook: Body, body: Body) -> Body | None:
    """The webhook's ``response``; None when it failed and its failure policy is Ignore."""
    client = hook.get("clientConfig") or {}
    timeout = aiohttp.ClientTimeout(total=float(hook.get("timeoutSeconds") or 10))
    try:
        url = _url(store, client)
        async with (
            aiohttp.ClientSession(timeout=timeout) as session,
            session.post(url, json=body, ssl=_ssl(client)) as response,
        ):
            answer = await response.json()
        result: Body = answer["response"]
        return result
    except (OSError, aiohttp.ClientError, TimeoutError, KeyError, ValueError) as exc:
        if hook.get("failurePolicy") == "Ignore":
            return None
        message = f'Internal error occurred: failed calling webhook "{hook.get("name")}": {exc}'
        raise StoreError(500, "InternalError", message) from exc


def _refuse(hook: Body, response: Body) -> StoreError:
    status = response.get("status") or {}
    code = int(status.get("code") or 400)
    message = (
        f'admission webhook "{hook.get("name")}" denied the request: {status.get("message", "")}'
    )
    return StoreError(code, status.get("reason") or "Forbidden", message)


async def admit(
    store: ObjectStore,
    kind: ResourceKind,
    op: str,
    namespace: str | None,
    obj: Body,
    old: Body | None,
) -> Body | None:
    """The object as the webhooks admit it (mutated), None when no webhook is registered for
    it; raises ``StoreError`` when one refuses it."""
    mutating = matching_webhooks(store, MUTATING, kind, op)
    validating = matching_webhooks(store, VALIDATING, kind, op)
    if not mutating and not validating:
        return None
    for hook in mutating:
        response = await _call(store, hook, review(kind, op, namespace, obj, old))
        if response is None:
            continue
        if not response.get("allowed"):
            raise _refuse(hook, response)
        if response.get("patch"):
            operations = base64.b64decode(response["patch"]).decode()
            obj = jsonpatch.apply_patch(obj, jsonpatch.JsonPatch.from_string(operations))
    for hook in validating:
        response = await _call(store, hook, review(kind, op, namespace, obj, old))
        if response is not None and not response.get("allowed"):
            raise _refuse(hook, response)
    return obj
