"""``KubernetesPlatform``: the ``Platform`` protocol over a Kubernetes API server.

Jobs and ScalePlans are ``flexjob.dev/v1alpha1`` custom objects (status through the status
subresource), replicas are pods and their addresses headless services, both labelled with the
job name, replica type, index and rank and owned by the ElasticJob (ownerReferences), and job
events are core/v1 Events. All calls go through the official (synchronous) ``kubernetes``
client and are thread-safe. It decides nothing; see ``flexjob.core.operator.reconcile``.
"""

import base64
import contextlib
import json
import threading
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any, TypeVar

import kubernetes.watch
from kubernetes.client import ApiClient, CoreV1Api, CustomObjectsApi, NetworkingV1Api
from kubernetes.client.exceptions import ApiException

from flexjob.api import ElasticJob, ElasticJobStatus, ScalePlan, ScalePlanStatus
from flexjob.api.names import (
    GROUP,
    KIND_JOB,
    LABEL_JOB_NAME,
    PLURAL_JOB,
    PLURAL_SCALE_PLAN,
    VERSION,
)
from flexjob.core.operator.actions import EventType
from flexjob.core.operator.status_patch import StatusPatch, normalize_status_patch
from flexjob.platform.contract import (
    ALL_LINES,
    AlreadyExistsError,
    Event,
    LogOptions,
    NotFoundError,
    Replica,
    ReplicaRequest,
    Service,
    ServiceRequest,
    UnavailableError,
    WatchEvent,
    WatchEventType,
)
from flexjob.platform.kubernetes import bodies
from flexjob.platform.kubernetes.connection import load_configuration

T = TypeVar("T")
_watch: Any = kubernetes.watch  # the client's watch module carries no type hints
Body = dict[str, Any]
MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"


@contextlib.contextmanager
def _translated(what: str) -> Iterator[None]:
    """Turn the client's ``ApiException`` into the platform's errors, naming the object."""
    try:
        yield
    except ApiException as exc:
        if exc.status == 404:
            raise NotFoundError(f"{what} not found") from exc
        if exc.status == 409:
            raise AlreadyExistsError(f"{what} already exists or changed meanwhile") from exc
        raise UnavailableError(f"{what}: HTTP {exc.status} {exc.reason}: {exc.body!r}") from exc


def _loads(response: Any) -> Body:
    data = response.data
    return json.loads(data) if data else {}


