"""``MasterClient``: a synchronous, typed client of the job master for agents and trainers.

Every method is one RPC returning an ``rpc.messages`` data class. Every call carries the job's
token (``rpc.auth.master_token``: ``FLEXJOB_MASTER_TOKEN`` or ``FLEXJOB_MASTER_TOKEN_FILE``)
when one is set. Calls that cannot reach the master
(connection refused, master restarting, deadline hit) are retried with exponential backoff
until ``retry_deadline`` seconds have passed, so a master restart is survivable; then
``UnavailableError``. Errors the master answers are raised as ``api.errors`` errors.
Not thread-safe across ``close()``; otherwise a client may be shared by threads.
"""

import dataclasses
import logging
import threading
import time
from collections.abc import Iterator, Mapping, Sequence

import grpc

from flexjob.api.roles import MASTER_TYPE
from flexjob.core.training.batch import RankBatch
from flexjob.core.training.dataset import Dataset
from flexjob.rpc import convert
from flexjob.rpc.convert import NodeLike
from flexjob.rpc.gen import master_control_pb2_grpc as ctl_grpc
from flexjob.rpc.gen import master_pb2 as pb
from flexjob.rpc.gen import master_pb2_grpc as pb_grpc
from flexjob.rpc.messages import (
    DEFAULT_DATASET,
    HeartbeatReply,
    LeaseRequest,
    NodeStats,
    NodesWaiting,
    NodeWorld,
    Progress,
    ShardInfo,
    ShardLease,
)
from flexjob.rpc.retry import RetryingClient
from flexjob.rpc.shard_stream import ShardStream, StreamHolder

_CHANNEL_OPTIONS = [
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 1000),
    ("grpc.enable_retries", 0),
]

log = logging.getLogger(__name__)


def open_channel(address: str) -> grpc.Channel:
    """A channel to the master that reconnects quickly; clients may share one (``channel=``)."""
    return grpc.insecure_channel(address, options=_CHANNEL_OPTIONS)


