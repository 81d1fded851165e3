"""Starting and running a job master: ``start_master`` (in this process, returns a handle) and
``run_master`` (blocks until SIGTERM/SIGINT/SIGHUP or a stop event; what ``flexjob master`` runs).

Starts, in order: the job's torch ``TCPStore`` server (when ``config.host_store``;
``master.tcp_store``, no torch import, unless ``master.tcp_store_check`` finds that the
installed torch speaks another protocol), the ``MasterService``
(restoring ``<job-dir>/master_state.json`` if present), the gRPC server (``rpc.server``'s
thread pool, or ``rpc.aio_server``'s event loop with ``rpc_server="aio"``), the health loop, the
PS-set driver (``master.ps_sets``; idle unless PS replicas register), the node watcher
(``master.node_watcher``, when the job has a platform); then writes the bound address to
``<job-dir>/master.addr``. Not for the master's logic.
"""

import gc
import logging
import signal
import socket
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flexjob.api import OptimizeMode
from flexjob.api.roles import PS_TYPE
from flexjob.core.access.addresses import is_loopback
from flexjob.core.training.master_config import WILDCARD_HOSTS, MasterConfig, NodeHealthConfig
from flexjob.master.logs import event
from flexjob.master.observing import (
    MasterCollector,
    RpcLatency,
    observe_rpc,
    serve_rpc_metrics_for,
)
from flexjob.master.profilings_sync import ProfilingsSync, status_writer
from flexjob.master.ps_sets import PsSetDriver
from flexjob.master.service import MasterService
from flexjob.master.state_file import write_atomic
from flexjob.master.tcp_store_check import StoreServer, choose_store, serve_store
from flexjob.master.timeline import TimelineRecorder
from flexjob.observe import metrics, metrics_http
from flexjob.platform.stop_signals import STOP_SIGNALS
from flexjob.rpc.aio_server import serve_aio
from flexjob.rpc.auth import master_token
from flexjob.rpc.messages import NodeRef
from flexjob.rpc.server import BoundServer, serve

if TYPE_CHECKING:  # a platform's watch (the job models): only masters that have one load it
    from flexjob.master.node_watcher import NodeWatcher

log = logging.getLogger(__name__)

METRICS_ADDR_FILE = "metrics.addr"  # in the job dir: HOST:PORT of the master's /metrics


@dataclass
class MasterHandle:
    """A master running in this process (server threads + health thread)."""

    config: MasterConfig
    service: MasterService
    server: BoundServer
    store: StoreServer | None = None
    optimizer: Any = (
        None  # master.optimizer_loop.OptimizerLoop when the job optimizes its resources
    )
    timeline: TimelineRecorder | None = None
    profilings: ProfilingsSync | None = None
    node_watcher: "NodeWatcher | None" = None
    collector: MasterCollector | None = None
    metrics_server: metrics_http.MetricsServer | None = None
    ps_sets: PsSetDriver | None = None
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    @property
    def address(self) -> str:
        """``host:port`` for clients (the advertised host, not a wildcard)."""
        return f"{self.config.public_host}:{self.server.port}"

    @property
    def port(self) -> int:
        return self.server.port

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self.node_watcher is not None:
            self.node_watcher.stop()
        if self.optimizer is not None:
            from flexjob.rpc.brain_messages import JobStatus  # the brain's models: only here

            self.optimizer.stop(JobStatus.SUCCEEDED if self.service.job_finished else None)
        if self.ps_sets is not None:
            self.ps_sets.stop()
        self.service.closing()  # the agents' streams the server ends now are no deaths
        self.server.stop(grace=0.5)
        self._sync_profilings(force=True)
        if self.timeline is not None:
            self.timeline.sample(self.service.view, force=True)
            self.timeline.close()
        self.service.close()
        if self.collector is not None:
            metrics.unregister(self.collector)
        if self.metrics_server is not None:
            self.metrics_server.stop()
        if self.store is not None:
            self.store.stop()
            self.store = None
        event(log, "master_stopped", self.config.job_name)

    def __enter__(self) -> "MasterHandle":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _health_loop(self) -> None:
        interval = self.config.health_interval
        while not self._stop.wait(interval):
            try:
                self.service.check()
                if self.timeline is not None:
                    self.timeline.sample(self.service.view)
            except Exception:  # keep the master up; the next tick retries
                log.exception("event=health_check_failed job=%s", self.config.job_name)
            self._sync_profilings()

    def _sync_profilings(self, force: bool = False) -> None:
        if self.profilings is None:
            return
        try:
            self.profilings.tick(force=force)
        except Exception:  # the platform may be briefly unreachable; the next tick retries
            log.exception("event=profilings_not_copied job=%s", self.config.job_name)


def _store_listener(config: MasterConfig) -> tuple[int, int]:
    """A socket listening for the job's torch TCPStore on the master's own address only (the
    store has no token): its file descriptor, for ``_serve_store``, and its port. A master
    bound to a wildcard (Kubernetes: 0.0.0.0) still binds its store to the address it
    advertises (its pod's), so nothing but that address reaches it. It falls back to the
    wildcard (logged) where that address is not this machine's, or resolves here to a loopback
    address that other machines do not reach it by (a Debian host's 127.0.1.1)."""
    if config.host in WILDCARD_HOSTS:
        try:
            own = socket.getaddrinfo(config.public_host, 0, type=socket.SOCK_STREAM)[0]
            if not is_loopback(str(own[4][0])):
                return _listen(own)
        except OSError:
            pass
        log.warning(
            "store: listening on %s: %s is not its own address", config.host, config.public_host
        )
    return _listen(socket.getaddrinfo(config.host, 0, type=socket.SOCK_STREAM)[0])


