"""ElasticTrainer with a fixed global batch: it asks the master for its plan on every formed
world and runs that many micro-batches per step, all-reducing once (one process, real gloo)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
import torch
import torch.distributed as dist
import torch.nn.functional as F

from flexjob.api import names
from flexjob.api.errors import NotFoundError
from flexjob.core.training.batch import BatchPlan, RankBatch
from flexjob.trainer import ElasticSampler, ElasticTrainer
from tests.support.ranks import local_store
from tests.trainer.fakes import FakeMaster, shards


@dataclass
class PlannedMaster(FakeMaster):
    plan: BatchPlan | None = None
    asked: list[tuple[int, int]] = field(default_factory=list)

    def get_batch_plan(self, rank: int, world_size: int) -> RankBatch:
        self.asked.append((rank, world_size))
        if self.plan is None:
            raise NotFoundError("no batch plan")
        return self.plan.for_rank(rank, world_size)


@pytest.fixture
def store(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    for key in (names.ENV_ROUND, names.ENV_STORE_ADDRESS, names.ENV_STATUS_FILE):
        monkeypatch.delenv(key, raising=False)
    _server, address = local_store()
    yield address
    if dist.is_initialized():
        dist.destroy_process_group()


def _trainer(master: PlannedMaster, micro: int = 4) -> ElasticTrainer:
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    return ElasticTrainer(model, opt, ElasticSampler(batch_size=micro), link=master)


X = torch.linspace(-1, 1, 48 * 4).reshape(48, 4)
Y = (torch.arange(48) % 2).to(torch.int64)


def test_each_step_runs_the_planned_micro_batches_with_one_all_reduce(store: str) -> None:
    master = PlannedMaster(shards(4, 12), store_address=store, plan=BatchPlan(4, 3))
    calls: list[list[int]] = []
    grads: list[torch.Tensor] = []
    with _trainer(master) as t:

        def train_step(s: object) -> None:
            calls.append(list(s.indices))  # type: ignore[attr-defined]
            idx = torch.tensor(s.indices)  # type: ignore[attr-defined]
            loss = F.cross_entropy(t.model(X[idx]), Y[idx], reduction="sum")
            (loss * s.loss_scale).backward()  # type: ignore[attr-defined]

        for step in t.steps():
            with t.step():
                assert (len(step.micro), step.global_samples) == (3, 12)
                for micro in t.micro_steps(step):
                    train_step(micro)
                grads.append(t.module.weight.grad.clone())  # type: ignore[union-attr]
                t.optimizer.step()
    assert master.asked == [(0, 1)]
    assert [len(c) for c in calls] == [4] * 12
    assert sorted(i for c in calls for i in c) == list(range(48))
    assert master.reports == [0, 1, 2, 3]
    assert len(grads) == 4  # four steps of 12 samples, not twelve of 4


def test_accumulated_gradient_is_the_global_batch_mean(store: str) -> None:
    master = PlannedMaster(shards(1, 12), store_address=store, plan=BatchPlan(4, 3))
    with _trainer(master) as t:
        reference = torch.nn.Linear(4, 2)
        reference.load_state_dict(t.module.state_dict())
        F.cross_entropy(reference(X[:12]), Y[:12]).backward()
        for step in t.steps():
            with t.step():
                for micro in t.micro_steps(step):
                    idx = torch.tensor(micro.indices)
                    loss = F.cross_entropy(t.model(X[idx]), Y[idx], reduction="sum")
                    (loss * micro.loss_scale).backward()
                got = t.module.weight.grad
                assert got is not None and reference.weight.grad is not None
                torch.testing.assert_close(got, reference.weight.grad)


def test_without_a_plan_a_step_is_one_sampler_batch(store: str) -> None:
    master = PlannedMaster(shards(2, 8), store_address=store, plan=None)
    with _trainer(master) as t:
        sizes = [len(s.indices) for s in t.steps()]
    assert t.batch_plan is None and sizes == [4, 4, 4, 4]


def test_a_sampler_batch_other_than_the_micro_batch_is_an_error(store: str) -> None:
    master = PlannedMaster(shards(2, 8), store_address=store, plan=BatchPlan(8, 2))
    with pytest.raises(ValueError, match="microBatchSize is 8"):
        _trainer(master, micro=4).start()


def test_a_node_asking_to_join_waits_for_the_step_whose_batches_are_cut(store: str) -> None:
    """The step in flight when a node asks to join runs its planned micro-batches in the old
    world; the new world starts from the next global batch, so no sample changes step (what
    keeps an elastic run's loss equal to a fixed world's)."""
    master = PlannedMaster(shards(4, 12), store_address=store, plan=BatchPlan(4, 3))
    steps: list[list[int]] = []
    with _trainer(master) as t:
        for step in t.steps():
            with t.step():
                steps.append(list(step.indices))
                for micro in t.micro_steps(step):
                    idx = torch.tensor(micro.indices)
                    F.cross_entropy(t.model(X[idx]), Y[idx], reduction="sum").backward()
                t.optimizer.step()
            if len(steps) == 1:
                assert t._watcher is not None
                t._watcher._waiting = 1  # a node asks to join; the new world plans 2 each
                master.plan = BatchPlan(4, 2)
        reforms = t.reforms
    assert reforms == 1
    assert [len(s) for s in steps] == [12, 12, 8, 8, 8]
    assert steps[1] == list(range(12, 24))  # cut before the join: whole, in the old world
    assert [i for s in steps for i in s] == list(range(48))
