"""``ElasticDistributedSampler`` in a real ``DataLoader`` (worker processes, pinned memory)
against a real master over gRPC: every sample of every epoch once, and nothing reported done
before training consumed it."""

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from torch.utils.data import DataLoader, Dataset

from flexjob.master.main import MasterHandle, start_master
from flexjob.rpc.client import MasterClient
from flexjob.trainer import ElasticDistributedSampler
from flexjob.trainer.link import MasterLink
from flexjob.trainer.world import NodeIdentity
from tests.support.masters import master_config

SIZE, SHARD, BATCH, EPOCHS = 96, 8, 4, 2


class Squares(Dataset[tuple[int, torch.Tensor]]):
    def __len__(self) -> int:
        return SIZE

    def __getitem__(self, i: int) -> tuple[int, torch.Tensor]:
        return i, torch.tensor([float(i * i)])


@pytest.fixture
def master(tmp_path: Path) -> Iterator[MasterHandle]:
    config = master_config("loader", tmp_path / "job")
    with start_master(config) as handle:
        yield handle


def link(master: MasterHandle, node: str) -> MasterLink:
    return MasterLink(NodeIdentity(node, "worker", 0, 0, 1, master.address))


def loader(sampler: ElasticDistributedSampler) -> DataLoader[tuple[int, torch.Tensor]]:
    return DataLoader(Squares(), batch_size=BATCH, sampler=sampler, num_workers=2, pin_memory=True)


def done(master: MasterHandle) -> int:
    with MasterClient(master.address, "test") as c:
        return c.get_progress().samples_done


def test_two_ranks_with_worker_loaders_see_every_sample_of_every_epoch_once(
    master: MasterHandle,
) -> None:
    samplers = [
        ElasticDistributedSampler(
            Squares(), shard_size=SHARD, epochs=EPOCHS, source=link(master, n)
        )
        for n in ("worker-0", "worker-1")
    ]
    loaders = [loader(s) for s in samplers]
    seen: Counter[tuple[int, int]] = Counter()
    for epoch in range(EPOCHS):
        iters = [iter(ld) for ld in loaders]  # both ranks train the epoch side by side
        live = list(iters)
        while live:
            for it in list(live):
                try:
                    ids, values = next(it)
                except StopIteration:
                    live.remove(it)
                    continue
                assert torch.equal(values.squeeze(1), ids.double().square().float())
                seen.update((epoch, int(i)) for i in ids)
    for s in samplers:
        s.report_consumed()
    assert set(seen) == {(e, i) for e in range(EPOCHS) for i in range(SIZE)}
    assert set(seen.values()) == {1}
    assert done(master) == EPOCHS * SIZE


def test_prefetched_shards_are_not_reported_before_training_consumed_them(
    master: MasterHandle,
) -> None:
    sampler = ElasticDistributedSampler(
        size=SIZE, shard_size=SHARD, epochs=1, source=link(master, "worker-0")
    )
    it = iter(loader(sampler))
    next(it)  # the loader's workers have prefetched several shards' worth by now
    assert done(master) == 0
    rest = sum(len(ids) for ids, _ in it)
    assert rest == SIZE - BATCH
    assert done(master) == 0  # the loop over the epoch ended, but only the next one proves it
    assert sampler.report_consumed() == SIZE // SHARD
    assert done(master) == SIZE