def _listen(info: tuple[Any, ...]) -> tuple[int, int]:
    family, kind, proto, _, addr = info
    with socket.socket(family, kind, proto) as listener:
        listener.bind(addr)
        listener.listen(socket.SOMAXCONN)
        port = int(listener.getsockname()[1])
        return listener.detach(), port


def _serve_store(config: MasterConfig, listen_fd: int, port: int) -> StoreServer:
    """The job's TCPStore server on the listening socket ``listen_fd`` (which it owns):
    flexjob's unless the installed torch's protocol differs (``master.tcp_store_check``)."""
    server = serve_store(listen_fd, config.host, choose_store(), config.store.first_request_timeout)
    event(log, "store_started", config.job_name, store=f"{config.public_host}:{port}")
    return server


def serve_master(service: MasterService, token: str | None) -> BoundServer:
    """Serve ``service`` on its config's host and port with the server ``rpc.server`` names;
    returns once it serves."""
    config = service.config
    rpc = config.rpc
    serve_rpc_metrics_for(config.job_name)
    if rpc.server == "aio":
        return serve_aio(
            service,
            service.persistence,
            config.host,
            config.port,
            token,
            observe_rpc,
            shard_streams=rpc.shard_streams,
        )
    return serve(
        service,
        config.host,
        config.port,
        rpc.workers + config.rendezvous.max_nodes,  # each node's agent holds one for its stream
        token,
        interceptors=[RpcLatency()],
        shard_streams=rpc.shard_streams,
        on_call=observe_rpc,
    )


def start_master(config: MasterConfig, token: str | None = None) -> MasterHandle:
    """Start a master in this process and return once it serves. ``token``: what clients must
    present (default: the job's token from the environment, ``rpc.auth.master_token``; a
    master that binds beyond loopback refuses to start without one)."""
    token = token if token is not None else master_token()
    store: StoreServer | None = None
    store_address = ""
    if config.host_store:
        listen_fd, store_port = _store_listener(config)
        store_address = f"{config.public_host}:{store_port}"
        store = _serve_store(config, listen_fd, store_port)
    timeline = TimelineRecorder(config.job_name, config.job_dir)
    abandon = store.abandon if store is not None else None
    service = MasterService(config, store_address=store_address, on_world_broken=abandon)
    server = serve_master(service, token)
    handle = MasterHandle(config, service, server, store, timeline=timeline)
    platform = config.scale_plan_platform
    if (write := status_writer(platform, config.namespace, config.job_name)) is not None:
        handle.profilings = ProfilingsSync(service.kv_get, write)
    handle.node_watcher = node_watcher(
        platform, config.namespace, config.job_name, config.node_health, service
    )
    handle.collector = MasterCollector(service.view)
    metrics.register(handle.collector)
    addr_file = Path(config.job_dir) / METRICS_ADDR_FILE if config.job_dir else None
    handle.metrics_server = metrics_http.serve_configured(addr_file=addr_file)
    handle._thread = threading.Thread(target=handle._health_loop, name="master-health", daemon=True)
    handle._thread.start()
    handle.ps_sets = PsSetDriver(
        service,
        initial_num_ps=config.ps.num_ps,
        checkpoint_interval=config.ps.checkpoint_interval,
        token=token,
        on_failure=lambda m: service.report_failure(NodeRef("ps-set", PS_TYPE), m, 1, False),
    )
    handle.ps_sets.start()
    if config.optimizer.mode is not OptimizeMode.MANUAL or config.optimizer.brain_url:
        from flexjob.master.optimizer_loop import OptimizerLoop, plan_sink

        handle.optimizer = OptimizerLoop.for_job(
            config.job_name,
            config.rendezvous,
            config.optimizer,
            service,
            plan_sink(platform, config.job_dir),
        )
        handle.optimizer.start()
    if config.addr_path is not None:
        write_atomic(config.addr_path, handle.address + "\n")
    event(
        log,
        "master_started",
        config.job_name,
        address=handle.address,
        store=store_address or "-",
        min_nodes=config.rendezvous.min_nodes,
        max_nodes=config.rendezvous.max_nodes,
        heartbeat_timeout=config.node_health.heartbeat_timeout,
        job_dir=config.job_dir or "-",
    )
    return handle


def node_watcher(
    platform_name: str,
    namespace: str,
    job_name: str,
    health: NodeHealthConfig,
    service: MasterService,
) -> "NodeWatcher | None":
    """A running watch on the job's replicas (``master.node_watcher``) by the master's
    ``health`` settings when the master has a platform (``platform_name``, its
    ``scale_plan_platform``); None for ``flexjob run``'s."""
    if not platform_name:
        return None
    from flexjob.master.node_watcher import NodeWatcher
    from flexjob.platform.registry import open_platform

    pending = health.replica_pending_timeout
    watcher = NodeWatcher(open_platform(platform_name), namespace, job_name, service, pending)
    watcher.start()
    return watcher


def run_master(config: MasterConfig, stop: threading.Event | None = None) -> int:
    """Run a master until ``stop`` is set or the process gets a stop signal (SIGTERM, SIGINT,
    SIGHUP); returns 0."""
    stop = stop or threading.Event()
    if threading.current_thread() is threading.main_thread():
        for sig in STOP_SIGNALS:
            signal.signal(sig, lambda *_: stop.set())
    handle = start_master(config)
    # What start-up made (modules, gRPC, the restored state) lives as long as the process: out
    # of the collector's reach, a full collection no longer walks it (~80 ms that every call
    # in flight waited for, measured on a loaded 2-core machine; under 1 ms once frozen).
    gc.collect()
    gc.freeze()
    try:
        stop.wait()
    finally:
        handle.stop()
    return 0