class KubernetesPlatform:
    """Jobs, ScalePlans and events as API objects; replicas as pods; addresses as services."""

    name = "kubernetes"

    def __init__(
        self,
        api_client: ApiClient | None = None,
        *,
        request_timeout: float = 30.0,
        kubeconfig: str | None = None,
        context: str | None = None,
    ) -> None:
        """Without ``api_client``: the service account in a pod, else the kubeconfig
        (``kubeconfig``, else ``$KUBECONFIG`` or ``~/.kube/config``; ``context``, else its
        current context)."""
        api_client = api_client or ApiClient(load_configuration(kubeconfig, context))
        self._client = api_client
        self._core = CoreV1Api(api_client)
        self._networking = NetworkingV1Api(api_client)
        self._custom = CustomObjectsApi(api_client)
        self._timeout = request_timeout
        self._owners: dict[tuple[str, str], Body] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_config(
        cls, kubeconfig: str | None = None, context: str | None = None, server: str | None = None
    ) -> "KubernetesPlatform":
        """Connect in-cluster (service account) when possible, else through a kubeconfig."""
        return cls(ApiClient(load_configuration(kubeconfig, context, server)))

    # --- plumbing ------------------------------------------------------------------------------
    def _call(self, what: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Body:
        with _translated(what):
            response = fn(*args, _preload_content=False, _request_timeout=self._timeout, **kwargs)
            return _loads(response)

    def _watch(
        self,
        what: str,
        convert: Callable[[Body], T],
        fn: Callable[..., Any],
        *args: Any,
        timeout: float,
        **kwargs: Any,
    ) -> Iterator[WatchEvent[T]]:
        watcher = _watch.Watch()
        seconds = max(1, round(timeout))
        with _translated(what):
            stream = watcher.stream(
                fn,
                *args,
                timeout_seconds=seconds,
                _request_timeout=seconds + self._timeout,  # in case the server never ends it
                deserialize=False,
                **kwargs,
            )
            try:
                for event in stream:
                    if event.get("type") not in WatchEventType.__members__:
                        continue  # BOOKMARK, ERROR: the caller re-lists on return
                    yield WatchEvent(
                        WatchEventType(event["type"]),
                        convert(event.get("raw_object") or event["object"]),
                    )
            finally:
                watcher.stop()

    def _custom_lister(
        self, plural: str, namespace: str | None
    ) -> tuple[Callable[..., Any], tuple[str, ...]]:
        """The list call (and its arguments) for a custom resource, cluster-wide for None."""
        if namespace is None:
            return self._custom.list_cluster_custom_object, (GROUP, VERSION, plural)
        return self._custom.list_namespaced_custom_object, (GROUP, VERSION, namespace, plural)

    def _custom_list(self, plural: str, namespace: str | None) -> list[Body]:
        fn, args = self._custom_lister(plural, namespace)
        body = self._call(f"{plural} in {namespace or 'all namespaces'}", fn, *args)
        return sorted(body.get("items") or [], key=bodies.sort_key)

    def _set_status(self, plural: str, namespace: str, name: str, status: dict[str, Any]) -> Body:
        patch = [{"op": "add", "path": "/status", "value": status}]
        return self._call(
            f"{plural} {namespace}/{name}",
            self._custom.patch_namespaced_custom_object_status,
            GROUP,
            VERSION,
            namespace,
            plural,
            name,
            patch,
            _content_type=JSON_PATCH,
        )

    def owner(self, namespace: str, job: str) -> Body | None:
        """The job's controller reference for its pods and services (None if the job is gone);
        read once, then remembered (until this platform creates or deletes the job)."""
        return self._owner(namespace, job)

    @property
    def request_timeout(self) -> float:
        """Seconds a request may take before it fails."""
        return self._timeout

    def known_owner(self, namespace: str, job: str) -> Body | None:
        """``owner`` when remembered, else None (never reads)."""
        with self._lock:
            return self._owners.get((namespace, job))

    def _owner(self, namespace: str, job: str) -> Body | None:
        """The job's controller reference for its pods and services (None if the job is gone)."""
        with self._lock:
            cached = self._owners.get((namespace, job))
        if cached is not None:
            return cached
        try:
            self.get_job(namespace, job)  # remembers it
        except NotFoundError:
            return None
        with self._lock:
            return self._owners.get((namespace, job))

    def _forget_owner(self, namespace: str, job: str) -> None:
        with self._lock:
            self._owners.pop((namespace, job), None)

    # --- jobs ----------------------------------------------------------------------------------
    def create_job(self, job: ElasticJob) -> ElasticJob:
        body = job.to_wire()
        status = job.status or ElasticJobStatus()
        body.pop("status", None)
        ns, name = job.metadata.namespace, job.metadata.name
        self._forget_owner(ns, name)
        fn = self._custom.create_namespaced_custom_object
        self._call(f"elasticjob {ns}/{name}", fn, GROUP, VERSION, ns, PLURAL_JOB, body)
        return bodies.job_from_body(self._set_status(PLURAL_JOB, ns, name, status.to_wire()))

    def get_job(self, namespace: str, name: str) -> ElasticJob:
        """The job; remembers its controller reference, so that a pass that read the job sends
        no second read for the pods and events it makes."""
        fn = self._custom.get_namespaced_custom_object
        body = self._call(
            f"elasticjob {namespace}/{name}", fn, GROUP, VERSION, namespace, PLURAL_JOB, name
        )
        job = bodies.job_from_body(body)
        if job.metadata.uid:
            with self._lock:
                self._owners[(namespace, name)] = bodies.owner_reference(
                    KIND_JOB, name, job.metadata.uid
                )
        return job

    def list_jobs(self, namespace: str | None = None) -> list[ElasticJob]:
        return [bodies.job_from_body(b) for b in self._custom_list(PLURAL_JOB, namespace)]

    def patch_job_status(self, namespace: str, name: str, patch: StatusPatch) -> ElasticJob:
        """A merge patch of the ``status`` subresource: the API server merges it atomically."""
        wire = normalize_status_patch(patch)
        if not wire:
            return self.get_job(namespace, name)
        body = self._call(
            f"elasticjob {namespace}/{name}",
            self._custom.patch_namespaced_custom_object_status,
            GROUP,
            VERSION,
            namespace,
            PLURAL_JOB,
            name,
            {"status": wire},
            _content_type=MERGE_PATCH,
        )
        return bodies.job_from_body(body)

    def delete_job(self, namespace: str, name: str) -> None:
        for plan in self.list_scale_plans(namespace, name):
            self._delete_custom(PLURAL_SCALE_PLAN, namespace, plan.metadata.name)
        self._delete_custom(PLURAL_JOB, namespace, name)
        self._forget_owner(namespace, name)
        selector = f"involvedObject.kind={KIND_JOB},involvedObject.name={name}"
        fn = self._core.delete_collection_namespaced_event
        self._call(f"events of {namespace}/{name}", fn, namespace, field_selector=selector)

    def _delete_custom(self, plural: str, namespace: str, name: str) -> None:
        fn = self._custom.delete_namespaced_custom_object
        with contextlib.suppress(NotFoundError):
            self._call(f"{plural} {namespace}/{name}", fn, GROUP, VERSION, namespace, plural, name)

    def watch_jobs(
        self, namespace: str | None = None, timeout: float = 10.0
    ) -> Iterator[WatchEvent[ElasticJob]]:
        fn, args = self._custom_lister(PLURAL_JOB, namespace)
        return self._watch("elasticjobs", bodies.job_from_body, fn, *args, timeout=timeout)

    # --- scale plans ---------------------------------------------------------------------------
    def create_scale_plan(self, plan: ScalePlan) -> ScalePlan:
        body = plan.to_wire()
        body.pop("status", None)
        meta = body.setdefault("metadata", {})
        meta["labels"] = {**meta.get("labels", {}), LABEL_JOB_NAME: plan.spec.owner_job}
        ns = plan.metadata.namespace
        owner = self._owner(ns, plan.spec.owner_job)
        if owner is not None:
            meta["ownerReferences"] = [owner]
        fn = self._custom.create_namespaced_custom_object
        created = self._call(
            f"scaleplan {ns}/{plan.metadata.name}", fn, GROUP, VERSION, ns, PLURAL_SCALE_PLAN, body
        )
        status = (plan.status or ScalePlanStatus()).to_wire()
        name = created["metadata"]["name"]
        return bodies.plan_from_body(self._set_status(PLURAL_SCALE_PLAN, ns, name, status))

    def list_scale_plans(self, namespace: str, job: str | None = None) -> list[ScalePlan]:
        plans = [bodies.plan_from_body(b) for b in self._custom_list(PLURAL_SCALE_PLAN, namespace)]
        return [p for p in plans if job is None or p.spec.owner_job == job]

    def patch_scale_plan_status(
        self, namespace: str, name: str, status: ScalePlanStatus
    ) -> ScalePlan:
        body = self._set_status(PLURAL_SCALE_PLAN, namespace, name, status.to_wire())
        return bodies.plan_from_body(body)

    def watch_scale_plans(
        self, namespace: str | None = None, timeout: float = 10.0
    ) -> Iterator[WatchEvent[ScalePlan]]:
        fn, args = self._custom_lister(PLURAL_SCALE_PLAN, namespace)
        return self._watch("scaleplans", bodies.plan_from_body, fn, *args, timeout=timeout)

    # --- events --------------------------------------------------------------------------------
    def record_event(
        self, namespace: str, job: str, reason: str, message: str, type: EventType
    ) -> None:
        owner = self._owner(namespace, job)
        uid = owner["uid"] if owner else None
        body = bodies.event_body(namespace, job, uid, reason, message, type, datetime.now(UTC))
        self._call(
            f"event of {namespace}/{job}", self._core.create_namespaced_event, namespace, body
        )

    def list_events(self, namespace: str, job: str) -> list[Event]:
        selector = f"involvedObject.kind={KIND_JOB},involvedObject.name={job}"
        fn = self._core.list_namespaced_event
        items = self._call(f"events of {namespace}/{job}", fn, namespace, field_selector=selector)
        ordered = sorted(items.get("items") or [], key=bodies.event_time)
        return [
            Event(
                namespace=namespace,
                job=job,
                reason=item.get("reason", ""),
                message=item.get("message", ""),
                type=EventType(item.get("type") or EventType.NORMAL.value),
                time=bodies.event_time(item),
            )
            for item in ordered
        ]

    # --- secrets -------------------------------------------------------------------------------
    def ensure_secret(self, namespace: str, job: str, name: str, data: Mapping[str, str]) -> bool:
        """Create the Secret ``name`` holding ``data``, owned by ``job`` (deleted with it; ""
        = owned by none); False when it exists already (its data is kept: running pods hold it)."""
        body: Body = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": name, "namespace": namespace, "labels": {LABEL_JOB_NAME: job}},
            "type": "Opaque",
            "stringData": dict(data),
        }
        owner = self._owner(namespace, job) if job else None
        if owner is not None:
            body["metadata"]["ownerReferences"] = [owner]
        if not job:
            del body["metadata"]["labels"]
        try:
            self._call(
                f"secret {namespace}/{name}", self._core.create_namespaced_secret, namespace, body
            )
        except AlreadyExistsError:
            return False
        return True

    def ensure_network_policy(self, namespace: str, job: str, body: Mapping[str, Any]) -> bool:
        policy: Body = {**body, "metadata": dict(body["metadata"])}
        owner = self._owner(namespace, job)
        if owner is not None:
            policy["metadata"]["ownerReferences"] = [owner]
        name = policy["metadata"]["name"]
        create = self._networking.create_namespaced_network_policy
        try:
            self._call(f"network policy {namespace}/{name}", create, namespace, policy)
        except AlreadyExistsError:
            return False
        return True

    def ensure_volume_claim(self, namespace: str, job: str, body: Mapping[str, Any]) -> bool:
        claim: Body = {**body, "metadata": dict(body["metadata"])}
        owner = self._owner(namespace, job)
        if owner is not None:
            claim["metadata"]["ownerReferences"] = [owner]
        name = claim["metadata"]["name"]
        create = self._core.create_namespaced_persistent_volume_claim
        try:
            self._call(f"persistent volume claim {namespace}/{name}", create, namespace, claim)
        except AlreadyExistsError:
            return False
        return True

    def read_secret(self, namespace: str, name: str) -> Mapping[str, str] | None:
        try:
            body = self._call(
                f"secret {namespace}/{name}", self._core.read_namespaced_secret, name, namespace
            )
        except NotFoundError:
            return None
        encoded = {k: base64.b64decode(v).decode() for k, v in (body.get("data") or {}).items()}
        return {**(body.get("stringData") or {}), **encoded}

    # --- replicas and services -----------------------------------------------------------------
    def create_replica(self, request: ReplicaRequest) -> Replica:
        body = bodies.pod_body(request, self._owner(request.namespace, request.job))
        what = f"pod {request.namespace}/{request.name}"
        return bodies.replica_from_pod(
            self._call(what, self._core.create_namespaced_pod, request.namespace, body)
        )

    def delete_replica(self, namespace: str, name: str) -> None:
        with contextlib.suppress(NotFoundError):
            self._call(f"pod {namespace}/{name}", self._core.delete_namespaced_pod, name, namespace)

    def list_replicas(self, namespace: str, job: str | None = None) -> list[Replica]:
        fn = self._core.list_namespaced_pod
        items = self._call(f"pods in {namespace}", fn, namespace, label_selector=_of(job))
        return _oldest_first(items, bodies.replica_from_pod)

    def watch_replicas(
        self, namespace: str, job: str | None = None, timeout: float = 10.0
    ) -> Iterator[WatchEvent[Replica]]:
        fn = self._core.list_namespaced_pod
        return self._watch(
            "pods", bodies.replica_from_pod, fn, namespace, label_selector=_of(job), timeout=timeout
        )

    def create_service(self, request: ServiceRequest) -> Service:
        body = bodies.service_body(request, self._owner(request.namespace, request.job))
        fn = self._core.create_namespaced_service
        created = self._call(
            f"service {request.namespace}/{request.name}", fn, request.namespace, body
        )
        return bodies.service_from_body(created)

    def delete_service(self, namespace: str, name: str) -> None:
        with contextlib.suppress(NotFoundError):
            self._call(
                f"service {namespace}/{name}", self._core.delete_namespaced_service, name, namespace
            )

    def list_services(self, namespace: str, job: str | None = None) -> list[Service]:
        fn = self._core.list_namespaced_service
        items = self._call(f"services in {namespace}", fn, namespace, label_selector=_of(job))
        return _oldest_first(items, bodies.service_from_body)

    def read_logs(
        self,
        namespace: str,
        replica: str,
        follow: bool = False,
        timeout: float | None = None,
        options: LogOptions = ALL_LINES,
    ) -> Iterator[str]:
        options_: dict[str, Any] = {"previous": True} if options.previous else {}
        if options.since_seconds is not None:
            options_["since_seconds"] = max(1, int(options.since_seconds))
        if options.tail_lines is not None:
            options_["tail_lines"] = options.tail_lines
        with _translated(f"log of pod {namespace}/{replica}"):
            response: Any = self._core.read_namespaced_pod_log(
                replica,
                namespace,
                follow=follow,
                _preload_content=False,
                _request_timeout=timeout,
                **options_,
            )
        try:
            buffer = b""
            for chunk in response.stream(4096):
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    yield line.decode(errors="replace") + "\n"
            if buffer:
                yield buffer.decode(errors="replace")
        finally:
            response.release_conn()

    def close(self) -> None:
        self._client.close()  # type: ignore[no-untyped-call]


def _of(job: str | None) -> str:
    """The label selector of ``job``'s objects; of every job's when ``None``."""
    return f"{LABEL_JOB_NAME}={job}" if job else LABEL_JOB_NAME


def _oldest_first(listed: Body, convert: Callable[[Body], T]) -> list[T]:
    """The items of a list call, converted, oldest first."""
    return [convert(item) for item in sorted(listed.get("items") or [], key=bodies.sort_key)]
