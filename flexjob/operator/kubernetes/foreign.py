"""kopf handlers for other projects' job kinds (``api.foreign_kinds``): DIJob, ElasticAIJob and
DLRover's ElasticJob.

Each such object runs as the ElasticJob of the same name that the operator creates for it:
converted by the readers of ``api.readers`` (a v1 DIJob with the cluster's AggregatorConfig),
owned by it (deleting the source deletes the job and, through the job's finalizer, its pods),
annotated with its source (``SOURCE_ANNOTATION``) and the hash of the converted spec, which a
change of the source's spec replaces. The ElasticJob is what ``core.operator.reconcile``, the
server and ``flexjob`` commands work on; its status is written back to the source in the source's
own shape (``foreign_kinds.source_status``); a DIJob v2's ``status.replicas`` edited by someone
else is the size its job should have (``core.operator.source_replicas``: taken into the
ElasticJob's ``status.replicas``, or refused with a Warning event and written over). A name
already taken by another ElasticJob is
reported as a Warning event on the source and left alone. An AggregatorConfig created,
changed or deleted later syncs every DIJob v1 again, so each takes the cluster's config as it
is now.
"""

import asyncio
import hashlib
import json
import logging
import threading
from typing import Any, cast

import kopf
from kubernetes.client import ApiClient, CoreV1Api, CustomObjectsApi
from kubernetes.client.exceptions import ApiException

from flexjob.api.foreign_kinds import (
    AGGREGATOR_CONFIG,
    DIJOB,
    FOREIGN_KINDS,
    SOURCE_ANNOTATION,
    SOURCE_SPEC_ANNOTATION,
    ForeignKind,
    as_read,
    source_reader,
    source_status,
)
from flexjob.api.job import ElasticJobStatus
from flexjob.api.load import to_native
from flexjob.api.names import GROUP, JOB_RESOURCE, PLURAL_JOB, VERSION
from flexjob.api.problems import SpecError
from flexjob.api.readers import dijob
from flexjob.core.operator.replica_plan import desired_counts
from flexjob.core.operator.source_replicas import Written, edited_total, replicas_for_total
from flexjob.operator.watch_cache import version_number
from flexjob.platform.kubernetes.bodies import job_from_body

logger = logging.getLogger(__name__)
Body = dict[str, Any]


def _digest(spec: Body) -> str:
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16]


