"""Run the kopf operator in-process: settings, login, handlers, the pod watch, the work queue,
webhooks.

``OperatorConfig`` says where to connect and how to behave; ``run_operator`` runs until its
task is cancelled (tests) or the process is stopped (``flexjob operator``). Handlers live in
``handlers`` and ``admission``; one pass of reconciling in ``reconcile_pass``.
"""

import asyncio
import contextlib
import dataclasses
import functools
import gc
import logging
import os
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any

import kopf
import kubernetes.client

from flexjob.api.names import ENV_SERVER_TOKEN, ENV_SERVER_URL, GROUP
from flexjob.core.clock import WallClock, utc_now
from flexjob.core.operator.actions import CreateService
from flexjob.core.operator.job_master import (
    KUBERNETES_STATE_ROOT,
    JobMasterConfig,
    kubernetes_job_master,
)
from flexjob.core.operator.master_state import PER_JOB_STATE, MasterStateStorage
from flexjob.observe import metrics_http
from flexjob.operator.create_dispatch import CreateDispatcher
from flexjob.operator.kubernetes.admission import register_admission
from flexjob.operator.kubernetes.foreign import register_foreign
from flexjob.operator.kubernetes.handlers import (
    CHANGE_HANDLED_KINDS,
    pod_handler,
    register_handlers,
    seen_by,
)
from flexjob.operator.kubernetes.pod_creates import PodCreates
from flexjob.operator.kubernetes.pod_watch import PodWatch
from flexjob.operator.reconcile_pass import PassResult, reconcile_job
from flexjob.operator.watch_cache import WatchCache
from flexjob.operator.work_queue import JobKey, JobQueue
from flexjob.platform.contract import Platform
from flexjob.platform.kubernetes import KubernetesPlatform
from flexjob.platform.kubernetes.connection import load_configuration

logger = logging.getLogger(__name__)

FINALIZER = f"{GROUP}/finalizer"


@dataclasses.dataclass(frozen=True, slots=True)
class WebhookConfig:
    """Where kopf's admission server listens; without cert/key it serves plain HTTP."""

    addr: str = "0.0.0.0"
    port: int = 9443
    host: str | None = None
    certfile: str | None = None
    pkeyfile: str | None = None

    def server(self) -> kopf.WebhookServer:
        insecure = self.certfile is None
        return kopf.WebhookServer(
            addr=self.addr,
            port=self.port,
            host=self.host,
            certfile=self.certfile,
            pkeyfile=self.pkeyfile,
            insecure=insecure,
        )


#: Default seconds a job waits for more pod events before its pass (``OperatorConfig``).
POD_EVENT_BATCH = 0.1


@dataclasses.dataclass(frozen=True, slots=True)
class OperatorConfig:
    """How the operator runs. ``server`` set: talk to that API URL without credentials (tests,
    ``kubectl proxy``); unset: the service account in a pod, else the kubeconfig."""

    namespaces: tuple[str, ...] = ()
    server: str | None = None
    kubeconfig: str | None = None
    context: str | None = None
    liveness: str | None = None
    workers: int = 4
    #: Replica creations/deletions one pass has in flight at the same time (at most; through
    #: a slow-start window of 1, 2, 4, ...: ``reconcile_pass``).
    parallel: int = 16
    resync_interval: float | None = 60.0
    #: Seconds a job waits for more pod events before its pass (``JobQueue.batch_period``;
    #: not for a pod that failed or is gone); 0: none waits.
    pod_event_batch: float = POD_EVENT_BATCH
    webhooks: WebhookConfig | None = None
    post_events: bool = True
    #: Once started, freeze what start-up made out of the collector's sight and collect less
    #: often (``settle_heap``): for an operator process of its own (``flexjob operator``).
    settle_heap: bool = False
    #: Watch-stream server timeout (seconds); small values make tests notice changes sooner.
    watch_timeout: float | None = None
    standalone: bool = True
    #: The image implicit job masters run in (``core.operator.job_master``; ``$FLEXJOB_IMAGE``, the
    #: operator's own); None: jobs get no implicit master.
    job_master_image: str | None = None
    #: Where ``/metrics`` listens (HOST:PORT or "off"); None: ``$FLEXJOB_METRICS_ADDR``, else
    #: 127.0.0.1 on a free port (``observe.metrics_http``).
    metrics_addr: str | None = None
    #: Where implicit masters keep their state (``core.operator.master_state``: by default a
    #: claim per job, created by the operator), mounted at ``job_master_state_root``.
    job_master_state: MasterStateStorage = PER_JOB_STATE
    job_master_state_root: str = KUBERNETES_STATE_ROOT
    #: A Secret (key ``token``, in each job's namespace) implicit masters read the brain's
    #: token from (``core.operator.job_master``); "": none.
    job_master_brain_token_secret: str = ""

    def connection(self) -> kopf.ConnectionInfo:
        """The API server's URL and credentials, read now (rotated tokens included)."""
        return connection_info(load_configuration(self.kubeconfig, self.context, self.server))

    def job_master(self) -> JobMasterConfig | None:
        if not self.job_master_image:
            return None
        return kubernetes_job_master(
            self.job_master_image,
            self.job_master_state,
            self.job_master_state_root,
            self.job_master_brain_token_secret,
        )


