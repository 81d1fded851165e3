"""ShardLeaser against a real in-process master over gRPC on loopback: shards leased a few at a
time, one call per shard, nothing trained twice across a master restart, unused shards given
back."""

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from flexjob.core.training.dataset import Dataset
from flexjob.core.training.lease_size import LeasePolicy
from flexjob.core.training.master_config import MasterConfig
from flexjob.master.main import MasterHandle, start_master
from flexjob.rpc.client import MasterClient
from flexjob.trainer.lease import ShardLeaser, lease_size
from flexjob.trainer.sampler import ElasticSampler, NoShard
from flexjob.trainer.settings import TrainerSettings
from tests.support.masters import master_config, serving

settings = TrainerSettings.from_env  # the settings a given environment makes

SIZE, SHARD = 60, 5


@pytest.fixture
def config(tmp_path: Path) -> MasterConfig:
    return master_config(
        "lease",
        tmp_path / "job",
        datasets=(Dataset(size=SIZE, shard_size=SHARD, epochs=2, shuffle=True, seed=3),),
        rendezvous__max_nodes=2,
    )


@pytest.fixture
def master(config: MasterConfig) -> Iterator[MasterHandle]:
    yield from serving(start_master(config))


def train_all(sampler: ElasticSampler) -> Counter[tuple[int, int]]:
    seen: Counter[tuple[int, int]] = Counter()
    for batch in sampler:
        seen.update((batch.epoch, i) for i in batch.indices)
    return seen


@pytest.mark.parametrize("lease", [1, 4])
def test_every_sample_once_with_one_call_per_shard(master: MasterHandle, lease: int) -> None:
    with MasterClient(master.address, "w0") as client:
        leaser = ShardLeaser(client, lease)
        seen = train_all(ElasticSampler(leaser, batch_size=2))
        assert seen == Counter({(e, i): 1 for e in range(2) for i in range(SIZE)})
        shards = 2 * SIZE // SHARD
        assert leaser.calls <= shards + 1  # each report also leases; the first lease alone
        assert client.get_progress().finished


def test_two_leasers_share_the_data_and_never_overlap(master: MasterHandle) -> None:
    with MasterClient(master.address, "w0") as c0, MasterClient(master.address, "w1") as c1:
        samplers = [ElasticSampler(ShardLeaser(c, 3), batch_size=5) for c in (c0, c1)]
        seen: Counter[tuple[int, int]] = Counter()
        ended = [False, False]
        while not all(ended):  # alternate batches between the two trainers
            for k, sampler in enumerate(samplers):
                got = sampler.next_batch()
                if got is NoShard.END:
                    ended[k] = True
                elif not isinstance(got, NoShard):
                    seen.update((got.epoch, i) for i in got.indices)
                    sampler.commit(got)
        assert seen == Counter({(e, i): 1 for e in range(2) for i in range(SIZE)})
        assert all(s.shards_reported > 0 for s in samplers)


def test_a_restarted_master_hands_back_held_shards_that_are_not_queued_twice(
    master: MasterHandle,
) -> None:
    config = master.config.with_overrides(port=master.port)
    client = MasterClient(master.address, "w0", retry_deadline=30)
    restarted: list[MasterHandle] = []
    try:
        sampler = ElasticSampler(ShardLeaser(client, 1), batch_size=SHARD)
        first = sampler.next_batch()  # one shard leased and being trained
        assert not isinstance(first, NoShard)
        master.stop()  # its snapshot has that shard DOING for w0
        restarted.append(start_master(config))
        # Cutting ahead asks for the next shard: the restarted master hands the held one back
        # first (its earlier answer may have been lost); the leaser must not queue it again.
        ahead = sampler.next_batches(2)
        assert isinstance(ahead, list) and ahead[0] is first
        assert [b.shard_id for b in ahead[1:]] != [first.shard_id]
        seen = Counter((first.epoch, i) for i in first.indices)
        sampler.commit(first)
        seen += train_all(sampler)
        assert seen == Counter({(e, i): 1 for e in range(2) for i in range(SIZE)})
        assert client.get_progress().finished
    finally:
        client.close()
        for handle in restarted:
            handle.stop()