class Sources:
    """The API calls behind the handlers (run in threads: the client is synchronous)."""

    def __init__(self, client: ApiClient) -> None:
        self.custom = CustomObjectsApi(client)
        self.core = CoreV1Api(client)
        #: The last status written to each source, by (plural, namespace, name).
        self.written: dict[tuple[str, str, str], Body] = {}
        #: The version and ``replicas`` of each source's status as last written by us, or as
        #: last taken from someone else's edit (``core.operator.source_replicas``).
        self.ours: dict[tuple[str, str, str], Written] = {}
        self._edits = threading.RLock()  # our status writes and the edits seen, in order

    def _aggregator_configs(self) -> list[Body]:
        found: list[Body] = []
        for version in AGGREGATOR_CONFIG.versions:
            try:
                listing = cast(
                    Body,
                    self.custom.list_cluster_custom_object(
                        AGGREGATOR_CONFIG.group, version, AGGREGATOR_CONFIG.plural
                    ),
                )
            except ApiException as exc:
                if exc.status != 404:
                    raise
                continue
            found += [item for item in listing.get("items") or [] if item not in found]
        return found

    def job_for(self, kind: ForeignKind, body: Body) -> Body:
        """The ElasticJob that runs ``body`` (raises ``SpecError`` naming the source's fields)."""
        source = as_read(body)
        v1 = source_reader(body) is dijob.READERS[1]
        native = to_native(source, self._aggregator_configs() if v1 else None)
        meta = body["metadata"]
        owner = {
            "apiVersion": body["apiVersion"],
            "kind": kind.kind,
            "name": meta["name"],
            "uid": meta["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
        annotations = {
            SOURCE_ANNOTATION: kind.crd_name,
            SOURCE_SPEC_ANNOTATION: _digest(native["spec"]),
        }
        native["metadata"] = {
            "name": meta["name"],
            "namespace": meta["namespace"],
            "labels": dict(meta.get("labels") or {}),
            "annotations": annotations,
            "ownerReferences": [owner],
        }
        return native

    def sync_job(self, kind: ForeignKind, body: Body) -> str:
        """Create or update the source's ElasticJob; what was done, for the log."""
        meta = body["metadata"]
        namespace, name = meta["namespace"], meta["name"]
        try:
            job = self.job_for(kind, body)
        except SpecError as exc:
            self._warn(kind, body, "InvalidSpec", "; ".join(str(p) for p in exc.problems))
            return "invalid"
        try:
            self.custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL_JOB, job)
            return "created"
        except ApiException as exc:
            if exc.status != 409:
                raise
        existing = cast(
            Body,
            self.custom.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL_JOB, name),
        )
        theirs = existing["metadata"].get("annotations") or {}
        if theirs.get(SOURCE_ANNOTATION) != kind.crd_name:
            message = f"ElasticJob {namespace}/{name} exists and is not this {kind.kind}'s"
            self._warn(kind, body, "NameTaken", message)
            return "name taken"
        wanted = job["metadata"]["annotations"]
        if theirs.get(SOURCE_SPEC_ANNOTATION) == wanted[SOURCE_SPEC_ANNOTATION]:
            return "unchanged"
        patch = [
            {"op": "replace", "path": "/spec", "value": job["spec"]},
            {"op": "replace", "path": "/metadata/annotations", "value": {**theirs, **wanted}},
        ]
        # A JSON patch (the client's default is a merge patch, which would keep a key the
        # new spec no longer has): the spec is replaced whole.
        self.custom.patch_namespaced_custom_object(
            GROUP, VERSION, namespace, PLURAL_JOB, name, patch,
            _content_type="application/json-patch+json",
        )  # fmt: skip
        return "updated"

    def resync_v1_dijobs(self) -> list[str]:
        """Sync every DIJob v1 again, as an AggregatorConfig was created, changed or deleted:
        each one's conversion takes the cluster's (``sync_job``: its ElasticJob is updated
        when that changes it). What was done to each, for the log."""
        listing = cast(
            Body,
            self.custom.list_cluster_custom_object(DIJOB.group, DIJOB.versions[-1], DIJOB.plural),
        )
        done = []
        for item in listing.get("items") or []:
            meta = item["metadata"]
            if source_reader(item) is dijob.READERS[1] and not meta.get("deletionTimestamp"):
                done.append(f"{meta['namespace']}/{meta['name']} {self.sync_job(DIJOB, item)}")
        return done

    def write_status(self, job: Body) -> bool:
        """Write the ElasticJob's status to its source in the source's shape; False when
        the source is gone or already shows it."""
        meta = job["metadata"]
        owners = [o for o in meta.get("ownerReferences") or [] if o.get("controller")]
        crd = (meta.get("annotations") or {}).get(SOURCE_ANNOTATION, "")
        kind = next((k for k in FOREIGN_KINDS if k.crd_name == crd and k.job), None)
        if kind is None or not owners or not job.get("status"):
            return False
        group, _, version = owners[0]["apiVersion"].rpartition("/")
        namespace, name = meta["namespace"], owners[0]["name"]
        try:
            source = cast(
                Body,
                self.custom.get_namespaced_custom_object(
                    group, version, namespace, kind.plural, name
                ),
            )
        except ApiException as exc:
            if exc.status == 404:
                return False
            raise
        key = (kind.plural, namespace, name)
        if self.take_replicas_edit(kind, source, job):
            return False  # the job changes size: its next status is written then
        status = source_status(source, ElasticJobStatus.model_validate(job["status"]))
        if self.written.get(key) == status or source.get("status") == status:
            self.written[key] = status
            return False
        with self._edits:  # the write's own event is told from an edit only once it is known
            answer = self.custom.patch_namespaced_custom_object_status(
                group, version, namespace, kind.plural, name, {"status": status}
            )
            written_at = version_number(cast(Body, answer)["metadata"].get("resourceVersion"))
            self.ours[key] = Written(written_at, status.get("replicas"))
        self.written[key] = status
        return True

    def take_replicas_edit(self, kind: ForeignKind, source: Body, job: Body | None) -> bool:
        """When ``source`` (a DIJob v2) carries someone else's edit of ``status.replicas``
        (``source_replicas.edited_total``), make it the size of its ElasticJob (``job``, read
        when None) and say True; refused (``replicas_for_total``), a Warning event names why
        and its status is written over. False when there is no such edit."""
        if source_reader(source) is not dijob.READERS[0]:
            return False
        meta = source["metadata"]
        namespace, name = meta["namespace"], meta["name"]
        key = (kind.plural, namespace, name)
        at = version_number(meta.get("resourceVersion"))
        with self._edits:
            total = edited_total(source.get("status"), at, self.ours.get(key))
            if total is None:
                return False
            self.ours[key] = Written(at, total)  # taken once, by whichever handler sees it
        if job is None:
            job = cast(
                Body,
                self.custom.get_namespaced_custom_object(
                    GROUP, VERSION, namespace, PLURAL_JOB, name
                ),
            )
        model = job_from_body(job)
        counts = desired_counts(model, model.status or ElasticJobStatus())
        change = replicas_for_total(model, counts, total)
        if change.problem is not None:
            self._warn(kind, source, "ReplicasRefused", change.problem)
            self.written.pop(key, None)
            if job.get("status"):
                self.write_status(job)
            return False
        patch = {"replicas": {t.value: n for t, n in change.replicas.items()}}
        self.custom.patch_namespaced_custom_object_status(
            GROUP, VERSION, namespace, PLURAL_JOB, name, {"status": patch}
        )
        logger.info(
            "%s %s/%s: status.replicas %d taken: %s", kind.kind, namespace, name, total, patch
        )
        return True

    def _warn(self, kind: ForeignKind, body: Body, reason: str, message: str) -> None:
        meta = body["metadata"]
        logger.warning("%s %s/%s: %s", kind.kind, meta["namespace"], meta["name"], message)
        event = {
            "metadata": {"generateName": f"{meta['name']}.", "namespace": meta["namespace"]},
            "involvedObject": {
                "apiVersion": body["apiVersion"],
                "kind": kind.kind,
                "name": meta["name"],
                "namespace": meta["namespace"],
                "uid": meta["uid"],
            },
            "reason": reason,
            "message": message,
            "type": "Warning",
            "source": {"component": "flexjob-operator"},
        }
        try:
            self.core.create_namespaced_event(meta["namespace"], event)  # type: ignore[arg-type]
        except ApiException as exc:  # the warning is logged either way
            logger.debug("event for %s not recorded: %s", meta["name"], exc)