class DiffBaseOfChangeHandledKinds(kopf.AnnotationsDiffBaseStorage):
    """kopf's diff base (the last handled configuration, kept in an annotation) for the kinds
    with change-detecting handlers only (``handlers.CHANGE_HANDLED_KINDS``). kopf builds it
    from every event of every watched kind, a deep copy of the object each time, though only
    change and timer handlers use it: the services, ScalePlans and foreign kinds the operator
    watches through kopf have event handlers alone (a third of kopf's own time per event).
    An object without a ``kind`` is treated as change-handled."""

    def _skipped(self, body: kopf.Body) -> bool:
        kind = body.get("kind")
        return kind is not None and kind not in CHANGE_HANDLED_KINDS

    def build(
        self, *, body: kopf.Body, extra_fields: Iterable[Any] | None = None
    ) -> kopf.BodyEssence:
        if self._skipped(body):
            return kopf.BodyEssence()
        return super().build(body=body, extra_fields=extra_fields)

    def fetch(self, *, body: kopf.Body) -> kopf.BodyEssence | None:
        return kopf.BodyEssence() if self._skipped(body) else super().fetch(body=body)


def configure(settings: kopf.OperatorSettings, options: OperatorConfig) -> None:
    """kopf settings for flexjob: its own finalizer and annotation prefix, no status writes."""
    settings.persistence.finalizer = FINALIZER
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=GROUP)
    settings.persistence.diffbase_storage = DiffBaseOfChangeHandledKinds(
        prefix=GROUP, key="last-handled-configuration"
    )
    settings.posting.enabled = options.post_events
    settings.posting.level = logging.WARNING
    settings.watching.server_timeout = options.watch_timeout
    settings.watching.reconnect_backoff = 0.1
    settings.networking.error_backoffs = [0.1, 0.5, 1, 2, 5]
    settings.batching.idle_timeout = 0.1
    settings.batching.batch_window = 0.01
    settings.batching.exit_timeout = 1.0
    if options.webhooks is not None:
        settings.admission.server = options.webhooks.server()
        settings.admission.managed = None


def build_registry(
    platform: Platform, queue: JobQueue, options: OperatorConfig
) -> kopf.OperatorRegistry:
    registry = kopf.OperatorRegistry()
    register_handlers(registry, platform, queue, options.resync_interval)
    client = kubernetes.client.ApiClient(
        load_configuration(options.kubeconfig, options.context, options.server)
    )
    register_foreign(registry, client)
    if options.webhooks is not None:
        register_admission(registry)

    @kopf.on.login(registry=registry)
    def login(**_: Any) -> kopf.ConnectionInfo:
        # Reloaded on every (re-)login: rotated service-account tokens are picked up.
        return options.connection()

    return registry


def connection_info(configuration: kubernetes.client.Configuration) -> kopf.ConnectionInfo:
    """kopf's credentials from the client's configuration (token, client cert, CA)."""
    token = (configuration.api_key or {}).get("authorization") or (configuration.api_key or {}).get(
        "BearerToken"
    )
    scheme, _, value = (token or "").partition(" ")
    return kopf.ConnectionInfo(
        server=configuration.host,
        ca_path=configuration.ssl_ca_cert,
        insecure=not configuration.verify_ssl,
        scheme=scheme if value else None,
        token=value or None,
        certificate_path=configuration.cert_file,
        private_key_path=configuration.key_file,
    )


