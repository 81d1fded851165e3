"""``LocalPlatform``: the Platform protocol on this machine (processes + SQLite).

Composes the job store (``store.py``) and the replica runtime (``runtime.py``) over one SQLite
file under ``$FLEXJOB_HOME``. Deciding what to run is ``core.reconcile``'s job, driving it is
``flexjob.operator.local.loop``'s.
"""

import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from flexjob.api import ElasticJob, ScalePlan, ScalePlanStatus
from flexjob.core.actions import EventType
from flexjob.core.replicas import Replica, ReplicaRequest, Service, ServiceRequest
from flexjob.core.status_patch import StatusPatch
from flexjob.platform.api import Event, WatchEvent
from flexjob.platform.local.cluster_objects import LocalClusterObjects
from flexjob.platform.local.db import Database
from flexjob.platform.local.leases import LeaseStore
from flexjob.platform.local.paths import database_path, flexjob_home, job_dir
from flexjob.platform.local.runtime import LocalRuntime
from flexjob.platform.local.store import LocalJobStore
from flexjob.platform.watching import poll_watch


class LocalPlatform:
    name = "local"

    def __init__(self, home: Path | str | None = None) -> None:
        self.home = flexjob_home(home)
        self.db = Database(database_path(self.home))
        self.store = LocalJobStore(self.db)
        self.runtime = LocalRuntime(self.db, self.home)
        self.leases = LeaseStore(self.db)
        self.cluster = LocalClusterObjects(self.db)

    # --- jobs ----------------------------------------------------------------------------------
    def create_job(self, job: ElasticJob) -> ElasticJob:
        return self.store.create_job(job)

    def get_job(self, namespace: str, name: str) -> ElasticJob:
        return self.store.get_job(namespace, name)

    def list_jobs(self, namespace: str | None = None) -> list[ElasticJob]:
        return self.store.list_jobs(namespace)

    def patch_job_status(self, namespace: str, name: str, patch: StatusPatch) -> ElasticJob:
        return self.store.patch_job_status(namespace, name, patch)

    def delete_job(self, namespace: str, name: str) -> None:
        """Remove the job and stop its replicas, whichever process started them; then its
        directory (logs, master state), so a job submitted again under the name starts clean."""
        self.store.delete_job(namespace, name)
        for replica in self.runtime.list_replicas(namespace, name):
            self.runtime.delete_replica(namespace, replica.name)
        for service in self.runtime.list_services(namespace, name):
            self.runtime.delete_service(namespace, service.name)
        shutil.rmtree(job_dir(self.home, namespace, name), ignore_errors=True)

    def watch_jobs(
        self, namespace: str | None = None, timeout: float = 10.0
    ) -> Iterator[WatchEvent[ElasticJob]]:
        return poll_watch(
            lambda: self.list_jobs(namespace), lambda j: (j.namespace, j.name), timeout
        )

    # --- scale plans ---------------------------------------------------------------------------
    def create_scale_plan(self, plan: ScalePlan) -> ScalePlan:
        return self.store.create_scale_plan(plan)

    def list_scale_plans(self, namespace: str, job: str | None = None) -> list[ScalePlan]:
        return self.store.list_scale_plans(namespace, job)

    def patch_scale_plan_status(
        self, namespace: str, name: str, status: ScalePlanStatus
    ) -> ScalePlan:
        return self.store.patch_scale_plan_status(namespace, name, status)

    def watch_scale_plans(
        self, namespace: str | None = None, timeout: float = 10.0
    ) -> Iterator[WatchEvent[ScalePlan]]:
        return poll_watch(
            lambda: self.store.list_scale_plans(namespace),
            lambda p: (p.metadata.namespace, p.metadata.name),
            timeout,
        )

    # --- events --------------------------------------------------------------------------------
    def record_event(
        self, namespace: str, job: str, reason: str, message: str, type: EventType
    ) -> None:
        self.store.record_event(namespace, job, reason, message, type)

    def list_events(self, namespace: str, job: str) -> list[Event]:
        return self.store.list_events(namespace, job)

    # --- cluster-scoped objects (DI's AggregatorConfig) ----------------------------------------
    def apply_cluster_object(self, body: Mapping[str, Any]) -> bool:
        return self.cluster.apply_cluster_object(body)

    def list_cluster_objects(self, kind: str) -> list[dict[str, Any]]:
        return self.cluster.list_cluster_objects(kind)

    def delete_cluster_object(self, kind: str, name: str) -> None:
        self.cluster.delete_cluster_object(kind, name)

    # --- replicas and services -----------------------------------------------------------------
    def create_replica(self, request: ReplicaRequest) -> Replica:
        return self.runtime.create_replica(request)

    def delete_replica(self, namespace: str, name: str) -> None:
        self.runtime.delete_replica(namespace, name)

    def list_replicas(self, namespace: str, job: str | None = None) -> list[Replica]:
        return self.runtime.list_replicas(namespace, job)

    def watch_replicas(
        self, namespace: str, job: str | None = None, timeout: float = 10.0
    ) -> Iterator[WatchEvent[Replica]]:
        return poll_watch(lambda: self.list_replicas(namespace, job), lambda r: r.name, timeout)

    def create_service(self, request: ServiceRequest) -> Service:
        return self.runtime.create_service(request)

    def delete_service(self, namespace: str, name: str) -> None:
        self.runtime.delete_service(namespace, name)

    def list_services(self, namespace: str, job: str | None = None) -> list[Service]:
        return self.runtime.list_services(namespace, job)

    def read_logs(
        self, namespace: str, replica: str, follow: bool = False, timeout: float | None = None
    ) -> Iterator[str]:
        return self.runtime.read_logs(namespace, replica, follow, timeout)

    def close(self) -> None:
        """Stop the replicas this process started."""
        self.runtime.stop_children()
