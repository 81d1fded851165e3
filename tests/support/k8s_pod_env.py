"""What a pod's container sees on a node, for the process kubelet: its environment and argv.

On a cluster a container gets its ``env`` (values, ``$(VAR)`` references, the downward API's
``fieldRef``/``resourceFieldRef``), its own network namespace and cluster DNS. Here every pod
is a process on this machine with its own loopback address (``127.X.Y.Z``, stable per pod
name, as a headless service's DNS name is stable), so:

- ``status.podIP`` is that address; binding ``0.0.0.0`` (all of the pod's addresses) means
  binding it, so ``0.0.0.0`` in the command line or an env value becomes the pod's address;
- a Service DNS name (``svc.ns.svc``, ``svc.ns.svc.cluster.local``) in an env value or an
  argument becomes the address of the pod the service selects (a headless service's A record).

Volumes: a ``persistentVolumeClaim`` volume is the directory of this machine that holds its
bound claim's volume (``ClaimLookup``: the kubelet's provisioner makes one per claim), shared by
every pod that mounts the claim, as a ReadWriteMany claim is. There are no mount namespaces, so
the container is told that directory instead of its ``mountPath``: the ``mountPath`` (as a path
prefix) in an env value or an argument becomes the directory (``mounted_paths``). A
``hostPath`` volume mounted at its own path is that path; other kinds of volume are refused.

Pure functions over pod bodies; no I/O. Not for secrets or config maps (unsupported: an error).
"""

import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from flexjob.api.quantity import parse_quantity

Body = dict[str, Any]
#: ``(namespace, service) -> address`` of the pod behind a service, None when it has none.
ServiceLookup = Callable[[str, str], str | None]
#: (namespace, secret name, key) -> the decoded value, None when missing.
SecretLookup = Callable[[str, str, str], str | None]
#: (namespace, claim name) -> the directory of its volume, None while it is missing or unbound.
ClaimLookup = Callable[[str, str], str | None]

_SERVICE_NAME = re.compile(
    r"\b([a-z0-9](?:[-a-z0-9]*[a-z0-9])?)\.([a-z0-9](?:[-a-z0-9]*[a-z0-9])?)\.svc"
    r"(?:\.cluster\.local)?\b"
)
_ALL_ADDRESSES = re.compile(r"(?<![\d.])0\.0\.0\.0(?![\d.])")
_REFERENCE = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")
_LABEL_PATH = re.compile(r"metadata\.(labels|annotations)\['([^']+)'\]")


class PodSpecError(ValueError):
    """A pod asks for something the process kubelet cannot give (named in the message)."""


def main_container(pod: Body) -> Body:
    containers = (pod.get("spec") or {}).get("containers") or []
    if not containers:
        raise PodSpecError(f"pod {pod['metadata']['name']}: spec.containers is empty")
    return dict(containers[0])


def resolve_services(text: str, lookup: ServiceLookup) -> str:
    """``text`` with every Service DNS name replaced by its pod's address (unknown names stay,
    and fail to resolve, as they would in the cluster; short names are not rewritten)."""

    def replace(match: re.Match[str]) -> str:
        return lookup(match.group(2), match.group(1)) or match.group(0)

    return _SERVICE_NAME.sub(replace, text)


def field_value(pod: Body, path: str, pod_ip: str) -> str:
    """A downward API ``fieldRef.fieldPath`` of ``pod``."""
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    simple = {
        "metadata.name": meta.get("name"),
        "metadata.namespace": meta.get("namespace"),
        "metadata.uid": meta.get("uid"),
        "spec.nodeName": spec.get("nodeName"),
        "spec.serviceAccountName": spec.get("serviceAccountName") or "default",
        "status.podIP": pod_ip,
        "status.podIPs": pod_ip,
        "status.hostIP": "127.0.0.1",
    }
    if path in simple:
        return str(simple[path] or "")
    found = _LABEL_PATH.fullmatch(path)
    if found:
        return str((meta.get(found.group(1)) or {}).get(found.group(2), ""))
    raise PodSpecError(f"fieldRef.fieldPath {path!r} is not supported; use one of {sorted(simple)}")


