"""Running the local operator for one job: in this process, or as a detached background one.

``run_job`` takes the job's operator lease (refused while another live operator holds it),
writes the job's master token file (0600, once: ``core.operator.job_master``),
adopts the replicas a previous operator left running (a killed operator: their exits are read
from their exit files, so a replica that finished meanwhile is not run again), drives
``LocalJobLoop`` until the job is done, renewing the lease every round, and, when interrupted
(a stop signal: Ctrl-C, SIGTERM or SIGHUP), stops the job's replicas (each gets SIGTERM and a
grace period) and marks it Failed: a foreground ``flexjob submit`` owns its job.
``start_detached`` starts ``python -m flexjob operator --platform local NAME`` in its own
session with output in the job's directory, for ``flexjob submit --detach`` and
``flexjob operator --detach``.
"""

import logging
import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from flexjob.api import ElasticJob, JobPhase
from flexjob.api.name_rules import check_name, name_problem
from flexjob.api.names import ENV_HOME, ENV_SERVER_TOKEN, ENV_SERVER_URL
from flexjob.core.operator.job_master import master_token_file
from flexjob.core.operator.phases import set_phase, timestamp
from flexjob.core.operator.status_patch import StatusOwner, owner_patch
from flexjob.operator.local.loop import LocalJobLoop, Observer, local_job_master
from flexjob.platform.contract import NotFoundError, Replica
from flexjob.platform.local import LocalPlatform
from flexjob.platform.local.leases import RENEW_SECONDS, holder_alive
from flexjob.platform.local.paths import job_dir
from flexjob.platform.stop_signals import raise_on_stop_signals
from flexjob.rpc.auth import new_token, write_token_file

log = logging.getLogger(__name__)

INTERRUPTED_MESSAGE = "the local operator was interrupted; replicas were stopped"


def run_job(
    platform: LocalPlatform,
    namespace: str,
    name: str,
    observer: Observer | None = None,
    interval: float = 0.2,
) -> ElasticJob | None:
    """Reconcile the job until it is done; its last state (None if it was deleted).
    ``LeaseHeldError`` when another live operator runs the job; ``InvalidSpecError`` naming
    the field when ``namespace`` or ``name`` is no job name (``api.name_rules``), before
    anything is written: every path of the job is built from them."""
    check_name("metadata.namespace", namespace)
    check_name("metadata.name", name)
    platform.leases.acquire(namespace, name)
    options = local_job_master(platform.home)
    token_file = Path(master_token_file(options.token_root, namespace, name))
    if not token_file.exists():  # kept across operator restarts: running replicas hold it
        write_token_file(token_file, new_token())
    renewed = time.monotonic()

    def each_round(job: ElasticJob, replicas: list[Replica]) -> None:
        nonlocal renewed
        if time.monotonic() - renewed >= RENEW_SECONDS:
            platform.leases.renew(namespace, name)
            renewed = time.monotonic()
        if observer is not None:
            observer(job, replicas)

    loop = LocalJobLoop(
        platform,
        namespace,
        name,
        interval=interval,
        observer=each_round,
        job_master=options,
        server_url=os.environ.get(ENV_SERVER_URL),
        server_token=os.environ.get(ENV_SERVER_TOKEN),
    )
    with raise_on_stop_signals():
        try:
            for adopted in platform.adopt(namespace, name):
                log.info(
                    "adopted replica %s/%s left running by a previous operator", namespace, adopted
                )
            return loop.run()
        except KeyboardInterrupt:  # StopRequested too
            platform.close()
            return _mark_interrupted(platform, namespace, name)
        finally:
            platform.leases.release(namespace, name)


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


def lacks_operator(platform: LocalPlatform, job: ElasticJob, now: float) -> bool:
    """Whether ``job`` is unfinished and its operator lease is missing, expired or held by a
    dead process: nobody maintains its phase."""
    finished = job.status is not None and job.status.phase.finished
    return not finished and not holder_alive(platform.leases.get(job.namespace, job.name), now)


def jobs_without_operator(platform: LocalPlatform) -> list[ElasticJob]:
    """The unfinished jobs no live operator maintains, whose names are job names: a stored
    job named otherwise (a database that no ``create_job`` check wrote) is logged and left
    alone, never run."""
    now = time.time()
    orphans = []
    for job in platform.list_jobs(None):
        problem = name_problem(job.namespace) or name_problem(job.name)
        if problem:
            log.warning("event=job_not_admitted problem=%r", problem)
        elif lacks_operator(platform, job, now):
            orphans.append(job)
    return orphans


def start_detached(platform: LocalPlatform, namespace: str, name: str) -> int:
    """Start the background operator for a stored job; its pid."""
    directory = job_dir(platform.home, namespace, name)
    directory.mkdir(parents=True, exist_ok=True)
    with (directory / "operator.log").open("ab") as out:
        proc = subprocess.Popen(
            [
                *(sys.executable, "-m", "flexjob", "operator", "--platform", "local"),
                *(name, "--namespace", namespace),
            ],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, ENV_HOME: str(platform.home)},
        )
    return proc.pid