def register_foreign(registry: kopf.OperatorRegistry, client: ApiClient) -> Sources:
    """Register the handlers of every foreign job kind (each served version) on ``registry``."""
    sources = Sources(client)
    for kind in FOREIGN_KINDS:
        if not kind.job:
            continue
        for version in kind.versions:
            _register_source(registry, sources, kind, version)

    # Every served version lists every object: one watch sees each AggregatorConfig.
    config = (AGGREGATOR_CONFIG.group, AGGREGATOR_CONFIG.versions[-1], AGGREGATOR_CONFIG.plural)

    @kopf.on.event(*config, registry=registry, id="aggregator-config")
    async def aggregator_config(type: str | None, body: kopf.Body, **_: Any) -> None:
        if type is None:
            return  # the operator's first listing: each DIJob syncs on its own first event
        done = await asyncio.to_thread(sources.resync_v1_dijobs)
        logger.info("AggregatorConfig %s %s: DIJob v1 %s", body.metadata.name, type, done)

    @kopf.on.event(*JOB_RESOURCE, registry=registry, id="foreign-status")
    async def job_status(body: kopf.Body, **_: Any) -> None:
        annotations = body.metadata.annotations or {}
        if SOURCE_ANNOTATION in annotations and body.get("status"):
            await asyncio.to_thread(sources.write_status, dict(body))

    return sources


def _register_source(
    registry: kopf.OperatorRegistry, sources: Sources, kind: ForeignKind, version: str
) -> None:
    @kopf.on.event(kind.group, version, kind.plural, registry=registry, id=f"source-{version}")
    async def source_event(type: str | None, body: kopf.Body, **_: Any) -> None:
        if type == "DELETED" or body.metadata.get("deletionTimestamp"):
            return  # its ElasticJob is owned by it: the garbage collector deletes it
        done = await asyncio.to_thread(sources.sync_job, kind, dict(body))
        if done == "unchanged" and body.get("status"):
            await asyncio.to_thread(sources.take_replicas_edit, kind, dict(body), None)
        if done != "unchanged":
            meta = body.metadata
            logger.info("%s %s/%s: job %s", kind.kind, meta.namespace, meta.name, done)
