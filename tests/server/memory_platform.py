"""An in-memory job store + replica table implementing the parts of ``Platform`` the server and
the Allocator use. For fast API tests (schemathesis); the local platform covers the real path."""

import copy
import threading
from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any

from flexjob.api import ElasticJob, ElasticJobStatus
from flexjob.core.operator.status_patch import (
    StatusPatch,
    apply_status_patch,
    normalize_status_patch,
)
from flexjob.platform.contract import NotFoundError, Replica, Service, WatchEvent


class MemoryPlatform:
    name = "memory"

    def __init__(self) -> None:
        self.jobs: dict[tuple[str, str], ElasticJob] = {}
        self.replicas: dict[tuple[str, str], Replica] = {}
        self.services: dict[tuple[str, str], Service] = {}
        self.deleted: list[str] = []
        self.cluster: dict[tuple[str, str], dict[str, Any]] = {}
        self._lock = threading.Lock()

    def apply_cluster_object(self, body: Mapping[str, Any]) -> bool:
        key = (str(body["kind"]), str(body["metadata"]["name"]))
        new = key not in self.cluster
        self.cluster[key] = copy.deepcopy(dict(body))
        return new

    def list_cluster_objects(self, kind: str) -> list[dict[str, Any]]:
        return [copy.deepcopy(v) for (k, _), v in sorted(self.cluster.items()) if k == kind]

    def delete_cluster_object(self, kind: str, name: str) -> None:
        self.cluster.pop((kind, name), None)

    def create_job(self, job: ElasticJob) -> ElasticJob:
        stored = job.model_copy(deep=True)
        if stored.status is None:
            stored.status = ElasticJobStatus()
        if stored.metadata.generation is None:
            stored.metadata.generation = 1
        self.jobs[(job.namespace, job.name)] = stored
        return stored.model_copy(deep=True)

    def get_job(self, namespace: str, name: str) -> ElasticJob:
        try:
            return self.jobs[(namespace, name)].model_copy(deep=True)
        except KeyError:
            raise NotFoundError(f"job {namespace}/{name} not found") from None

    def list_jobs(self, namespace: str | None = None) -> list[ElasticJob]:
        return [
            j.model_copy(deep=True)
            for (ns, _), j in self.jobs.items()
            if namespace is None or ns == namespace
        ]

    def patch_job_status(self, namespace: str, name: str, patch: StatusPatch) -> ElasticJob:
        """Merge ``patch`` under the lock, like the real platforms do atomically."""
        wire = normalize_status_patch(patch)
        with self._lock:
            job = self.get_job(namespace, name)
            job.status = apply_status_patch(job.status, wire)
            self.jobs[(namespace, name)] = job
            return job.model_copy(deep=True)

    def add_replica(self, replica: Replica, address: str | None = None) -> None:
        self.replicas[(replica.namespace, replica.name)] = replace(replica, address=address)

    def list_replicas(self, namespace: str, job: str | None = None) -> list[Replica]:
        return [
            r
            for (ns, _), r in self.replicas.items()
            if ns == namespace and (job is None or r.job == job)
        ]

    def delete_replica(self, namespace: str, name: str) -> None:
        self.deleted.append(name)
        self.replicas.pop((namespace, name), None)

    def list_services(self, namespace: str, job: str | None = None) -> list[Service]:
        return [
            s
            for (ns, _), s in self.services.items()
            if ns == namespace and (job is None or s.job == job)
        ]

    def watch_jobs(self, *_: Any, **__: Any) -> Iterator[WatchEvent[ElasticJob]]:
        return iter(())

    def close(self) -> None:
        pass
