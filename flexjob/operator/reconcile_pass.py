"""One reconcile pass for one job: observe on the platform, decide with
``core.operator.reconcile``, act,
patch the status fields the operator owns (only those it changed).

The one pass every driver runs: the kopf handlers' work queue (``kubernetes.runner``), the
local loop (``local.loop``) and the benchmark. A job that is gone or being deleted is left
alone (its finalizer handler releases it). Before the implicit master of a job is first created
on a platform that keeps Secrets, the job's master-token Secret is made
(``core.operator.job_master``; the token is random, the Secret owned by the job). Not a loop and not
a scheduler: callers decide when to run a pass.

With ``parallel > 1`` runs of independent actions (creating or deleting replicas and recording
events) go out through a slow-start window, as Kubernetes' controllers create pods: one at
first, then twice as many per round trip up to ``parallel`` in flight (each send waits for a
free slot, not for a whole step to end); a failure ends the run, so a template the API
refuses costs one failed create (a ``FailedCreate`` Warning event on the job, and the pass
fails and is retried), not one per replica. Everything else stays a barrier in reconcile's
order (a service before the replicas that need its address, the status last).

With a ``WatchCache`` (the kopf operator) a pass reads the job, its pods, services and
ScalePlans from what the watches saw, listing them from the API only on the job's first pass,
and puts the pods it created and the status it wrote back into the cache.
"""

import contextlib
import logging
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import datetime

from flexjob.api import ElasticJob, ScalePlan
from flexjob.api.errors import OperatorError
from flexjob.api.roles import MASTER_TYPE
from flexjob.core.operator.actions import (
    Action,
    CreateReplica,
    DeleteJob,
    DeleteReplica,
    EventType,
    ReconcileResult,
    RecordEvent,
)
from flexjob.core.operator.job_master import (
    SECRET_TOKEN_KEY,
    JobMasterConfig,
    master_token_secret,
    needs_job_master,
)
from flexjob.core.operator.job_metrics import JOB_METRICS_SECRET, TOKEN_KEY
from flexjob.core.operator.job_network import job_network_policy
from flexjob.core.operator.master_state import claim_body
from flexjob.core.operator.reconcile import reconcile
from flexjob.core.operator.status_patch import StatusOwner, StatusPatch, owner_patch
from flexjob.operator import observing
from flexjob.operator.apply import Done, apply_actions
from flexjob.operator.node_credentials import with_node_credentials
from flexjob.operator.watch_cache import WatchCache, first_pending
from flexjob.platform.cluster import with_cluster_objects
from flexjob.platform.contract import (
    NetworkPolicyStore,
    NotFoundError,
    Platform,
    Replica,
    SecretStore,
    Service,
    VolumeClaimStore,
)
from flexjob.rpc.auth import di_server_url, new_token

logger = logging.getLogger(__name__)


def pending_plan(platform: Platform, namespace: str, job: str) -> ScalePlan | None:
    """The oldest ScalePlan of the job that is not Succeeded or Failed yet."""
    return first_pending(platform.list_scale_plans(namespace, job))


@dataclass(frozen=True, slots=True)
class PassResult:
    """What one pass saw and did: the job as stored after it, the replicas it observed, what
    ``core.operator.reconcile`` decided, and whether the pass deleted the job."""

    job: ElasticJob
    replicas: list[Replica]
    result: ReconcileResult
    deleted: bool
    #: How many runs of actions and status writes the pass handed to a dispatcher instead of
    #: waiting for them (each settles once: ``JobQueue.settled``).
    dispatched: int = 0

    @property
    def acted(self) -> bool:
        """Whether the pass changed anything but events."""
        return any(not isinstance(a, RecordEvent) for a in self.result.actions)


def is_deleting(job: ElasticJob) -> bool:
    extra = job.metadata.model_extra or {}
    return bool(extra.get("deletionTimestamp") or extra.get("deletion_timestamp"))


_INDEPENDENT = (CreateReplica, DeleteReplica, RecordEvent)


#: Sends a run of actions that creates replicas without the pass waiting (``create_dispatch``).
Dispatch = Callable[[tuple[str, str], Sequence[Action]], None]
#: Sends the job's status patch without the pass waiting (``create_dispatch``).
WriteStatus = Callable[[tuple[str, str], StatusPatch], None]


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


