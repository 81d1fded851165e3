"""The master RPC in Python terms: the data classes the client returns, the ``MasterBackend``
protocol the server calls (one method per RPC). No gRPC here. Errors: ``api.errors``
(``InvalidSpecError``, ``NotFoundError``; the client raises ``UnavailableError``).

The torch store. The master hosts one ``torch.distributed.TCPStore`` per job (when its config
says ``host_store``, the default) and ``NodeWorld.store_address`` is its ``host:port``; each
completed rendezvous round has its own ``store_prefix`` (``<job>/round-<n>/``), so keys of an
old round never collide with a new one — wrap the store in ``torch.distributed.PrefixStore``.
A master that does not host the store sets ``store_address`` to the address that the rank-0
node gave when it joined, and that node's agent is expected to run the store there. The
master's own KV RPCs (``kv_set`` / ``kv_get`` / ``kv_add``, ``KVClient``) are a small store
for agents' own use, journaled with the master's state (``master.kv.KVStore``): they survive
a master restart.

Rendezvous protocol for an agent: ``join(address)`` → poll ``get_world()`` until ``complete``
(or ``wait_world()``) → start training with ``rank`` / ``world_size`` / the store → poll
``heartbeat()`` (or ``nodes_waiting()``); when ``num_nodes_waiting > 0`` (a member died, or a
new node would grow the world) stop training and ``join`` again. The ``round`` argument of
``get_world`` is informational: the master answers with the latest world this node is in; a
node that asks while neither waiting nor a member (its join was lost in a master restart, or it
was declared dead while alive) is made to wait for the next round, as if it had joined.
Any call from a node counts as its heartbeat; a node silent for ``heartbeat_timeout`` is dead
(its shards go back to TODO and its world is broken) and fenced: its calls are refused
(``NodeFencedError``) until its agent joins again as a new member (``core.training.fencing``).

Shards: ``get_shard()`` → ``has_shard`` false with ``end_of_data`` false means "none free now,
ask again" (others still hold shards that may come back); ``end_of_data`` means done.
``report_shard(id)`` → ``True`` when the master counts it as done by this node (a retry of a
report that was counted also answers ``True``); ``False`` when another report counted it.
``lease_shards(count, done, release)`` does both in one call: it reports ``done`` in order,
puts the leased shards in ``release`` back (never trained), then hands out up to ``count``
shards at once (fewer when none are free now), each DOING for the caller.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from flexjob.api import ReplicaType
from flexjob.api.roles import DEFAULT_TYPE
from flexjob.core.training.batch import RankBatch
from flexjob.core.training.dataset import Dataset
from flexjob.core.training.shards import DatasetProgress

DEFAULT_DATASET = ""


@dataclass(frozen=True, slots=True)
class NodeRef:
    """Who calls: a stable node id (e.g. ``worker-0``), its replica type and index. The type
    is a string on the wire (``rpc.convert``: one we do not know reads as
    ``api.roles.DEFAULT_TYPE``). ``incarnation``: the agent's membership, as its heartbeat
    got it (``core.training.fencing``; 0: not said)."""

    node_id: str
    replica_type: ReplicaType = DEFAULT_TYPE
    replica_index: int = 0
    incarnation: int = 0


@dataclass(frozen=True, slots=True)
class NodeWorld:
    """What one node gets from the rendezvous: its rank in round ``round`` (``complete`` once
    it is a member), the world size, the torch store and the members in rank order."""

    complete: bool
    round: int
    rank: int
    world_size: int
    store_address: str
    store_prefix: str
    members: tuple[str, ...]

    @property
    def store_host(self) -> str:
        return self.store_address.rsplit(":", 1)[0]

    @property
    def store_port(self) -> int:
        return int(self.store_address.rsplit(":", 1)[1])


@dataclass(frozen=True, slots=True)
class NodesWaiting:
    num_nodes_waiting: int
    round: int


@dataclass(frozen=True, slots=True)
class ShardInfo:
    """A shard to train on. ``has_shard`` false: none now; ``end_of_data``: none ever again."""

    has_shard: bool
    end_of_data: bool
    shard_id: int = -1
    epoch: int = 0
    start: int = 0
    end: int = 0
    indices: tuple[int, ...] = ()
    name: str = ""

    def sample_indices(self) -> tuple[int, ...]:
        """The shard's sample indices (rows of ``name`` for file datasets)."""
        return self.indices if self.indices else tuple(range(self.start, self.end))


