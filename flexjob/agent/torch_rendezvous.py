"""torchrun's rendezvous backend ``flexjob``: ``torchrun --rdzv-backend=flexjob
--rdzv-endpoint=HOST:PORT train.py`` uses the flexjob master instead of c10d or etcd.

For scripts that do not use the trainer helpers: a world change restarts the workers, as
torchrun does. Every round gets a fresh store prefix from the master, and the agents' store of
a round is a ``PrefixStore`` over the master's TCPStore, so no key of an earlier round is ever
read again (torch's shared agent store keeps stale keys across rounds: pytorch#135712,
#167288); MASTER_ADDR/MASTER_PORT get a fresh port per round. Registered through the
``torchrun.handlers`` entry point (installed package only); not used by ``flexjob run``.
"""

from __future__ import annotations

import datetime
import logging
import socket
import time
from collections.abc import Callable

from torch.distributed import PrefixStore, Store, TCPStore  # type: ignore[attr-defined]
from torch.distributed.elastic.rendezvous import (
    RendezvousHandler,
    RendezvousInfo,
    RendezvousParameters,
    RendezvousStoreInfo,
)
from torch.distributed.elastic.rendezvous.api import RendezvousTimeoutError

from flexjob.agent.config import default_node_id
from flexjob.rpc.client import MasterClient
from flexjob.rpc.messages import NodeRef

log = logging.getLogger(__name__)

BACKEND = "flexjob"
CLOSED_KEY = "flexjob/torchrun/closed"


def _local_addr(params: RendezvousParameters, master_host: str) -> str:
    if params.local_addr:
        return str(params.local_addr)
    if master_host in ("127.0.0.1", "localhost", "::1"):
        return "127.0.0.1"  # a job on one machine: stay on loopback
    return socket.getfqdn()


class FlexjobRendezvousHandler(RendezvousHandler):
    """Rounds come from the flexjob master: join, then wait for a world that includes us."""

    def __init__(self, params: RendezvousParameters) -> None:
        self._params = params
        endpoint = params.endpoint
        if not endpoint or ":" not in endpoint:
            raise ValueError(
                f"--rdzv-endpoint must be HOST:PORT of a flexjob master, got {endpoint!r}"
            )
        host = endpoint.rsplit(":", 1)[0]
        self._addr = _local_addr(params, host)
        node_id = str(params.config.get("node_id") or default_node_id())
        self._client = MasterClient(endpoint, NodeRef(node_id))
        self._timeout = float(params.get_as_int("join_timeout", 600) or 600)
        self._stores: dict[str, TCPStore] = {}
        self._closed = False

    def get_backend(self) -> str:
        return BACKEND

    def next_rendezvous(self) -> RendezvousInfo:
        self._client.join(self._addr, 1)
        deadline = time.monotonic() + self._timeout
        while True:
            world = self._client.get_world()
            if world.complete and world.rank >= 0:
                break
            if self.is_closed():
                raise RendezvousTimeoutError("the job was closed while waiting for a round")
            if time.monotonic() > deadline:
                raise RendezvousTimeoutError(f"no round within {self._timeout}s")
            time.sleep(0.05)
        store = PrefixStore(f"{world.store_prefix}torchrun/", self._store(world.store_address))
        bootstrap = RendezvousStoreInfo.build(world.rank, store, local_addr=self._addr)
        log.info("flexjob round %d: node rank %d of %d", world.round, world.rank, world.world_size)
        return RendezvousInfo(store, world.rank, world.world_size, bootstrap)

    def _store(self, address: str) -> Store:
        store = self._stores.get(address)
        if store is None:
            host, port = address.rsplit(":", 1)
            store = TCPStore(
                host, int(port), is_master=False, timeout=datetime.timedelta(seconds=self._timeout)
            )
            self._stores[address] = store
        return store

    def is_closed(self) -> bool:
        if not self._closed:
            self._closed = self._client.kv_get(CLOSED_KEY) is not None
        return self._closed

    def set_closed(self) -> None:
        self._client.kv_set(CLOSED_KEY, b"1")
        self._closed = True

    def num_nodes_waiting(self) -> int:
        return self._client.nodes_waiting().num_nodes_waiting

    def get_run_id(self) -> str:
        return str(self._params.run_id)

    def shutdown(self) -> bool:
        self._client.close()
        return True


def create_handler() -> Callable[[RendezvousParameters], RendezvousHandler]:
    """The ``torchrun.handlers`` entry point: torch calls this and registers the result."""
    return FlexjobRendezvousHandler
