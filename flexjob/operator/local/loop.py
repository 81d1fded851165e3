"""The operator for the local platform: a polling loop that drives ``core.operator.reconcile``.

It runs inside ``flexjob submit`` (or its detached background process) for one job: each round
is the shared ``operator.reconcile_pass`` (observe, reconcile, apply, patch the operator's
status fields). It ends when the job is finished
and cleaned up (and, with ``ttlSecondsAfterFinished``, deleted) or when someone deleted the job.
Jobs that need a flexjob job master and declare none get one (``core.operator.job_master``): here it
runs as ``sys.executable -m flexjob master`` and writes its ScalePlans to this local platform.
Not for Kubernetes (that is the kopf operator).
"""

import logging
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass
from pathlib import Path

from flexjob.api import ElasticJob
from flexjob.api.names import ENV_HOME
from flexjob.core.clock import WallClock, utc_now
from flexjob.core.operator.job_master import JobMasterConfig
from flexjob.operator import observing
from flexjob.operator.reconcile_pass import reconcile_job
from flexjob.platform.contract import Platform, Replica
from flexjob.platform.local.paths import jobs_root

log = logging.getLogger(__name__)

Observer = Callable[[ElasticJob, list[Replica]], None]


def local_job_master(home: Path) -> JobMasterConfig:
    """How implicit job masters run on the local platform rooted at ``home``."""
    return JobMasterConfig(
        command=(sys.executable, "-m", "flexjob"),
        scale_plan_platform="local",
        env={ENV_HOME: str(home)},
        state_root=str(jobs_root(home)),
        token_root=str(jobs_root(home)),
    )


@dataclass
class RoundResult:
    job: ElasticJob | None
    replicas: list[Replica]
    acted: bool
    done: bool


@dataclass(eq=False)
class LocalJobLoop:
    """Reconciles one job until it is done; ``observer`` sees the job after every round."""

    platform: Platform
    namespace: str
    name: str
    _: KW_ONLY
    interval: float = 0.2
    clock: WallClock = utc_now
    observer: Observer | None = None
    job_master: JobMasterConfig | None = None
    #: The flexjob server DI coordinators ask (``KUBERNETES_SERVER_URL``).
    server_url: str | None = None
    #: The server's token: DI roles then reach it through their job's key.
    server_token: str | None = None

    def step(self) -> RoundResult:
        passed = reconcile_job(
            self.platform,
            self.namespace,
            self.name,
            self.clock(),
            job_master=self.job_master,
            server_url=self.server_url,
            server_token=self.server_token,
        )
        if passed is None:
            self._stop_orphans()
            return RoundResult(None, [], acted=False, done=True)
        if passed.deleted:
            return RoundResult(None, passed.replicas, acted=True, done=True)
        job = passed.job
        if self.observer is not None:
            self.observer(job, passed.replicas)
        waiting_for_ttl = job.spec.ttl_seconds_after_finished is not None
        done = passed.result.status.phase.finished and not passed.acted and not waiting_for_ttl
        return RoundResult(job, passed.replicas, acted=passed.acted, done=done)

    def run(self, stop: threading.Event | None = None) -> ElasticJob | None:
        """Loop until the job is done (returns its last state; None if it was deleted)."""
        stop = stop or threading.Event()
        last: ElasticJob | None = None
        while not stop.is_set():
            started = time.perf_counter()
            result = self.step()
            observing.reconciled(time.perf_counter() - started, "local")
            last = result.job
            if result.done:
                return last
            if not result.acted:
                stop.wait(self.interval)
        return last

    def _stop_orphans(self) -> None:
        """The job is gone: stop whatever of it still runs."""
        for replica in self.platform.list_replicas(self.namespace, self.name):
            self.platform.delete_replica(self.namespace, replica.name)
        for service in self.platform.list_services(self.namespace, self.name):
            self.platform.delete_service(self.namespace, service.name)