def test_close_gives_unused_shards_back_to_the_master(master: MasterHandle) -> None:
    with MasterClient(master.address, "w0") as c0, MasterClient(master.address, "w1") as c1:
        leaser = ShardLeaser(c0, 8)
        got = leaser.get_shard("")
        assert not isinstance(got, NoShard)
        leaser.report_shard("", got.shard_id)
        leaser.close()  # 7 leased, never trained
        seen = train_all(ElasticSampler(ShardLeaser(c1, 8), batch_size=5))
        done = {(got.epoch, i) for i in got.indices}
        assert set(seen) == {(e, i) for e in range(2) for i in range(SIZE)} - done


@pytest.mark.parametrize("raw", ["0", "x", "2000"])
def test_a_bad_lease_size_names_the_variable_and_the_values(raw: str) -> None:
    with pytest.raises(
        ValueError, match=r"FLEXJOB_SHARD_LEASE must be 'auto' or an integer in 1\.\.1024"
    ):
        lease_size(settings({"FLEXJOB_SHARD_LEASE": raw}))


def test_lease_size_defaults_to_adaptive_and_a_number_fixes_it() -> None:
    assert (
        lease_size(settings({}))
        == LeasePolicy()
        == lease_size(settings({"FLEXJOB_SHARD_LEASE": "auto"}))
    )
    assert lease_size(settings({})).fixed is None and lease_size(settings({})).first == 1
    assert lease_size(settings({"FLEXJOB_SHARD_LEASE": "8"})) == LeasePolicy(fixed=8)
    # the trainer's sampler keeps one shard per call unless told (its reports are calls anyway)
    assert lease_size(settings({}), default="1") == LeasePolicy(fixed=1)
    assert lease_size(settings({"FLEXJOB_SHARD_LEASE": "auto"}), default="1") == LeasePolicy()


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_adaptive_lease_grows_while_shards_go_fast_and_shrinks_when_slow(
    master: MasterHandle,
) -> None:
    clock = FakeClock()
    with MasterClient(master.address, "w0") as client:
        leaser = ShardLeaser(client, LeasePolicy(cap=8, hold_s=1.0), clock=clock)
        sampler = ElasticSampler(leaser, batch_size=SHARD)
        sizes: list[int] = []
        seen: Counter[tuple[int, int]] = Counter()
        for batch in sampler:
            seen.update((batch.epoch, i) for i in batch.indices)
            sizes.append(len(leaser.holding("")))
            # fast shards for the first epoch, then each shard takes 0.3 s
            clock.now += 0.01 if batch.epoch == 0 else 0.3
        assert seen == Counter({(e, i): 1 for e in range(2) for i in range(SIZE)})
        # held right after each hand-out: the lease grew 1, 2, 4, 8 and stayed at the cap...
        assert sizes[:8] == [1, 2, 1, 4, 3, 2, 1, 8]
        assert max(sizes) == 8
        # ...until a lease of slow shards lasted 8 x 0.3 s > 2 s: the next asks for half
        assert leaser.lease == 4


def test_reports_of_many_shards_go_in_one_call_that_leases_nothing(master: MasterHandle) -> None:
    with MasterClient(master.address, "w0") as client, MasterClient(master.address, "w1") as c1:
        leaser = ShardLeaser(client, 8)
        held = [leaser.get_shard("") for _ in range(8)]
        shards = [s for s in held if not isinstance(s, NoShard)]
        calls = leaser.calls
        assert leaser.report_shards("", [s.shard_id for s in shards]) == [True] * 8
        assert leaser.calls == calls + 1
        assert client.get_progress().samples_done == 8 * SHARD
        rest = 2 * SIZE // SHARD - 8  # every other shard is still free for another process
        assert len(c1.lease_shards(1024).shards) == rest
