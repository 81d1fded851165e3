"""Copying state from the most advanced rank: real gloo processes, every tensor compared."""

from __future__ import annotations

from multiprocessing.queues import Queue

import torch

from flexjob.trainer import rank_sync
from flexjob.trainer.group import StoreCache, destroy_group, form_group
from flexjob.trainer.world import Generation
from tests.support.ranks import local_store, spawned


def _tensors(rank: int) -> list[torch.Tensor]:
    """Mixed dtypes and shapes (a non-contiguous one, an empty one), rank-specific values;
    bucketed in small buckets so that several tensors share one."""
    base = float(rank + 1)
    return [
        torch.full((3, 4), base),
        torch.full((5,), base).double(),
        torch.full((2, 3), base).t(),  # non-contiguous
        torch.zeros(0),
        torch.full((7,), base),
        torch.tensor([rank + 10], dtype=torch.int64),
        torch.full((40,), base),  # bigger than a bucket: alone
    ]


def _sync(address: str, rank: int, steps: int, out: Queue[str]) -> None:
    rank_sync.BUCKET_BYTES = 64
    try:
        form_group(Generation(1, rank, 2, address, "job/round-1/"), rank, 2, StoreCache(30), 60)
        model = torch.nn.Linear(3, 2)
        with torch.no_grad():
            model.weight.fill_(rank + 1)
        got, _ = rank_sync.sync_state(model, None, steps)
        tensors = _tensors(rank)
        rank_sync.broadcast_tensors(tensors, 1)
        want = _tensors(1)
        same = all(torch.equal(a, b) for a, b in zip(tensors, want, strict=True))
        out.put(f"{rank} step={got} weight={model.weight.flatten()[0].item()} same={same}")
        destroy_group()
    except Exception as exc:
        out.put(f"{rank} {type(exc).__name__}: {exc}"[:300])


def test_every_tensor_comes_from_the_source_rank() -> None:
    """Rank 1 has committed more steps: both ranks end with its step, its weights and, for a
    broadcast of mixed tensors in shared buckets, exactly its values."""
    _store, address = local_store()
    with spawned() as ranks:
        out = ranks.queue()
        procs = [ranks.process(_sync, address, r, 5 + r, out) for r in (0, 1)]
        for p in procs:
            p.start()
        results = sorted(out.get(timeout=90) for _ in procs)
    assert results == [f"{r} step=6 weight=2.0 same=True" for r in (0, 1)], results
