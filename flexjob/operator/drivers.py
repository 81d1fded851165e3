"""Who carries out a submitted job: the in-process local operator, or an operator elsewhere.

For: ``flexjob submit``, which stores a job and then either detaches or follows it to its end
without knowing which platform it is on. ``driver_for(platform)`` is the one place that knows:
the local platform has no operator of its own, so the job's operator runs in this process (or
detached in the background, ``operator.local.runner``); on Kubernetes the cluster's operator
does the work and the driver only watches. Not for reconciling (``reconcile_pass``).
"""

import time
from typing import Protocol

from flexjob.api import ElasticJob
from flexjob.operator.local.loop import Observer
from flexjob.platform.contract import NotFoundError, Platform
from flexjob.platform.local.paths import job_dir


class JobDriver(Protocol):
    def detach(self, namespace: str, name: str) -> str:
        """Leave the job to run; a line saying who runs it."""
        ...

    def run(self, namespace: str, name: str, observer: Observer) -> ElasticJob | None:
        """Until the job finishes: its last state (None if it was deleted); ``observer``
        sees it along the way."""
        ...


class InProcessOperator:
    """The local platform: this process (or a detached child) is the job's operator."""

    def __init__(self, platform: Platform) -> None:
        from flexjob.platform.local import LocalPlatform

        assert isinstance(platform, LocalPlatform)
        self.platform = platform

    def detach(self, namespace: str, name: str) -> str:
        from flexjob.operator.local import runner

        pid = runner.start_detached(self.platform, namespace, name)
        logs = job_dir(self.platform.home, namespace, name) / "logs"
        return f"local operator pid {pid}; replica logs in {logs}"

    def run(self, namespace: str, name: str, observer: Observer) -> ElasticJob | None:
        from flexjob.operator.local import runner

        final = runner.run_job(self.platform, namespace, name, observer=observer)
        if final is not None:
            observer(final, self.platform.list_replicas(namespace, name))
        return final


class ClusterOperator:
    """An operator elsewhere (Kubernetes): the driver only follows the job."""

    def __init__(self, platform: Platform, interval: float = 0.5) -> None:
        self.platform = platform
        self.interval = interval

    def detach(self, namespace: str, name: str) -> str:
        return f"the {self.platform.name} operator runs it"

    def run(self, namespace: str, name: str, observer: Observer) -> ElasticJob | None:
        while True:
            try:
                job = self.platform.get_job(namespace, name)
            except NotFoundError:
                return None
            observer(job, self.platform.list_replicas(namespace, name))
            if job.status is not None and job.status.phase.finished:
                return job
            time.sleep(self.interval)


def driver_for(platform: Platform) -> JobDriver:
    from flexjob.platform.local import LocalPlatform

    if isinstance(platform, LocalPlatform):
        return InProcessOperator(platform)
    return ClusterOperator(platform)