class ActionFailed(OperatorError):
    """An action the platform refused (not already-exists or not-found): the pass stops."""

    def __init__(self, action: Action, error: Exception) -> None:
        super().__init__(f"{type(action).__name__} failed: {error}")
        self.action = action
        self.error = error


def apply_one(platform: Platform, action: Action, done: Done | None) -> ActionFailed | None:
    try:
        apply_actions(platform, [action], done)
    except Exception as exc:
        return ActionFailed(action, exc)
    return None


@contextlib.contextmanager
def _threads(pool: ThreadPoolExecutor | None, size: int) -> Iterator[ThreadPoolExecutor]:
    """``pool`` when given (its threads live on: starting a thread holds a lock every pool
    in the process takes, the event loop's ``to_thread`` too), else one for this call."""
    if pool is not None:
        yield pool
        return
    with ThreadPoolExecutor(max_workers=size, thread_name_prefix="flexjob-apply") as own:
        yield own


def apply_in_batches(
    platform: Platform,
    actions: Sequence[Action],
    parallel: int,
    done: Done | None = None,
    pool: ThreadPoolExecutor | None = None,
) -> None:
    """Apply ``actions`` (``batches``, each through a slow-start window) on ``pool``'s threads
    (else on threads of its own); raises ``ActionFailed`` for the first failure, once the
    actions in flight then have ended (no later one is sent)."""
    if parallel <= 1 or len(actions) <= 1:
        for action in actions:
            failed = apply_one(platform, action, done)
            if failed is not None:
                raise failed
        return
    with _threads(pool, parallel) as threads:
        for batch in batches(actions):
            _slow_start(threads, platform, batch, parallel, done)


def _slow_start(
    pool: ThreadPoolExecutor,
    platform: Platform,
    batch: Sequence[Action],
    parallel: int,
    done: Done | None,
) -> None:
    """Send ``batch`` with at most ``window`` actions in flight: one at first, one more for
    each that succeeded (twice as many per round trip, as TCP's slow start), up to
    ``parallel``. Each send waits for a free slot, not for a whole step of sends to end, so
    one slow request does not hold the others back. After a failure nothing more is sent."""
    window, sent = 1, 0
    in_flight: dict[Future[ActionFailed | None], int] = {}
    failures: list[tuple[int, ActionFailed]] = []
    while in_flight or (not failures and sent < len(batch)):
        while not failures and sent < len(batch) and len(in_flight) < window:
            in_flight[pool.submit(apply_one, platform, batch[sent], done)] = sent
            sent += 1
        finished, _ = wait(in_flight, return_when=FIRST_COMPLETED)
        for future in finished:
            index, outcome = in_flight.pop(future), future.result()
            if outcome is None:
                window = min(window + 1, parallel)
            else:
                failures.append((index, outcome))
    if failures:
        raise min(failures, key=lambda failure: failure[0])[1]


def report_failure(platform: Platform, namespace: str, job: str, failed: ActionFailed) -> None:
    """Tell the job's owner why a replica could not be created (a Warning event on the job)."""
    if not isinstance(failed.action, CreateReplica):
        return
    message = f"Error creating {failed.action.request.name}: {failed.error}"
    try:
        platform.record_event(namespace, job, "FailedCreate", message, EventType.WARNING)
    except Exception:
        logger.exception("recording FailedCreate of %s/%s failed", namespace, job)


Observed = tuple[ElasticJob, list[Replica], list[Service], ScalePlan | None]


def _live_job(platform: Platform, namespace: str, name: str) -> ElasticJob | None:
    """The job; None when it is gone or being deleted."""
    try:
        job = platform.get_job(namespace, name)
    except NotFoundError:
        return None
    return None if is_deleting(job) else job


Listed = tuple[ElasticJob, list[Replica], list[Service], list[ScalePlan]]


