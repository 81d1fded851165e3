from __future__ import annotations

import pytest

from flexjob.trainer.sampler import Batch, ElasticSampler, NoShard
from tests.trainer.fakes import FakeMaster, shards


def _bound(master: FakeMaster, batch_size: int) -> ElasticSampler:
    s = ElasticSampler(batch_size=batch_size)
    s.bind(master)
    return s


def test_shard_is_reported_only_after_its_last_batch_is_committed() -> None:
    master = FakeMaster(shards(1, 5))
    s = _bound(master, 2)
    seen = []
    for _ in range(3):
        b = s.next_batch()
        assert isinstance(b, Batch)
        assert master.reports == []
        seen += list(b.indices)
        s.commit(b)
    assert seen == [0, 1, 2, 3, 4]
    assert master.reports == [0]


def test_uncommitted_batch_is_handed_out_again() -> None:
    s = _bound(FakeMaster(shards(2, 4)), 4)
    first = s.next_batch()
    assert s.next_batch() is first


def test_end_of_data_is_reported_once_everything_is_consumed() -> None:
    master = FakeMaster(shards(2, 3))
    s = _bound(master, 3)
    assert [list(b.indices) for b in s] == [[0, 1, 2], [3, 4, 5]]
    assert s.next_batch() is NoShard.END and s.ended
    assert master.reports == [0, 1]


def test_sampler_with_size_registers_its_dataset_with_the_master() -> None:
    master = FakeMaster([])
    s = ElasticSampler(batch_size=8, size=100, epochs=3, dataset="digits")
    s.bind(master)
    (p,) = master.registered
    assert (p.name, p.size, p.shard_size, p.epochs) == ("digits", 100, 8, 3)


def test_batch_size_below_one_is_rejected_naming_the_field() -> None:
    with pytest.raises(ValueError, match="batch_size"):
        ElasticSampler(batch_size=0)


def test_sampler_state_round_trips() -> None:
    s = _bound(FakeMaster(shards(1, 4)), 4)
    b = s.next_batch()
    assert isinstance(b, Batch)
    s.commit(b)
    other = ElasticSampler(batch_size=4)
    other.load_state_dict(s.state_dict())
    assert other.samples_committed == 4
