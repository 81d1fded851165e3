"""One reconcile pass for one job: observe on the platform, decide with ``core.reconcile``, act,
patch the status fields the operator owns (only those it changed).

The one pass every driver runs: the kopf handlers' work queue (``kubernetes.runner``), the
local loop (``local.loop``) and the benchmark. A job that is gone or being deleted is left
alone (its finalizer handler releases it). Before the implicit master of a job is first created
on a platform that keeps Secrets, the job's master-token Secret is made (``core.job_master``;
the token is random, the Secret owned by the job). Not a loop and not a scheduler: callers
decide when to run a pass.

With ``parallel > 1`` runs of independent actions (creating or deleting replicas and recording
events) go out ``parallel`` at a time; everything else stays a barrier in reconcile's order
(a service before the replicas that need its address, the status last).
"""

import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime

from flexjob.api import ElasticJob, ReplicaType, ScalePlan, ScalePlanPhase
from flexjob.core.actions import (
    Action,
    CreateReplica,
    DeleteJob,
    DeleteReplica,
    ReconcileResult,
    RecordEvent,
)
from flexjob.core.job_master import (
    SECRET_TOKEN_KEY,
    JobMasterConfig,
    master_token_secret,
    needs_job_master,
)
from flexjob.core.reconcile import reconcile
from flexjob.core.status_patch import StatusOwner, owner_patch
from flexjob.operator import observing
from flexjob.operator.apply import apply_actions
from flexjob.platform.api import NotFoundError, Platform, Replica, SecretStore, Service
from flexjob.platform.cluster import with_cluster_objects
from flexjob.rpc.auth import di_server_url, new_token

logger = logging.getLogger(__name__)


def pending_plan(platform: Platform, namespace: str, job: str) -> ScalePlan | None:
    """The oldest ScalePlan of the job that is not Succeeded or Failed yet."""
    for plan in platform.list_scale_plans(namespace, job):
        if plan.status is None or plan.status.phase not in (
            ScalePlanPhase.SUCCEEDED,
            ScalePlanPhase.FAILED,
        ):
            return plan
    return None


@dataclass(frozen=True, slots=True)
class PassResult:
    """What one pass saw and did: the job as stored after it, the replicas it observed, what
    ``core.reconcile`` decided, and whether the pass deleted the job."""

    job: ElasticJob
    replicas: list[Replica]
    result: ReconcileResult
    deleted: bool

    @property
    def acted(self) -> bool:
        """Whether the pass changed anything but events."""
        return any(not isinstance(a, RecordEvent) for a in self.result.actions)


def is_deleting(job: ElasticJob) -> bool:
    extra = job.metadata.model_extra or {}
    return bool(extra.get("deletionTimestamp") or extra.get("deletion_timestamp"))


_INDEPENDENT = (CreateReplica, DeleteReplica, RecordEvent)


def batches(actions: Sequence[Action]) -> list[list[Action]]:
    """Split into batches that may run concurrently: maximal runs of independent actions, and
    every other action alone, in the original order."""
    out: list[list[Action]] = []
    for action in actions:
        independent = isinstance(action, _INDEPENDENT)
        if independent and out and isinstance(out[-1][0], _INDEPENDENT):
            out[-1].append(action)
        else:
            out.append([action])
    return out


def apply_in_batches(platform: Platform, actions: Sequence[Action], parallel: int) -> None:
    if parallel <= 1 or len(actions) <= 1:
        apply_actions(platform, actions)
        return
    with ThreadPoolExecutor(max_workers=parallel, thread_name_prefix="flexjob-apply") as pool:
        for batch in batches(actions):
            list(pool.map(lambda action: apply_actions(platform, [action]), batch))


Observed = tuple[ElasticJob, list[Replica], list[Service], ScalePlan | None]


def _live_job(platform: Platform, namespace: str, name: str) -> ElasticJob | None:
    """The job; None when it is gone or being deleted."""
    try:
        job = platform.get_job(namespace, name)
    except NotFoundError:
        return None
    return None if is_deleting(job) else job


def observe(platform: Platform, namespace: str, name: str, parallel: int = 1) -> Observed | None:
    """The job, its replicas, its services and its pending ScalePlan; None when the job is
    gone or being deleted. With ``parallel > 1`` the four reads go out at once (one round
    trip of waiting instead of four; they were never one snapshot read one after another
    either: reconcile tolerates any interleaving, and the next event brings the next pass)."""
    if parallel <= 1:
        job = _live_job(platform, namespace, name)
        if job is None:
            return None
        replicas = platform.list_replicas(namespace, name)
        services = platform.list_services(namespace, name)
        return job, replicas, services, pending_plan(platform, job.namespace, job.name)
    with ThreadPoolExecutor(max_workers=3, thread_name_prefix="flexjob-observe") as pool:
        replicas_f = pool.submit(platform.list_replicas, namespace, name)
        services_f = pool.submit(platform.list_services, namespace, name)
        plan_f = pool.submit(pending_plan, platform, namespace, name)
        job = _live_job(platform, namespace, name)
        if job is None:
            return None
        return job, replicas_f.result(), services_f.result(), plan_f.result()


def reconcile_job(
    platform: Platform,
    namespace: str,
    name: str,
    now: datetime,
    parallel: int = 1,
    job_master: JobMasterConfig | None = None,
    server_url: str | None = None,
    server_token: str | None = None,
) -> PassResult | None:
    """Run one pass; None when there was no job to reconcile (gone, or being deleted).
    ``job_master``: how to run the master of jobs that need one (``core.job_master``);
    ``server_url``: the flexjob server DI coordinators ask (``FLEXJOB_SERVER_URL``), which
    with ``server_token`` (``FLEXJOB_SERVER_TOKEN``) they reach through their job's key."""
    seen = observe(platform, namespace, name, parallel)
    if seen is None:
        return None
    job, replicas, services, plan = seen
    job = with_cluster_objects(platform, job)  # a DI job's aggregator from the cluster's config
    observing.replicas(namespace, name, replicas)
    _ensure_master_token(platform, job, replicas, job_master)
    result = reconcile(
        job,
        replicas,
        now,
        services=services,
        plan=plan,
        job_master=job_master,
        server_url=server_url and di_server_url(server_url, server_token, namespace, name),
    )
    apply_in_batches(platform, result.actions, parallel)
    if any(isinstance(a, DeleteJob) for a in result.actions):
        return PassResult(job, replicas, result, deleted=True)
    patch = owner_patch(job.status, result.status, StatusOwner.OPERATOR)
    if patch:
        try:
            job = platform.patch_job_status(namespace, name, patch)
        except NotFoundError:
            logger.info("job %s/%s disappeared while reconciling", namespace, name)
    return PassResult(job, replicas, result, deleted=False)


def _ensure_master_token(
    platform: Platform, job: ElasticJob, replicas: list[Replica], options: JobMasterConfig | None
) -> None:
    """Create the job's master-token Secret before its implicit master is first created."""
    if options is None or not options.token_secret or not isinstance(platform, SecretStore):
        return
    if not needs_job_master(job) or any(r.type is ReplicaType.MASTER for r in replicas):
        return
    secret = master_token_secret(job.name)
    if platform.ensure_secret(job.namespace, job.name, secret, {SECRET_TOKEN_KEY: new_token()}):
        logger.info("job %s/%s: master token in Secret %s", job.namespace, job.name, secret)
