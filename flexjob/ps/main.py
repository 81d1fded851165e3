"""``flexjob ps`` process life: serve one PS partition over gRPC, register with the master,
stop on SIGTERM / SIGINT.

The address it publishes is ``--advertise`` or the replica's own service address
(``FLEXJOB_REPLICA_ADDRESS``, set by the operator), else ``host:port`` as bound.
"""

import logging
import signal
import threading
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from flexjob.api import names
from flexjob.api.errors import FlexjobError
from flexjob.ps.checkpoint_io import latest_set
from flexjob.ps.checkpointer import PsCheckpointer
from flexjob.ps.service import PsService
from flexjob.rpc.auth import master_token
from flexjob.rpc.client import MasterClient
from flexjob.rpc.messages import NodeRef
from flexjob.rpc.ps_registry import publish_ps, report_restore
from flexjob.rpc.ps_server import serve_ps

log = logging.getLogger(__name__)

REGISTER_INTERVAL_S = 2.0


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
    service = PsService(config.index, config.num_ps)
    checkpointer = None
    restored = False
    if config.checkpoint_dir:
        directory = Path(config.checkpoint_dir)
        earlier = latest_set(directory)
        if earlier:  # restored before serving: no call sees an empty partition
            service.restore(earlier)
            restored = True
        checkpointer = PsCheckpointer(service, directory, config.checkpoint_interval)
        checkpointer.start()
    server = serve_ps(service, config.host, config.port, token=master_token())
    address = config.advertise or server.address
    print(f"flexjob ps {config.index}/{config.num_ps} serving on {address}", flush=True)
    master = (
        MasterClient(config.master, NodeRef(f"ps-{config.index}", "ps", config.index))
        if config.master
        else None
    )
    asked = b""
    try:
        if master is not None and restored:
            try:
                lost = report_restore(master, config.index, service.version)
                log.warning("event=ps_updates_lost index=%d dense_updates=%d", config.index, lost)
            except FlexjobError as exc:
                log.warning("event=ps_report_failed master=%s error=%s", config.master, exc)
        while not stop.is_set():
            if master is not None:
                try:
                    publish_ps(master, config.index, address, service.version)
                    request = master.kv_get(names.KV_PS_CHECKPOINT_REQUEST) or b""
                    if request != asked and checkpointer is not None:
                        checkpointer.request()
                    asked = request
                except FlexjobError as exc:
                    log.warning("event=ps_register_failed master=%s error=%s", config.master, exc)
            stop.wait(REGISTER_INTERVAL_S)
    finally:
        server.stop(grace=1.0)
        if checkpointer is not None:
            checkpointer.stop()
        if master is not None:
            master.close()
    return 0
