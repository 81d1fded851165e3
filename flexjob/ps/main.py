"""``flexjob ps`` process life: serve one PS partition over gRPC, register with the master,
stop on SIGTERM / SIGINT (refusing new calls, writing a last checkpoint, publishing that it
left: ``ps.set_member``). Every few seconds it publishes its address and membership and
reports its CPU, memory, requests/s and partition bytes to the master's stats. A PS whose
index lies beyond the PS set the master published starts as a standby, serving nothing until
the master's PS-set change takes it in.

The address it publishes is ``--advertise`` or the replica's own service address
(``FLEXJOB_REPLICA_ADDRESS``, set by the operator), else ``host:port`` as bound.
"""

import logging
import os
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from flexjob.api import names
from flexjob.api.errors import FlexjobError
from flexjob.api.roles import PS_TYPE
from flexjob.ps.checkpoint_io import latest_set
from flexjob.ps.checkpointer import PsCheckpointer
from flexjob.ps.service import PsService
from flexjob.ps.set_member import SetMember
from flexjob.rpc.auth import master_token
from flexjob.rpc.client import MasterClient
from flexjob.rpc.messages import NodeRef, NodeStats
from flexjob.rpc.ps_auth import ps_credentials
from flexjob.rpc.ps_control import add_control
from flexjob.rpc.ps_gate import GateInterceptor, PsGate
from flexjob.rpc.ps_registry import publish_member, publish_ps, read_set, report_restore
from flexjob.rpc.ps_server import serve_ps

log = logging.getLogger(__name__)

REGISTER_INTERVAL_S = 2.0
LEAVE_WAIT_S = 3.0


@dataclass(frozen=True, slots=True)
class PsConfig:
    index: int = 0
    num_ps: int = 1
    host: str = "127.0.0.1"
    port: int = 0
    master: str = ""  # host:port of the job master; "" = register with nobody
    advertise: str = ""  # the address to publish; "" = host:port as bound
    checkpoint_dir: str = ""  # the job's PS checkpoint directory; "" = no checkpoints
    checkpoint_interval: float = 30.0


def run_ps(config: PsConfig, stop: threading.Event | None = None) -> int:
    """Serve until ``stop`` is set (or a signal arrives); returns the exit code."""
    stop = stop or threading.Event()
    if threading.current_thread() is threading.main_thread():

        def _stop(signum: int, frame: FrameType | None) -> None:
            stop.set()

        signal.signal(signal.SIGTERM, _stop)
        signal.signal(signal.SIGINT, _stop)
    master = (
        MasterClient(
            config.master, NodeRef(f"{PS_TYPE.value}-{config.index}", PS_TYPE, config.index)
        )
        if config.master
        else None
    )
    place = _place(config, master)
    service = PsService(config.index, place.num_ps)
    directory = Path(config.checkpoint_dir) if config.checkpoint_dir else None
    checkpointer = None
    restored = False
    if directory is not None:
        earlier = latest_set(directory) if place.serving else []
        if earlier:  # restored before serving: no call sees an empty partition
            service.restore(earlier)
            restored = True
        checkpointer = PsCheckpointer(service, directory, config.checkpoint_interval)
        checkpointer.start()
    gate = PsGate(place.serving, place.min_version, "this PS waits to join the PS set")
    member = SetMember(service, gate, checkpointer, directory, place.serving)
    server = serve_ps(
        service,
        config.host,
        config.port,
        credentials=ps_credentials(os.environ, master_token(), config.index),
        interceptors=[GateInterceptor(gate)],
        register=lambda s: add_control(s, member),
    )
    address = config.advertise or server.address
    role = f"{config.index}/{place.num_ps}" if place.serving else f"{config.index} (standby)"
    print(f"flexjob ps {role} serving on {address}", flush=True)
    asked = b""
    try:
        if master is not None and restored:
            try:
                lost = report_restore(master, config.index, service.version)
                log.warning(
                    "event=ps_updates_lost index=%d dense_updates=%d rows=%d",
                    config.index,
                    lost.dense_updates,
                    lost.rows,
                )
            except FlexjobError as exc:
                log.warning("event=ps_report_failed master=%s error=%s", config.master, exc)
        while not stop.is_set():
            if master is not None:
                try:
                    publish_ps(master, config.index, address, service.version, service.dirty_rows)
                    publish_member(master, config.index, member.member(address))
                    load = service.stats()  # the master's stats → optimizer / Brain
                    stats = NodeStats(
                        cpu_percent=load.cpu_percent,
                        memory_bytes=load.memory_bytes,
                        requests_per_second=load.requests_per_second,
                        partition_bytes=load.bytes,
                    )
                    master.report_stats(stats)
                    request = master.kv_get(names.KV_PS_CHECKPOINT_REQUEST) or b""
                    if request != asked and checkpointer is not None:
                        checkpointer.request()
                    asked = request
                except FlexjobError as exc:
                    log.warning("event=ps_register_failed master=%s error=%s", config.master, exc)
            stop.wait(REGISTER_INTERVAL_S)
    finally:
        member.leave()  # refuse calls, last checkpoint; then say so before going away
        if master is not None:
            try:
                publish_member(master, config.index, member.member(address))
                _wait_for_a_set_without(master, address)
            except FlexjobError as exc:
                log.warning("event=ps_leave_unpublished master=%s error=%s", config.master, exc)
        server.stop(grace=1.0)
        if master is not None:
            master.close()
    return 0


def _wait_for_a_set_without(master: MasterClient, address: str) -> None:
    """Keep refusing calls (clients then re-resolve, rather than retry an address that went
    away) until the master published a set without ``address``, for ``LEAVE_WAIT_S`` at most
    (the platform's stop grace is longer)."""
    deadline = time.monotonic() + LEAVE_WAIT_S
    while time.monotonic() < deadline:
        current = read_set(master.kv_get)
        if current is None or address not in current.addresses:
            return
        time.sleep(0.1)


@dataclass(frozen=True, slots=True)
class _Place:
    num_ps: int
    serving: bool
    min_version: int


def _place(config: PsConfig, master: MasterClient | None) -> _Place:
    """Where this PS starts: in the set the master published (restoring its share), as a
    standby waiting for a change to take it in (its index is beyond that set), or, before
    any set is published, in the first set of ``config.num_ps``."""
    current = None
    if master is not None:
        try:
            current = read_set(master.kv_get)
        except FlexjobError as exc:
            log.warning("event=ps_set_unknown master=%s error=%s", config.master, exc)
    if current is None:
        return _Place(config.num_ps, True, 0)
    if config.index < current.num_ps:
        return _Place(current.num_ps, True, current.version)
    return _Place(config.index + 1, False, current.version)
