"""Which shards a survivor reports for its peers: only those finished in a step that completed
here and not proven reported by a later control all-reduce."""

from flexjob.trainer.peer_shards import SLOTS, PeerShards
from flexjob.trainer.sampler import Batch


def batch(shard_id: int, last: bool = True) -> Batch:
    return Batch(range(4), 0, shard_id, 4, last=last)


def world(rank: int) -> PeerShards:
    peers = PeerShards()
    peers.formed(["worker-0", "worker-1", "worker-2"], rank)
    return peers


def summed(*ranks: tuple[int, list[Batch]]) -> list[int]:
    """The control slots after the all-reduce: every rank's own slots, summed."""
    total = [0] * (3 * SLOTS)
    for rank, batches in ranks:
        for i, v in enumerate(world(rank).encode(batches, 3)):
            total[i] += v
    return total


def reported(peers: PeerShards) -> list[tuple[str, int]]:
    got: list[tuple[str, int]] = []
    peers.report(lambda process, shard: got.append((process, shard)) is None)
    return got


def test_a_peer_that_died_after_a_completed_step_gets_its_finished_shards_reported() -> None:
    peers = world(0)
    peers.control_done(summed((0, [batch(1)]), (1, [batch(7)]), (2, [batch(9, last=False)])))
    peers.step_done()
    assert reported(peers) == [("worker-1", 7)]  # 9's shard is not finished; 1 is our own
    assert reported(peers) == []  # once


def test_a_step_that_failed_here_vouches_for_nothing() -> None:
    peers = world(0)
    peers.control_done(summed((1, [batch(7)])))
    assert reported(peers) == []  # no step_done: its all-reduce failed here


def test_the_next_control_all_reduce_proves_every_peer_reported() -> None:
    peers = world(2)
    peers.control_done(summed((1, [batch(7)])))
    peers.step_done()
    peers.control_done(summed((1, [batch(8, last=False)])))
    assert reported(peers) == []


def test_a_new_world_forgets_the_old_worlds_shards() -> None:
    peers = world(0)
    peers.control_done(summed((1, [batch(7)])))
    peers.step_done()
    peers.formed(["worker-0"], 0)
    assert reported(peers) == []


def test_each_rank_vouches_for_at_most_slots_shards_per_step() -> None:
    peers = world(0)
    many = [batch(i) for i in range(SLOTS + 3)]
    peers.control_done(summed((1, many)))
    peers.step_done()
    assert reported(peers) == [("worker-1", i) for i in range(SLOTS)]