class MasterClient(RetryingClient):
    """Talks to the master at ``address`` (``host:port``) as ``node`` (a ``NodeRef``-like
    object with ``node_id`` and optionally ``replica_type`` / ``replica_index``, or a node id).

    ``timeout``: seconds per attempt; ``retry_deadline``: seconds to keep retrying an
    unreachable master; ``channel``: share one channel between many clients (e.g. simulated
    agents), else each client opens its own; ``token``: the master's bearer token (default:
    from the environment, ``rpc.auth.master_token``); ``shard_stream``: send ``lease_shards``
    over one ``LeaseShardsStream`` while the master serves one (``rpc.shard_stream``), else
    each as a unary call."""

    SERVER = MASTER_TYPE.value

    def __init__(
        self,
        address: str,
        node: NodeLike | str,
        *,
        timeout: float = 10.0,
        retry_deadline: float = 60.0,
        max_backoff: float = 1.0,
        channel: grpc.Channel | None = None,
        token: str | None = None,
        shard_stream: bool = True,
    ) -> None:
        super().__init__(address, timeout, retry_deadline, max_backoff, token)
        self._node = convert.node_to_pb(node)
        self._own_channel = channel is None
        self._channel = channel or open_channel(address)
        self._stub = pb_grpc.MasterStub(self._channel)  # type: ignore[no-untyped-call]
        self._control = ctl_grpc.MasterControlStub(self._channel)  # type: ignore[no-untyped-call]
        self._shards = StreamHolder(self._open_shard_stream, enabled=shard_stream)

    @property
    def node_id(self) -> str:
        return str(self._node.node_id)

    def close(self) -> None:
        """End the shard stream; close the channel, unless it was passed in (then its owner
        closes it)."""
        self._shards.close()
        if self._own_channel:
            self._channel.close()

    # ---- rendezvous ----
    def join(self, address: str = "", local_world_size: int = 1) -> int:
        """Wait for the next rendezvous round; returns its number. ``address`` is where this
        node can be reached (``host:port``), used as the store address if it becomes rank 0
        and the master hosts no store."""
        req = pb.JoinRequest(node=self._node, address=address, local_world_size=local_world_size)
        return int(self._call(self._stub.JoinRendezvous, req).round)

    def get_world(self, round: int = 0) -> NodeWorld:
        req = pb.GetWorldRequest(node=self._node, round=round)
        return convert.world_from_pb(self._call(self._stub.GetWorld, req))

    def wait_world(self, timeout: float = 60.0, poll: float = 0.05) -> NodeWorld:
        """Poll ``get_world`` until this node is in a completed round; ``TimeoutError`` after
        ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            world = self.get_world()
            if world.complete:
                return world
            if time.monotonic() >= deadline:
                raise TimeoutError(f"node {self.node_id}: no complete world within {timeout}s")
            time.sleep(poll)

    def nodes_waiting(self) -> NodesWaiting:
        req = pb.NodesWaitingRequest(node=self._node)
        return convert.waiting_from_pb(self._call(self._stub.NodesWaiting, req))

    # ---- shards ----
    def get_shard(self, dataset: str = DEFAULT_DATASET) -> ShardInfo:
        req = pb.GetShardRequest(node=self._node, dataset=dataset)
        return convert.shard_from_pb(self._call(self._stub.GetShard, req))

    def report_shard(self, shard_id: int, dataset: str = DEFAULT_DATASET) -> bool:
        """``True``: the master counted this shard as done by this node."""
        req = pb.ReportShardRequest(node=self._node, dataset=dataset, shard_id=shard_id)
        return bool(self._call(self._stub.ReportShard, req).accepted)

    def lease_shards(
        self,
        count: int,
        done: Sequence[int] = (),
        dataset: str = DEFAULT_DATASET,
        release: Sequence[int] = (),
    ) -> ShardLease:
        """Report the shards ``done`` (in order), give back the leased shards ``release``, then
        lease up to ``count`` more, in one call."""
        ask = LeaseRequest(dataset, count, tuple(done), tuple(release))
        req = convert.lease_request_to_pb(self._node, ask)
        reply = self._shards.ask(req)
        if reply is None:
            reply = self._call(self._stub.LeaseShards, req)
        return convert.lease_from_pb(reply)

    def _open_shard_stream(self) -> ShardStream:
        method = self._stub.LeaseShardsStream
        return ShardStream(
            lambda requests: method(requests, metadata=self._metadata), self._timeout
        )

    def get_progress(self, dataset: str = DEFAULT_DATASET) -> Progress:
        req = pb.ProgressRequest(node=self._node, dataset=dataset)
        return convert.progress_from_pb(self._call(self._stub.GetProgress, req))

    # ---- stats, health ----
    def report_stats(self, stats: NodeStats) -> None:
        """Send one sample of this node; one without a ``timestamp`` (0) is stamped now."""
        if not stats.timestamp:
            stats = dataclasses.replace(stats, timestamp=time.time())
        self._call(self._control.ReportStats, convert.stats_to_pb(self._node, stats))

    def heartbeat(self) -> HeartbeatReply:
        """A heartbeat carrying this client's incarnation, which becomes the reply's unless it
        was fenced (``core.training.fencing``: the first heartbeat joins as a new member)."""
        req = pb.HeartbeatRequest(node=self._node, timestamp=time.time())
        reply = convert.heartbeat_from_pb(self._call(self._control.Heartbeat, req))
        if not reply.fenced:
            self._node.incarnation = reply.incarnation
        return reply

    @property
    def incarnation(self) -> int:
        """The membership this client's calls carry (0: none yet)."""
        return int(self._node.incarnation)

    def leave_membership(self) -> None:
        """Drop the (fenced) incarnation: the next heartbeat joins as a new member."""
        self._node.incarnation = 0

    def report_failure(self, reason: str, exit_code: int = 1, restarting: bool = False) -> None:
        req = pb.FailureRequest(
            node=self._node, reason=reason, exit_code=exit_code, restarting=restarting
        )
        self._call(self._control.ReportFailure, req)

    def node_succeeded(self) -> None:
        """This node's workers all ended with 0: the agent leaves without a re-form."""
        self._call(self._control.NodeSucceeded, pb.NodeSucceededRequest(node=self._node))

    def running_nodes(self) -> list[str]:
        """The nodes whose agents were heard from and have neither succeeded nor died."""
        req = pb.RunningNodesRequest(node=self._node)
        return list(self._call(self._control.RunningNodes, req).node_ids)

    def register_dataset(self, dataset: Dataset) -> None:
        """Tell the master to shard ``dataset`` (kept if the name is already known)."""
        self._call(self._stub.RegisterDataset, convert.dataset_to_pb(self._node, dataset))

    def attach(self) -> Iterator[object]:
        """Open this node's ``Attach`` stream: it lasts while this process and the master
        live (the master takes its end for the node's death); iterate to keep it open."""
        req = pb.AttachRequest(node=self._node)
        stream: Iterator[object] = self._stub.Attach(req, metadata=self._metadata)
        return stream

    def stay_attached(self, stopping: threading.Event, retry_s: float = 1.0) -> None:
        """Keep this node's ``Attach`` stream open until ``stopping`` is set, re-opening it
        ``retry_s`` after it ends (a master restart), so that the death of this process is
        known to the master at once (its connection closes) instead of after the heartbeat
        timeout. Blocks: run it on a thread of its own."""
        while not stopping.is_set():
            try:
                for _ in self.attach():
                    if stopping.is_set():
                        return
            except Exception as exc:  # the master is away, or this process is closing
                log.debug("attach stream ended: %s", exc)
            stopping.wait(retry_s)

    def attach_in_background(
        self, stopping: threading.Event, retry_s: float = 1.0
    ) -> threading.Thread:
        """``stay_attached`` on a daemon thread of its own, started; returns the thread."""
        thread = threading.Thread(
            target=self.stay_attached,
            args=(stopping, retry_s),
            name="flexjob-attach",
            daemon=True,
        )
        thread.start()
        return thread

    def exclude_nodes(self, round: int, reasons: Mapping[str, str]) -> tuple[str, ...]:
        """Ask the master to keep nodes (id → why, worst first) out of world ``round`` and
        every later one; returns those it keeps out (``ExcludeNodes``)."""
        req = pb.ExcludeRequest(
            node=self._node, round=round, nodes=list(reasons), reasons=list(reasons.values())
        )
        return tuple(self._call(self._control.ExcludeNodes, req).excluded)

    def get_batch_plan(self, rank: int, world_size: int) -> RankBatch:
        req = pb.BatchPlanRequest(node=self._node, rank=rank, world_size=world_size)
        return convert.batch_from_pb(self._call(self._control.GetBatchPlan, req))

    # ---- key-value store ----
    def kv_set(self, key: str, value: bytes) -> None:
        self._call(self._control.KVSet, pb.KVSetRequest(key=key, value=value))

    def kv_get(self, key: str) -> bytes | None:
        """The value, or ``None`` when the key is not set."""
        resp = self._call(self._control.KVGet, pb.KVGetRequest(key=key))
        return bytes(resp.value) if resp.found else None

    def kv_add(self, key: str, amount: int = 1) -> int:
        """Add ``amount`` to the integer at ``key`` (0 when unset); returns the new value."""
        return int(self._call(self._control.KVAdd, pb.KVAddRequest(key=key, amount=amount)).value)

    # ---- transport ----
