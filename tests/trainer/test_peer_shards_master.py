"""A dead rank's shard that the master hands out again before a survivor vouches for it: against
a real in-process master over gRPC, every sample is trained exactly once."""

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from flexjob.core.training.dataset import Dataset
from flexjob.master.main import MasterHandle, start_master
from flexjob.rpc.client import MasterClient
from flexjob.trainer.lease import ShardLeaser
from flexjob.trainer.peer_shards import SLOTS, PeerShards
from flexjob.trainer.sampler import Batch, ElasticSampler
from tests.support.masters import master_config, serving

SIZE, SHARD = 40, 4
RANKS = ["w0", "w1"]


@pytest.fixture
def master(tmp_path: Path) -> Iterator[MasterHandle]:
    config = master_config(
        "peers",
        tmp_path / "job",
        datasets=(Dataset(size=SIZE, shard_size=SHARD, epochs=1, shuffle=False),),
        rendezvous__max_nodes=2,
    )
    yield from serving(start_master(config))


def control_slots(step: dict[int, list[Batch]]) -> list[int]:
    """The control all-reduce's peer slots, summed over the ranks of ``step``."""
    total = [0] * (len(RANKS) * SLOTS)
    for rank, batches in step.items():
        peers = PeerShards()
        peers.formed(RANKS, rank)
        total = [a + b for a, b in zip(total, peers.encode(batches, len(RANKS)), strict=True)]
    return total


def report_as(master: MasterHandle, process: str, shard_id: int) -> bool:
    with MasterClient(master.address, process) as client:
        return client.report_shard(shard_id)


@pytest.mark.parametrize("lease", [1, 3])
def test_shards_handed_out_again_to_the_survivor_are_not_trained_twice(
    master: MasterHandle, lease: int
) -> None:
    """Rank 1 finishes two shards in a step that completes on rank 0 and dies before its report.
    The master takes them back at once and rank 0's next lease gets them (one as the shard it
    cuts next, with ``lease`` 3 the other in its lease queue). The world breaks; rank 0 drops
    them and reports them, and nothing is trained twice."""
    trained: Counter[int] = Counter()
    with MasterClient(master.address, "w0") as c0, MasterClient(master.address, "w1") as c1:
        leaser0 = ShardLeaser(c0, lease)
        s0 = ElasticSampler(leaser0, batch_size=SHARD)
        s1 = ElasticSampler(ShardLeaser(c1, 2), batch_size=SHARD)
        b0 = s0.next_batch()
        done1 = s1.next_batches(2)
        assert isinstance(done1, list) and all(b.last for b in done1)
        while len(leaser0.holding("")) > 1:  # steps before S: all but rank 0's last shard
            assert isinstance(b0, Batch)
            trained.update(b0.indices)
            s0.commit(b0)
            b0 = s0.next_batch()
        assert isinstance(b0, Batch)
        trained.update(b0.indices)  # rank 0's last leased shard trains in step S
        # Step S completes on rank 0.
        peers = PeerShards()
        peers.formed(RANKS, 0)
        peers.control_done(control_slots({0: [b0], 1: done1}))
        for b in done1:
            trained.update(b.indices)
        peers.step_done()
        # Rank 1 dies before its report; rank 0's commit (a report that leases) gets its shards.
        c1.report_failure("killed", restarting=False)
        s0.commit(b0)
        again = s0.next_batch()
        assert isinstance(again, Batch) and again.shard_id == done1[0].shard_id
        if lease > 1:
            assert done1[1].shard_id in leaser0.holding("")
        # Step S+1 breaks (rank 1 is gone): rank 0 settles the peer shards, then trains alone.
        peers.report(lambda process, shard: report_as(master, process, shard), s0.drop_shards)
        for batch in s0:
            trained.update(batch.indices)
        assert trained == Counter(range(SIZE))
        assert c0.get_progress().finished