def make_queue(
    platform: Platform,
    workers: int,
    clock: Callable[[], datetime],
    parallel: int = 1,
    job_master: JobMasterConfig | None = None,
    in_flight: int | None = None,
    batch_period: float = 0.0,
    connection: Callable[[], kopf.ConnectionInfo] | None = None,
) -> JobQueue:
    """The work queue whose workers run ``reconcile_job`` (each applying ``parallel`` actions
    at a time) on threads of their own (a pass never waits behind the loop's other
    ``to_thread`` work); the passes share one pool for what they send at once, so that its
    threads are started once, not for every pass. A pass hands the runs of actions that
    create replicas to a ``CreateDispatcher`` (``in_flight`` creates at most in flight in the
    process, default ``workers * parallel``) and does not wait for them. ``batch_period``:
    how long a job waits for more pod events (``JobQueue.batch_period``). ``connection``
    (with a ``KubernetesPlatform``): the API server's, for sending the pod creates from one
    event loop of their own (``pod_creates``) instead of a thread each."""

    server_url = os.environ.get(ENV_SERVER_URL)
    server_token = os.environ.get(ENV_SERVER_TOKEN)
    passes = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="flexjob-reconcile")
    pool = ThreadPoolExecutor(
        max_workers=workers * max(parallel, 3), thread_name_prefix="flexjob-apply"
    )
    loops: list[asyncio.AbstractEventLoop] = []  # the loop the queue runs on, once it does

    def settled(key: JobKey, ok: bool) -> None:  # on a dispatcher thread
        loops[0].call_soon_threadsafe(queue.settled, key, ok)

    cache = WatchCache()
    limit = in_flight or workers * max(parallel, 1)
    creates = None
    if connection is not None and isinstance(platform, KubernetesPlatform):
        creates = PodCreates(platform, connection, limit)
    dispatcher = CreateDispatcher(platform, cache, parallel, limit, settled, creates)

    async def handle(key: JobKey) -> object:
        loops[:] = [asyncio.get_running_loop()]
        passed = await loops[0].run_in_executor(
            passes,
            functools.partial(
                _timed,
                queue.on_thread,
                reconcile_job,
                platform,
                key[0],
                key[1],
                clock(),
                parallel,
                job_master,
                server_url,
                server_token,
                queue.cache,
                pool,
                dispatcher.send,
                dispatcher.write_status,
            ),
        )
        if passed is not None and not passed.deleted:
            queue.handled(key, seen_by(passed.job.metadata.resource_version, passed.replicas))
        if passed is not None and any(isinstance(a, CreateService) for a in passed.result.actions):
            # A replica waits for the Service created here, and no watched object may change
            # to bring the job back (services are not watched): run the next pass now.
            queue.put(key)
        return passed

    queue = JobQueue(
        handle, workers=workers, cache=cache, dispatcher=dispatcher, batch_period=batch_period
    )
    return queue


def _timed(
    seconds: list[tuple[float, object]], work: Callable[..., PassResult | None], *args: Any
) -> PassResult | None:
    """``work(*args)``; its seconds on this thread and what it returned (None: it failed)
    appended to ``seconds``."""
    started = time.perf_counter()
    result = None
    try:
        result = work(*args)
        return result
    finally:
        seconds.append((time.perf_counter() - started, result))


async def run_operator(
    platform: Platform,
    options: OperatorConfig,
    *,
    queue: JobQueue | None = None,
    ready: asyncio.Event | None = None,
    clock: WallClock = utc_now,
) -> None:
    """Run kopf and the reconcile workers until cancelled."""
    queue = queue or make_queue(
        platform,
        options.workers,
        clock,
        options.parallel,
        options.job_master(),
        batch_period=options.pod_event_batch,
        connection=options.connection,
    )
    settings = kopf.OperatorSettings()
    configure(settings, options)
    registry = build_registry(platform, queue, options)
    pods = PodWatch(
        options.connection,
        pod_handler(queue),
        options.namespaces,
        options.watch_timeout,
    )
    kopf_ready = asyncio.Event()
    helpers = [
        asyncio.create_task(queue.run(), name="flexjob-reconcile-workers"),
        asyncio.create_task(pods.run(), name="flexjob-pod-watch"),
        asyncio.create_task(_all_set(ready, kopf_ready, pods.listed, settle=options.settle_heap)),
        asyncio.create_task(_trust_watches(queue, pods.listed)),
    ]
    endpoint = metrics_http.serve_configured(options.metrics_addr)
    try:
        await kopf.operator(
            registry=registry,
            settings=settings,
            standalone=options.standalone,
            clusterwide=not options.namespaces,
            namespaces=options.namespaces,
            ready_flag=kopf_ready,
            liveness_endpoint=options.liveness,
        )
    finally:
        if endpoint is not None:
            endpoint.stop()
        for helper in helpers:
            helper.cancel()
        for helper in helpers:
            with contextlib.suppress(asyncio.CancelledError):
                await helper


async def _trust_watches(queue: JobQueue, listed: asyncio.Event) -> None:
    """Once the pod watch listed every pod, a job's first pass reads the watch cache instead
    of listing (``WatchCache.watching``)."""
    await listed.wait()
    queue.cache.watching()


#: The collector's thresholds once the operator runs (Python's are 700, 10, 10).
GC_THRESHOLDS = (10_000, 20, 100)


def settle_heap() -> None:
    """After start-up: move every object alive now (modules, kopf's registry, the clients) to
    the permanent generation, and collect young objects every 10,000 allocations instead of
    700 and the whole heap a tenth as often. A collection stops every thread of the process:
    at 5,000 pods Python's defaults made ~600 collections, full ones of 0.1-0.5 s among them
    (``benchmarks/operator_scale.py`` at a load of 4-8), which every pass running then
    waited out."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


async def _all_set(
    result: asyncio.Event | None, *events: asyncio.Event, settle: bool = False
) -> None:
    """Set ``result`` once every one of ``events`` is (kopf ready, the pods listed); with
    ``settle``, ``settle_heap`` first."""
    for event in events:
        await event.wait()
    if settle:
        settle_heap()
    if result is not None:
        result.set()
