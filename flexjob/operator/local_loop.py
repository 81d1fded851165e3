"""The operator for the local platform: a polling loop that drives ``core.reconcile``.

It runs inside ``flexjob submit`` (or its detached background process) for one job: each round
it reads the job, its replicas, services and pending ScalePlans from the platform, reconciles,
applies the actions and patches the status fields the operator owns (only those it changed, so
a scale request or an allocation written meanwhile survives). It ends when the job is finished
and cleaned up (and, with ``ttlSecondsAfterFinished``, deleted) or when someone deleted the job.
Jobs that need a flexjob job master and declare none get one (``core.job_master``): here it
runs as ``sys.executable -m flexjob master`` and writes its ScalePlans to this local platform.
Not for Kubernetes (that is the kopf operator).
"""

import logging
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from flexjob.api import ElasticJob, ScalePlan, ScalePlanPhase
from flexjob.api.names import ENV_HOME
from flexjob.core.actions import DeleteJob, RecordEvent
from flexjob.core.job_master import JobMasterOptions
from flexjob.core.reconcile import reconcile
from flexjob.core.status_patch import StatusOwner, owner_patch
from flexjob.operator.apply import apply_actions
from flexjob.platform.api import NotFoundError, Platform, Replica

log = logging.getLogger(__name__)

Clock = Callable[[], datetime]
Observer = Callable[[ElasticJob, list[Replica]], None]


def utc_now() -> datetime:
    return datetime.now(UTC)


def local_job_master(home: Path) -> JobMasterOptions:
    """How implicit job masters run on the local platform rooted at ``home``."""
    return JobMasterOptions(
        command=(sys.executable, "-m", "flexjob"),
        scale_plan_platform="local",
        env={ENV_HOME: str(home)},
        state_root=str(home / "jobs"),
    )


def pending_plan(platform: Platform, job: ElasticJob) -> ScalePlan | None:
    """The oldest ScalePlan of ``job`` that is not Succeeded or Failed yet."""
    for plan in platform.list_scale_plans(job.namespace, job.name):
        if plan.status is None or plan.status.phase not in (
            ScalePlanPhase.SUCCEEDED,
            ScalePlanPhase.FAILED,
        ):
            return plan
    return None


@dataclass
class RoundResult:
    job: ElasticJob | None
    replicas: list[Replica]
    acted: bool
    done: bool


class LocalJobLoop:
    """Reconciles one job until it is done; ``observer`` sees the job after every round."""

    def __init__(
        self,
        platform: Platform,
        namespace: str,
        name: str,
        *,
        interval: float = 0.2,
        clock: Clock = utc_now,
        observer: Observer | None = None,
        job_master: JobMasterOptions | None = None,
    ) -> None:
        self.platform = platform
        self.job_master = job_master
        self.namespace = namespace
        self.name = name
        self.interval = interval
        self.clock = clock
        self.observer = observer

    def step(self) -> RoundResult:
        try:
            job = self.platform.get_job(self.namespace, self.name)
        except NotFoundError:
            self._stop_orphans()
            return RoundResult(None, [], acted=False, done=True)
        replicas = self.platform.list_replicas(self.namespace, self.name)
        services = self.platform.list_services(self.namespace, self.name)
        plan = pending_plan(self.platform, job)
        actions, status = reconcile(
            job, replicas, self.clock(), services=services, plan=plan, job_master=self.job_master
        )
        apply_actions(self.platform, actions)
        if any(isinstance(a, DeleteJob) for a in actions):
            return RoundResult(None, replicas, acted=True, done=True)
        patch = owner_patch(job.status, status, StatusOwner.OPERATOR)
        if patch:
            job = self.platform.patch_job_status(self.namespace, self.name, patch)
        acted = any(not isinstance(a, RecordEvent) for a in actions)
        if self.observer is not None:
            self.observer(job, replicas)
        waiting_for_ttl = job.spec.ttl_seconds_after_finished is not None
        done = status.phase.finished and not acted and not waiting_for_ttl
        return RoundResult(job, replicas, acted=acted, done=done)

    def run(self, stop: threading.Event | None = None) -> ElasticJob | None:
        """Loop until the job is done (returns its last state; None if it was deleted)."""
        stop = stop or threading.Event()
        last: ElasticJob | None = None
        while not stop.is_set():
            result = self.step()
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
