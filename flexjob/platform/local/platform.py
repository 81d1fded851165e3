"""``LocalPlatform``: the Platform protocol on this machine (processes + SQLite).

Is the job store (``job_store.py``), the replica runtime (``runtime.py``) and the cluster objects
(``cluster_objects.py``) over one SQLite file under ``$FLEXJOB_HOME``, by inheritance (no
forwarders). Deciding what to run is ``core.operator.reconcile``'s job, driving it is
``flexjob.operator.local.loop``'s.
"""

import logging
import shutil
from collections.abc import Iterator
from pathlib import Path

from flexjob.api import ElasticJob, ScalePlan
from flexjob.core.replicas import Replica
from flexjob.platform.contract import WatchEvent
from flexjob.platform.local.cluster_objects import LocalClusterObjects
from flexjob.platform.local.db import Database
from flexjob.platform.local.job_store import LocalJobStore
from flexjob.platform.local.leases import LeaseStore
from flexjob.platform.local.paths import database_path, flexjob_home, is_inside, job_dir
from flexjob.platform.local.runtime import LocalRuntime
from flexjob.platform.watching import poll_watch

log = logging.getLogger(__name__)


class LocalPlatform(LocalJobStore, LocalRuntime, LocalClusterObjects):
    """The job store, the replica runtime and the cluster objects over one database: their
    methods are the Platform's; this class adds what spans them (``delete_job``) and the
    watches."""

    name = "local"

    def __init__(self, home: Path | str | None = None) -> None:
        self.home = flexjob_home(home)
        db = Database(database_path(self.home))
        LocalJobStore.__init__(self, db)
        LocalRuntime.__init__(self, db, self.home)
        LocalClusterObjects.__init__(self, db)
        self.leases = LeaseStore(db)

    def delete_job(self, namespace: str, name: str) -> None:
        """Remove the job and stop its replicas, whichever process started them; then its
        directory (logs, master state), so a job submitted again under the name starts clean."""
        super().delete_job(namespace, name)
        for replica in self.list_replicas(namespace, name):
            self.delete_replica(namespace, replica.name)
        for service in self.list_services(namespace, name):
            self.delete_service(namespace, service.name)
        directory = job_dir(self.home, namespace, name)
        if is_inside(self.home, directory):
            shutil.rmtree(directory, ignore_errors=True)
        elif directory.exists() or directory.is_symlink():
            log.warning("not removing %s: it leads outside %s", directory, self.home)

    def watch_jobs(
        self, namespace: str | None = None, timeout: float = 10.0
    ) -> Iterator[WatchEvent[ElasticJob]]:
        return poll_watch(
            lambda: self.list_jobs(namespace), lambda j: (j.namespace, j.name), timeout
        )

    def watch_scale_plans(
        self, namespace: str | None = None, timeout: float = 10.0
    ) -> Iterator[WatchEvent[ScalePlan]]:
        return poll_watch(
            lambda: self.list_scale_plans(namespace),
            lambda p: (p.metadata.namespace, p.metadata.name),
            timeout,
        )

    def watch_replicas(
        self, namespace: str, job: str | None = None, timeout: float = 10.0
    ) -> Iterator[WatchEvent[Replica]]:
        return poll_watch(lambda: self.list_replicas(namespace, job), lambda r: r.name, timeout)

    def close(self) -> None:
        """Stop the replicas this process started."""
        self.stop_children()
