"""A simulated agent for master tests: joins, re-joins when asked, trains on shards by sleeping
and reports them, over the real RPC (``lease`` > 0: through the trainer's ``ShardLeaser``, that
many shards per lease). ``kill()`` stops it dead (no more calls, no reports)."""

import threading
import time
from dataclasses import dataclass, field

from flexjob.rpc.client import MasterClient
from flexjob.rpc.messages import NodeRef, NodeWorld, ShardInfo
from flexjob.trainer.lease import ShardLeaser
from flexjob.trainer.sampler import NoShard


@dataclass
class SimAgent:
    address: str
    node_id: str
    step_time: float = 0.01
    lease: int = 0
    counted: list[ShardInfo] = field(default_factory=list)
    received: list[int] = field(default_factory=list)
    worlds: list[NodeWorld] = field(default_factory=list)
    error: BaseException | None = None
    finished: bool = False
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> "SimAgent":
        self._thread = threading.Thread(target=self._run, name=self.node_id, daemon=True)
        self._thread.start()
        return self

    def kill(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)

    def join_thread(self, timeout: float) -> None:
        assert self._thread is not None
        self._thread.join(timeout)

    def _run(self) -> None:
        try:
            with MasterClient(self.address, NodeRef(self.node_id), retry_deadline=30) as client:
                leaser = ShardLeaser(client, self.lease) if self.lease else None
                self._rendezvous(client)
                while not self._stop.is_set():
                    if client.heartbeat().num_nodes_waiting > 0:
                        self._rendezvous(client)
                    shard = self._next(client, leaser)
                    if shard.end_of_data:
                        self.finished = True
                        return
                    if not shard.has_shard:
                        self._stop.wait(self.step_time)
                        continue
                    self.received.append(shard.shard_id)
                    if self._stop.wait(self.step_time):
                        return  # killed while training: the shard is never reported
                    if (
                        leaser.report_shard("", shard.shard_id)
                        if leaser
                        else client.report_shard(shard.shard_id)
                    ):
                        self.counted.append(shard)
        except BaseException as exc:  # surfaced by the test
            self.error = exc

    @staticmethod
    def _next(client: MasterClient, leaser: ShardLeaser | None) -> ShardInfo:
        if leaser is None:
            return client.get_shard()
        got = leaser.get_shard("")
        if isinstance(got, NoShard):
            return ShardInfo(has_shard=False, end_of_data=got is NoShard.END)
        return ShardInfo(True, False, got.shard_id, got.epoch, indices=tuple(got.indices))

    def _rendezvous(self, client: MasterClient) -> None:
        client.join(f"127.0.0.1:{29500}")
        deadline = time.monotonic() + 30
        while not self._stop.is_set() and time.monotonic() < deadline:
            world = client.get_world()
            if world.complete:
                self.worlds.append(world)
                return
            self._stop.wait(0.02)
