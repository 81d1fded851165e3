"""A job master with a token, served in this process on 127.0.0.1, for hostile-client probes:
its clients by credential, raw stubs that send exactly what a hostile client sends, and the
job's books (what a refused call must leave unchanged).

The books are what the master keeps and a forged call could change: each dataset's shards
(to do, being done, done, samples), the registered datasets, the world, the running nodes,
the keys flexjob relies on, and the state files on disk (snapshot and journal, byte for byte:
every change a master acknowledges is written there first).
"""

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import grpc

from flexjob.api import names
from flexjob.core.training.dataset import Dataset
from flexjob.core.training.master_config import MasterConfig
from flexjob.master.main import serve_master
from flexjob.master.observing import DatasetView
from flexjob.master.service import MasterService
from flexjob.rpc.auth import bearer, node_credential
from flexjob.rpc.client import MasterClient
from flexjob.rpc.gen import master_control_pb2_grpc as ctl_grpc
from flexjob.rpc.gen import master_pb2_grpc as pb_grpc
from flexjob.rpc.server import BoundServer
from tests.support.masters import master_config

TOKEN = "the-jobs-own-token"
SHARDS = 10
#: The keys the books record (besides every key on disk, through the state files).
WATCHED_KEYS = (
    names.KV_INCARNATION,
    names.KV_EXCLUDED_PREFIX + "worker-0",
    names.KV_PS_SET,
    names.KV_PS_CHANGE,
    names.KV_AGENT_STARTS_PREFIX + "worker-0",
)


@dataclass(frozen=True)
class Books:
    datasets: tuple[DatasetView, ...]
    registered: tuple[str, ...]
    round: int
    world_size: int
    running: tuple[str, ...]
    keys: tuple[bytes | None, ...]
    snapshot: bytes
    journal: bytes


def _read(path: Path) -> bytes:
    return path.read_bytes() if path.exists() else b""


@dataclass
class GuardedMaster:
    """A master of ``config`` serving with ``token``; ``restart`` replaces it by a new one
    on the same state (a master restart), at a new address."""

    config: MasterConfig
    token: str = TOKEN
    service: MasterService = field(init=False)
    server: BoundServer = field(init=False)

    def __post_init__(self) -> None:
        self._start()

    def _start(self) -> None:
        self.service = MasterService(self.config)
        self.server = serve_master(self.service, self.token)

    @property
    def address(self) -> str:
        return self.server.address

    def restart(self) -> None:
        """Stop serving and start a new master on the same state, as a restart does."""
        self.server.stop(0)
        self.service.close()
        self._start()

    def stop(self) -> None:
        self.server.stop(0)
        self.service.close()

    def credential(self, node: str) -> str:
        """The credential of ``node``: what ``flexjob run`` gives that node's agent."""
        return node_credential(self.token, node)

    def client(self, node: str, *, as_node: str | None = None, bearer: str = "") -> MasterClient:
        """A client that names ``node`` in its calls and presents ``bearer`` (default: the
        credential of ``as_node``, itself by default)."""
        presented = bearer or self.credential(as_node or node)
        return MasterClient(
            self.address, node, token=presented, timeout=10, retry_deadline=2, shard_stream=False
        )

    def books(self) -> Books:
        svc = self.service
        view = svc.view()
        state = Path(self.config.state_path or "")
        return Books(
            datasets=view.datasets,
            registered=tuple(sorted(d.name for d in view.datasets)),
            round=view.round,
            world_size=view.world_size,
            running=tuple(svc.running_nodes()),
            keys=tuple(svc.kv_get(k) for k in WATCHED_KEYS),
            snapshot=_read(state),
            journal=_read(state.with_suffix(".journal")),
        )


def guarded_config(job_dir: Path, rpc_server: str = "threads", **kw: object) -> MasterConfig:
    """A master config with one declared dataset (``SHARDS`` shards) and its state in
    ``job_dir``; a world of two nodes (``worker-0``, ``worker-1``)."""
    settings = {
        "datasets": (Dataset(size=SHARDS * 4, shard_size=4),),
        "rendezvous__min_nodes": 2,
        "rendezvous__max_nodes": 2,
        "rendezvous__last_call_timeout": 0.1,
        "rpc__server": rpc_server,
    }
    return master_config("guarded", job_dir, **{**settings, **kw})


def started_world(master: GuardedMaster) -> dict[str, int]:
    """Both nodes joined, attached and heartbeating, and ``worker-0`` holding a shard: the
    live job the probes attack. Returns the shard each node holds."""
    held: dict[str, int] = {}
    for node in ("worker-0", "worker-1"):
        with master.client(node) as c:
            c.join()
            c.heartbeat()
    for node in ("worker-0", "worker-1"):
        with master.client(node) as c:
            c.wait_world(timeout=30)
            held[node] = c.lease_shards(1).shards[0].shard_id
    return held


@dataclass
class RawStubs:
    """The master's two services over one channel, for calls with exact metadata."""

    channel: grpc.Channel
    master: pb_grpc.MasterStub
    control: ctl_grpc.MasterControlStub


def raw_stubs(address: str) -> Iterator[RawStubs]:
    """The stubs of ``address`` (a generator for a fixture: closes the channel after)."""
    channel = grpc.insecure_channel(address)
    try:
        yield RawStubs(
            channel,
            pb_grpc.MasterStub(channel),  # type: ignore[no-untyped-call]
            ctl_grpc.MasterControlStub(channel),  # type: ignore[no-untyped-call]
        )
    finally:
        channel.close()


def auth(value: str) -> tuple[tuple[str, str], ...]:
    """The metadata of a call presenting ``value`` as its bearer."""
    return (("authorization", bearer(value)),)
