"""Running the local operator for one job: in this process, or as a detached background one.

``run_job`` drives ``LocalJobLoop`` until the job is done and, when interrupted (a stop
signal: Ctrl-C, SIGTERM or SIGHUP), stops the job's replicas (each gets SIGTERM and a grace
period) and marks it Failed: a foreground ``flexjob submit`` owns its job. ``start_detached`` starts
``python -m flexjob local-operator`` in its own session with output in the job's directory, for
``flexjob submit --detach``.
"""

import logging
import subprocess
import sys
from datetime import UTC, datetime

from flexjob.api import ElasticJob, JobPhase
from flexjob.core.phases import set_phase, timestamp
from flexjob.core.status_patch import StatusOwner, owner_patch
from flexjob.operator.local.loop import LocalJobLoop, Observer, local_job_master
from flexjob.platform.api import NotFoundError
from flexjob.platform.local import LocalPlatform
from flexjob.platform.local.paths import job_dir
from flexjob.platform.stop_signals import raise_on_stop_signals

log = logging.getLogger(__name__)

INTERRUPTED_MESSAGE = "the local operator was interrupted; replicas were stopped"


def run_job(
    platform: LocalPlatform,
    namespace: str,
    name: str,
    observer: Observer | None = None,
    interval: float = 0.2,
) -> ElasticJob | None:
    """Reconcile the job until it is done; its last state (None if it was deleted)."""
    loop = LocalJobLoop(
        platform,
        namespace,
        name,
        interval=interval,
        observer=observer,
        job_master=local_job_master(platform.home),
    )
    with raise_on_stop_signals():
        try:
            return loop.run()
        except KeyboardInterrupt:  # StopRequested too
            platform.close()
            return _mark_interrupted(platform, namespace, name)


def _mark_interrupted(platform: LocalPlatform, namespace: str, name: str) -> ElasticJob | None:
    try:
        job = platform.get_job(namespace, name)
    except NotFoundError:
        return None
    if job.status is None or job.status.phase.finished:
        return job
    status = job.status.model_copy(deep=True)
    now = datetime.now(UTC)
    set_phase(status, JobPhase.FAILED, now, "Interrupted", INTERRUPTED_MESSAGE)
    status.completion_time = timestamp(now)
    return platform.patch_job_status(
        namespace, name, owner_patch(job.status, status, StatusOwner.OPERATOR)
    )


def start_detached(platform: LocalPlatform, namespace: str, name: str) -> int:
    """Start the background operator for a stored job; its pid."""
    directory = job_dir(platform.home, namespace, name)
    directory.mkdir(parents=True, exist_ok=True)
    with (directory / "operator.log").open("ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "flexjob", "local-operator", name, "--namespace", namespace],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return proc.pid