def _list_all(
    platform: Platform,
    namespace: str,
    name: str,
    parallel: int,
    pool: ThreadPoolExecutor | None = None,
) -> Listed | None:
    """The job, its replicas, services and ScalePlans from the API; None when the job is gone
    or being deleted. With ``parallel > 1`` the four reads go out at once (one round trip of
    waiting instead of four; they were never one snapshot read one after another either:
    reconcile tolerates any interleaving, and the next event brings the next pass)."""
    if parallel <= 1:
        job = _live_job(platform, namespace, name)
        if job is None:
            return None
        replicas = platform.list_replicas(namespace, name)
        services = platform.list_services(namespace, name)
        return job, replicas, services, platform.list_scale_plans(namespace, name)
    with _threads(pool, 3) as threads:
        replicas_f = threads.submit(platform.list_replicas, namespace, name)
        services_f = threads.submit(platform.list_services, namespace, name)
        plans_f = threads.submit(platform.list_scale_plans, namespace, name)
        job = _live_job(platform, namespace, name)
        if job is None:
            return None
        return job, replicas_f.result(), services_f.result(), plans_f.result()


def observe(
    platform: Platform,
    namespace: str,
    name: str,
    parallel: int = 1,
    cache: WatchCache | None = None,
    pool: ThreadPoolExecutor | None = None,
) -> Observed | None:
    """The job, its replicas, its services and its pending ScalePlan; None when the job is
    gone or being deleted. From ``cache`` once a pass primed it (listed it recently)."""
    key = (namespace, name)
    cached = cache.read(key) if cache is not None else None
    if cached is None:
        listed_at = cache.clock() if cache is not None else 0.0
        listed = _list_all(platform, namespace, name, parallel, pool)
        if listed is None:
            return None
        job, replicas, services, plans = listed
        if cache is None:
            return job, replicas, services, first_pending(plans)
        cache.job_seen(job)
        cache.prime(key, replicas, services, plans, listed_at)
        cached = cache.read(key)  # what the list lacks but a dispatched create will make
        if cached is None:
            return job, replicas, services, first_pending(plans)
    known, pods, services_seen, plan = cached
    current = known if known is not None else _live_job(platform, namespace, name)
    if current is None or is_deleting(current):
        return None
    if known is None and cache is not None:
        cache.job_seen(current)
    return current, pods, services_seen, plan


def reconcile_job(
    platform: Platform,
    namespace: str,
    name: str,
    now: datetime,
    parallel: int = 1,
    job_master: JobMasterConfig | None = None,
    server_url: str | None = None,
    server_token: str | None = None,
    cache: WatchCache | None = None,
    pool: ThreadPoolExecutor | None = None,
    dispatch: Dispatch | None = None,
    write_status: WriteStatus | None = None,
) -> PassResult | None:
    """Run one pass; None when there was no job to reconcile (gone, or being deleted).
    ``job_master``: how to run the master of jobs that need one (``core.operator.job_master``);
    ``server_url``: the flexjob server DI coordinators ask (``FLEXJOB_SERVER_URL``), which
    with ``server_token`` (``FLEXJOB_SERVER_TOKEN``) they reach through their job's key.
    ``pool``: threads for the reads and actions sent at once (else each pass starts its own).
    ``dispatch`` (with ``cache``): where the runs of actions that create replicas go instead
    of the pass waiting for them (``create_dispatch``; the cache expects their replicas);
    ``write_status`` (with ``cache``): where its status patch goes, the same way."""
    seen = observe(platform, namespace, name, parallel, cache, pool)
    if seen is None:
        return None
    job, replicas, services, plan = seen
    job = with_cluster_objects(platform, job)  # a DI job's aggregator from the cluster's config
    observing.replicas(namespace, name, replicas)
    _ensure_master_token(platform, job, replicas, job_master)
    _ensure_state_claim(platform, job, replicas, job_master)
    result = reconcile(
        job,
        replicas,
        now,
        services=services,
        plan=plan,
        job_master=job_master,
        server_url=server_url and di_server_url(server_url, server_token, namespace, name),
    )
    result = result._replace(
        actions=with_node_credentials(platform, job, result.actions, job_master)
    )
    done = feed(cache, namespace, name) if cache is not None else None
    handed, actions = hand_off(result.actions) if dispatch and cache else ([], result.actions)
    if handed and dispatch is not None:
        dispatch((namespace, name), handed)
    try:
        apply_in_batches(platform, actions, parallel, done, pool)
    except ActionFailed as failed:
        report_failure(platform, namespace, name, failed)
        raise
    if any(isinstance(a, DeleteJob) for a in result.actions):
        return PassResult(job, replicas, result, deleted=True, dispatched=int(bool(handed)))
    patch = owner_patch(job.status, result.status, StatusOwner.OPERATOR)
    if patch and write_status is not None and cache is not None:
        write_status((namespace, name), patch)
        return PassResult(job, replicas, result, deleted=False, dispatched=int(bool(handed)) + 1)
    if patch:
        try:
            job = platform.patch_job_status(namespace, name, patch)
            if cache is not None:
                cache.job_written(job)
        except NotFoundError:
            logger.info("job %s/%s disappeared while reconciling", namespace, name)
    return PassResult(job, replicas, result, deleted=False, dispatched=int(bool(handed)))


