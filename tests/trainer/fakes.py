"""In-memory stand-ins for the master: shards from a list, a rendezvous of one node."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from flexjob.core.training.dataset import Dataset
from flexjob.trainer.sampler import NoShard, ShardSamples
from flexjob.trainer.world import Generation


@dataclass
class FakeMaster:
    """Hands out ``shards`` in order; remembers reports; one node, rank 0, fresh round per join."""

    shards: list[ShardSamples]
    store_address: str = ""
    reports: list[int] = field(default_factory=list)
    registered: list[Dataset] = field(default_factory=list)
    round: int = 0
    waiting: int = 0
    published: dict[str, str] = field(default_factory=dict)

    def register_dataset(self, params: Dataset) -> None:
        self.registered.append(params)

    def get_shard(self, dataset: str) -> ShardSamples | NoShard:
        return self.shards.pop(0) if self.shards else NoShard.END

    def report_shard(self, dataset: str, shard_id: int) -> bool:
        self.reports.append(shard_id)
        return True

    def report_shards(self, dataset: str, shard_ids: Sequence[int]) -> list[bool]:
        return [self.report_shard(dataset, s) for s in shard_ids]

    def join(self) -> int:
        self.round += 1
        self.waiting = 0
        return self.round

    def get_world(self, round: int) -> Generation | None:
        if self.round < round:
            return None
        return Generation(self.round, 0, 1, self.store_address, f"test/round-{self.round}/")

    def nodes_waiting(self) -> int:
        return self.waiting

    def publish(self, key: str, value: str) -> None:
        self.published[key] = value


def shards(n: int, size: int, epoch: int = 0) -> list[ShardSamples]:
    return [ShardSamples(i, epoch, range(i * size, (i + 1) * size)) for i in range(n)]