def resource_value(container: Body, ref: Mapping[str, Any]) -> str:
    """A downward API ``resourceFieldRef``: the container's request or limit over ``divisor``."""
    section, _, resource = str(ref.get("resource", "")).partition(".")
    resources = (container.get("resources") or {}).get(section) or {}
    if section not in ("limits", "requests") or resource not in ("cpu", "memory"):
        raise PodSpecError(f"resourceFieldRef.resource {ref.get('resource')!r} is not supported")
    value = resources.get(resource)
    if value is None:
        return "0"
    divisor = parse_quantity(ref.get("divisor") or "1")
    return str(math.ceil(parse_quantity(value) / divisor))


def container_env(
    pod: Body,
    container: Body,
    pod_ip: str,
    lookup: ServiceLookup,
    secrets: SecretLookup | None = None,
) -> dict[str, str]:
    """The container's declared environment, resolved in order as the kubelet does."""
    env: dict[str, str] = {}
    for item in container.get("env") or []:
        name = item["name"]
        source = item.get("valueFrom")
        if source is None:
            raw = str(item.get("value") or "")
            value = _REFERENCE.sub(lambda m: env.get(m.group(1), m.group(0)), raw)
        elif "fieldRef" in source:
            value = field_value(pod, source["fieldRef"]["fieldPath"], pod_ip)
        elif "resourceFieldRef" in source:
            value = resource_value(container, source["resourceFieldRef"])
        elif "secretKeyRef" in source and secrets is not None:
            ref = source["secretKeyRef"]
            found = secrets(pod["metadata"]["namespace"], ref["name"], ref["key"])
            if found is None:
                raise PodSpecError(f"env {name}: secret {ref['name']} has no key {ref['key']!r}")
            value = found
        else:
            raise PodSpecError(
                f"env {name}: only value, fieldRef, resourceFieldRef and secretKeyRef work here"
            )
        env[name] = _ALL_ADDRESSES.sub(pod_ip, resolve_services(value, lookup))
    return env


def container_argv(pod: Body, container: Body, pod_ip: str, lookup: ServiceLookup) -> list[str]:
    """``command`` + ``args`` with Service names and ``0.0.0.0`` made local (see module doc)."""
    argv = [*(container.get("command") or []), *(container.get("args") or [])]
    if not argv:
        raise PodSpecError(f"pod {pod['metadata']['name']}: the container has no command")
    return [_ALL_ADDRESSES.sub(pod_ip, resolve_services(str(a), lookup)) for a in argv]


def memory_limit_bytes(container: Body) -> int | None:
    """``resources.limits.memory`` in bytes, None when unlimited."""
    limit = ((container.get("resources") or {}).get("limits") or {}).get("memory")
    return None if limit is None else int(parse_quantity(limit))


def volume_claims(pod: Body) -> list[str]:
    """The claims the pod's ``persistentVolumeClaim`` volumes name (it runs once all are
    bound)."""
    volumes = (pod.get("spec") or {}).get("volumes") or []
    return [
        v["persistentVolumeClaim"]["claimName"] for v in volumes if "persistentVolumeClaim" in v
    ]


def mounts(pod: Body, container: Body, claims: ClaimLookup) -> dict[str, str]:
    """``mountPath -> directory of this machine`` for every volume the container mounts (see
    module doc)."""
    volumes = {v["name"]: v for v in (pod.get("spec") or {}).get("volumes") or []}
    found: dict[str, str] = {}
    for mount in container.get("volumeMounts") or []:
        volume = volumes.get(mount["name"])
        if volume is None:
            raise PodSpecError(f"volumeMounts: no volume named {mount['name']!r}")
        path = str(mount["mountPath"])
        if "persistentVolumeClaim" in volume:
            claim = volume["persistentVolumeClaim"]["claimName"]
            directory = claims(pod["metadata"]["namespace"], claim)
            if directory is None:
                raise PodSpecError(f"volume {mount['name']!r}: claim {claim!r} is not bound")
            found[path] = directory
        elif (volume.get("hostPath") or {}).get("path") == path:
            found[path] = path
        else:
            raise PodSpecError(
                f"volume {mount['name']!r}: only persistentVolumeClaim volumes (and hostPath "
                "volumes mounted at their own path) work here"
            )
    return found


def mounted_paths(text: str, mounted: Mapping[str, str]) -> str:
    """``text`` with each ``mountPath`` (a whole path prefix) replaced by its directory."""
    for path, directory in sorted(mounted.items(), key=lambda m: -len(m[0])):
        if path != directory:
            pattern = re.escape(path.rstrip("/")) + r"(?![\w.-])"
            text = re.sub(pattern, directory.replace("\\", "\\\\"), text)
    return text