def hand_off(actions: Sequence[Action]) -> tuple[list[Action], list[Action]]:
    """The runs of independent actions (``batches``) that create replicas or only record
    events, to dispatch, and the other actions, for the pass itself, each in reconcile's order.
    Nothing a pass does after them needs them done: reconcile creates a replica only once the
    Service it needs was observed, and events are for people."""
    handed: list[Action] = []
    kept: list[Action] = []
    for batch in batches(actions):
        creates = any(isinstance(a, CreateReplica) for a in batch)
        events = all(isinstance(a, RecordEvent) for a in batch)
        (handed if creates or events else kept).extend(batch)
    return handed, kept


def feed(cache: WatchCache, namespace: str, name: str, run: int | None = None) -> Done:
    """Put each replica and service a pass created into ``cache`` as the create answered
    (``run``: the dispatch that sent them, when one did: ``create_dispatch``)."""

    def done(action: Action, result: object) -> None:
        if isinstance(result, Replica):
            cache.created((namespace, name), result, run)
        elif isinstance(result, Service):
            cache.service_seen((namespace, name), result, deleted=False)

    return done


def _ensure_master_token(
    platform: Platform, job: ElasticJob, replicas: list[Replica], options: JobMasterConfig | None
) -> None:
    """Create the job's NetworkPolicy (``core.operator.job_network``: only its own pods reach
    its master and PS), its master-token Secret, and its namespace's metrics-token Secret
    (``core.operator.job_metrics``; unowned: it outlives the job), before its master is first
    created."""
    if options is None or not options.token_secret or not isinstance(platform, SecretStore):
        return
    if not needs_job_master(job) or any(r.type is MASTER_TYPE for r in replicas):
        return
    if isinstance(platform, NetworkPolicyStore):
        policy = job_network_policy(job.namespace, job.name)
        if platform.ensure_network_policy(job.namespace, job.name, policy):
            logger.info("job %s/%s: master and PS fenced by NetworkPolicy", job.namespace, job.name)
    secret = master_token_secret(job.name)
    if platform.ensure_secret(job.namespace, job.name, secret, {SECRET_TOKEN_KEY: new_token()}):
        logger.info("job %s/%s: master token in Secret %s", job.namespace, job.name, secret)
    if platform.ensure_secret(job.namespace, "", JOB_METRICS_SECRET, {TOKEN_KEY: new_token()}):
        logger.info(
            "namespace %s: job metrics token in Secret %s", job.namespace, JOB_METRICS_SECRET
        )


def _ensure_state_claim(
    platform: Platform, job: ElasticJob, replicas: list[Replica], options: JobMasterConfig | None
) -> None:
    """Create the job's own master-state claim (``core.operator.master_state``; owned by the
    job), before its master is first created."""
    if options is None or options.state_storage is None:
        return
    if not isinstance(platform, VolumeClaimStore) or not needs_job_master(job):
        return
    volume = options.state_volume(job.name)
    if volume is None or not volume.created or any(r.type is MASTER_TYPE for r in replicas):
        return
    body = claim_body(job.namespace, job.name, options.state_storage)
    if platform.ensure_volume_claim(job.namespace, job.name, body):
        logger.info(
            "job %s/%s: master state on PersistentVolumeClaim %s",
            job.namespace,
            job.name,
            volume.claim,
        )