@dataclass(frozen=True, slots=True)
class LeaseRequest:
    """What ``lease_shards`` asks of the master: report ``done`` (in order), put the leased
    shards ``release`` back in TODO, then lease up to ``count`` shards of ``dataset``."""

    dataset: str
    count: int
    done: tuple[int, ...] = ()
    release: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class ShardLease:
    """What ``lease_shards`` answers: the shards now DOING for the caller (each ``has_shard``),
    ``accepted[i]`` for the report of ``done[i]``, and whether every epoch is done."""

    shards: tuple[ShardInfo, ...]
    accepted: tuple[bool, ...]
    end_of_data: bool


@dataclass(frozen=True, slots=True)
class NodeStats:
    cpu_percent: float = 0.0
    memory_bytes: int = 0
    step: int = 0
    samples_per_second: float = 0.0
    world_size: int = 0
    timestamp: float = 0.0
    requests_per_second: float = 0.0  # a PS replica's data calls per second
    partition_bytes: int = 0  # the bytes a PS replica's partition holds
    #: A training node's own seconds per step, waits for peers left out (its slowest
    #: process's; ``trainer.step_time``); 0: not measured.
    step_seconds: float = 0.0
    #: GPU memory the node's training processes hold, and the mean utilisation (%) of the
    #: GPUs they run on (``agent.gpu``: NVML); 0 without a GPU or nvidia-ml-py.
    gpu_memory_bytes: int = 0
    gpu_percent: float = 0.0


@dataclass(frozen=True, slots=True)
class HeartbeatReply:
    round: int
    num_nodes_waiting: int
    job_finished: bool
    #: The master keeps this node out of every later world (``core.training.stragglers``).
    excluded: bool = False
    #: The membership the agent sends from now on; ``fenced``: the master declared this
    #: membership dead (``core.training.fencing``): the agent stops its workers and joins again.
    incarnation: int = 0
    fenced: bool = False


@dataclass(frozen=True, slots=True)
class Progress(DatasetProgress):
    """``DatasetProgress`` as a worker sees it: whether it is finished, and the world."""

    finished: bool
    round: int
    world_size: int


class KVClient(Protocol):
    """The master's KV store as its users call it: ``MasterClient`` over the wire, the
    ``MasterService`` in the master (the store itself: ``master.kv.KVStore``)."""

    def kv_set(self, key: str, value: bytes) -> None: ...

    def kv_get(self, key: str) -> bytes | None: ...

    def kv_add(self, key: str, amount: int) -> int: ...


class MasterBackend(KVClient, Protocol):
    """What the gRPC servicer calls: one method per RPC, Python types in and out (the KV
    RPCs: ``KVClient``)."""

    def join(self, node: NodeRef, address: str, local_world_size: int) -> int: ...

    def get_world(self, node: NodeRef, round: int) -> NodeWorld: ...

    def nodes_waiting(self, node: NodeRef) -> NodesWaiting: ...

    def get_shard(self, node: NodeRef, dataset: str) -> ShardInfo: ...

    def report_shard(self, node: NodeRef, dataset: str, shard_id: int) -> bool: ...

    def lease_shards(self, node: NodeRef, request: LeaseRequest) -> ShardLease: ...

    def register_dataset(self, node: NodeRef, dataset: Dataset) -> None: ...

    def exclude_nodes(
        self, node: NodeRef, round: int, reasons: Mapping[str, str]
    ) -> tuple[str, ...]: ...

    def attach(self, node: NodeRef) -> int:
        """An agent's stream opened; returns its token for ``detach``."""
        ...

    def detach(self, node: NodeRef, token: int) -> None:
        """The stream of ``attach``'s ``token`` ended (its agent is gone)."""
        ...

    def wait_closing(self, timeout: float) -> bool:
        """Wait up to ``timeout`` s; True once the master is stopping (streams end)."""
        ...

    def report_stats(self, node: NodeRef, stats: NodeStats) -> None: ...

    def heartbeat(self, node: NodeRef, timestamp: float) -> HeartbeatReply: ...

    def report_failure(
        self, node: NodeRef, reason: str, exit_code: int, restarting: bool
    ) -> None: ...

    def node_succeeded(self, node: NodeRef) -> None:
        """The node's workers all ended with 0 and its agent leaves (no death, no re-form)."""
        ...

    def running_nodes(self) -> list[str]:
        """The nodes whose agents were heard from and have neither succeeded nor died."""
        ...

    def get_batch_plan(self, node: NodeRef, rank: int, world_size: int) -> RankBatch: ...

    def get_progress(self, node: NodeRef, dataset: str) -> Progress: ...
