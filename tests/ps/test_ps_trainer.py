"""The trainer's PS API against two real PS servers: a model trained through ``PsEmbedding``
and ``PsSync`` follows the same model trained locally with torch's own optimizer."""

from collections.abc import Iterator

import numpy as np
import pytest
import torch

from flexjob.core.ps.initializer import initial_rows, table_seed
from flexjob.core.ps.optim import OptimizerKind, OptimizerSpec
from flexjob.ps.service import PsService
from flexjob.rpc.ps_server import serve_ps
from flexjob.trainer.ps_set import PsSet
from flexjob.trainer.ps_torch import PsEmbedding, PsSync

VOCAB, DIM = 50, 4


class Tiny(torch.nn.Module):
    def __init__(self, embedding: torch.nn.Module) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.embedding = embedding
        self.head = torch.nn.Linear(DIM, 1)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.head(self.embedding(ids).sum(dim=1)).squeeze(-1)


@pytest.fixture
def ps_set() -> Iterator[PsSet]:
    servers = [serve_ps(PsService(i, 2), "127.0.0.1", 0) for i in range(2)]
    ps = PsSet([s.address for s in servers])
    yield ps
    ps.close()
    for s in servers:
        s.stop(grace=None)


def _batches(steps: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    rng = np.random.default_rng(3)
    out = []
    for _ in range(steps):
        ids = rng.zipf(1.5, size=(16, 3)).clip(max=VOCAB) - 1  # duplicates within a batch
        out.append((torch.from_numpy(ids.astype(np.int64)), torch.from_numpy(rng.random(16))))
    return out


@pytest.mark.parametrize("defer_push", [False, True], ids=["push-in-backward", "deferred"])
def test_training_through_the_ps_matches_local_torch(ps_set: PsSet, defer_push: bool) -> None:
    emb = PsEmbedding(
        ps_set, "ids", DIM, num_rows=VOCAB, init_scale=0.1, seed=5, defer_push=defer_push
    )
    remote = Tiny(emb)
    sync = PsSync(ps_set, remote, OptimizerSpec(OptimizerKind.SGD, lr=0.1), sync=True)
    assert sync.configure() is True

    local_emb = torch.nn.Embedding(VOCAB, DIM)
    start = initial_rows(np.arange(VOCAB, dtype=np.int64), DIM, table_seed(5, "ids"), 0.1)
    local_emb.weight.data.copy_(torch.from_numpy(start))
    local = Tiny(local_emb)
    opt = torch.optim.SGD(local.parameters(), lr=0.1)

    for ids, target in _batches(12):
        loss_remote = torch.nn.functional.mse_loss(remote(ids), target.float())
        loss_remote.backward()
        sync.step()
        loss_local = torch.nn.functional.mse_loss(local(ids), target.float())
        opt.zero_grad()
        loss_local.backward()
        opt.step()
        assert loss_remote.item() == pytest.approx(loss_local.item(), abs=1e-5)
    assert bool(emb.deferred) is defer_push  # the last step's row gradients wait to be sent
    sync.finish()
    assert not emb.deferred
    every = torch.arange(VOCAB)
    with torch.no_grad():
        np.testing.assert_allclose(
            remote.embedding(every).numpy(), local_emb(every).numpy(), atol=1e-5
        )
        np.testing.assert_allclose(remote.head.weight.numpy(), local.head.weight.numpy(), atol=1e-5)
    # Rows are spread over both PS, and only the rows touched exist.
    stats = ps_set.stats()
    assert all(s.rows > 0 for s in stats)
    assert sum(s.rows for s in stats) <= VOCAB


def test_a_second_worker_takes_the_first_workers_dense_values(ps_set: PsSet) -> None:
    first = Tiny(PsEmbedding(ps_set, "ids", DIM))
    PsSync(ps_set, first, OptimizerSpec()).configure()
    torch.manual_seed(99)
    second = Tiny(PsEmbedding(ps_set, "ids", DIM))
    with torch.no_grad():
        second.head.weight.add_(1.0)
    assert PsSync(ps_set, second, OptimizerSpec()).configure() is False
    assert torch.equal(first.head.weight, second.head.weight)


def test_async_workers_pull_every_k_steps_and_bounded_staleness_pulls_early(
    ps_set: PsSet,
) -> None:
    a_model = Tiny(PsEmbedding(ps_set, "ids", DIM))
    b_model = Tiny(PsEmbedding(ps_set, "ids", DIM))
    a = PsSync(ps_set, a_model, OptimizerSpec(lr=0.1), pull_every=100)
    other_set = PsSet(ps_set.addresses)
    b_model.embedding.ps = other_set
    b = PsSync(other_set, b_model, OptimizerSpec(lr=0.1), pull_every=100, max_staleness=2)
    a.configure()
    b.configure()
    ids, target = _batches(1)[0]
    for _ in range(4):
        torch.nn.functional.mse_loss(a_model(ids), target.float()).backward()
        a.step()
    a.finish()
    before = b_model.head.weight.detach().clone()
    torch.nn.functional.mse_loss(b_model(ids), target.float()).backward()
    b.step()
    b.finish()
    b.step()  # b saw the PS 5 updates ahead (> 2): it pulled, and now holds a's updates too
    assert not torch.equal(before, b_model.head.weight)
    assert b.staleness == 0
    other_set.close()
