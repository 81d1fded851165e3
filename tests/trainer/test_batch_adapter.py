"""Adaptive batch size in ``ElasticTrainer`` (``spec.batch.adaptive``): rank 0's re-plan rides
on the step's control all-reduce, every rank runs the new batch from the next step with its
learning rate scaled by AdaScale's gain; every sample is still trained once. A fixed plan
never changes (one process, real gloo)."""

from __future__ import annotations

import dataclasses

import pytest
import torch
import torch.nn.functional as F

from flexjob.core.training.batch import BatchPlan
from flexjob.trainer import ElasticSampler, ElasticTrainer
from flexjob.trainer.adaptive import AdaptiveBatch
from flexjob.trainer.batch_adapter import (
    BASE_LR_KEY,
    GAIN_UNIT,
    REPLAN_EVERY_S,
    BatchAdapter,
    replan_every,
)
from flexjob.trainer.goodput import GoodputReporter
from flexjob.trainer.settings import TrainerSettings
from tests.trainer.fakes import shards
from tests.trainer.test_fixed_batch_trainer import PlannedMaster, X, Y, store  # noqa: F401

settings = TrainerSettings.from_env  # the settings a given environment makes
ADAPTIVE = dataclasses.replace(BatchPlan(4, 3), max_global_batch_size=24)  # 12 .. 24 samples


def _run(master: PlannedMaster) -> tuple[ElasticTrainer, list[int], list[int]]:
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    sizes: list[int] = []
    seen: list[int] = []
    with ElasticTrainer(model, opt, ElasticSampler(batch_size=4), link=master) as t:
        for step in t.steps():
            with t.step():
                sizes.append(step.global_samples)
                for micro in t.micro_steps(step):
                    seen.extend(micro.indices)
                    idx = torch.tensor(micro.indices)
                    loss = F.cross_entropy(t.model(X[idx]), Y[idx], reduction="sum")
                    (loss * micro.loss_scale).backward()
                t.optimizer.step()
    return t, sizes, seen


def test_rank_0s_new_batch_runs_from_the_next_step_with_the_lr_scaled(
    store: str,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    proposals = iter([(24, int(1.5 * GAIN_UNIT))])
    monkeypatch.setattr(BatchAdapter, "proposal", lambda self, rank: next(proposals, (0, 0)))
    master = PlannedMaster(shards(4, 12), store_address=store, plan=ADAPTIVE)
    t, sizes, seen = _run(master)
    assert sizes == [12, 24, 12]  # the base batch, then rank 0's, then what was left
    assert sorted(seen) == list(range(48))  # every sample once
    group = t.optimizer.param_groups[0]
    assert group[BASE_LR_KEY] == 0.1 and group["lr"] == pytest.approx(0.15)
    assert t.batch_plan is not None and t.batch_plan.global_batch_size == 24


def test_a_fixed_batch_is_never_re_planned(store: str) -> None:  # noqa: F811
    master = PlannedMaster(shards(4, 12), store_address=store, plan=BatchPlan(4, 3))
    t, sizes, _ = _run(master)
    assert sizes == [12, 12, 12, 12] and t._adapter is None
    assert BASE_LR_KEY not in t.optimizer.param_groups[0]


class _Ddp:
    """Where ``formed`` registers its noise-scale hook (a DDP wrapper in the trainer)."""

    def __init__(self) -> None:
        self.hooks: list[object] = []

    def register_comm_hook(self, state: object, hook: object) -> None:
        self.hooks.append(hook)


def _adapter(clock: list[float], lr: float = 0.1) -> BatchAdapter:
    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    reporter = GoodputReporter(4.0)
    # Step time dominated by a fixed cost: a bigger batch is nearly free per sample.
    for local in (4.0, 8.0):
        for _ in range(5):
            reporter.meter.record(1, 2, local, 0.5 + 0.001 * local)
    # A noise scale of 1,000 samples (|G|^2 = 1, tr(Sigma) = 1000) from batches of 6 and 12.
    reporter.noise.observe(6.0, 1 + 1000 / 6, 12.0, 1 + 1000 / 12)
    return BatchAdapter(AdaptiveBatch(12, 24, 4), opt, reporter, clock=lambda: clock[0])


def test_rank_0_proposes_the_goodput_batch_once_per_period_and_others_never() -> None:
    clock = [100.0]
    adapter = _adapter(clock)
    ddp = _Ddp()
    adapter.formed(1, 2, ddp, BatchPlan(4, 3).for_rank(0, 2))  # type: ignore[arg-type]
    assert len(ddp.hooks) == 1  # two replicas: the noise scale is estimated
    assert adapter.proposal(1) == (0, 0)
    batch, gain = adapter.proposal(0)
    assert batch == 24  # noise scale 1000 >> 24: the largest batch wins
    assert gain / GAIN_UNIT == pytest.approx(adapter.bounds.gain(24, 1000.0), rel=1e-6)
    share = adapter.apply(batch, gain, 1, 2)
    assert (share.global_batch_size, share.micro_batches, share.max_global_batch_size) == (
        24,
        3,
        24,
    )
    assert adapter.optimizer.param_groups[0]["lr"] == pytest.approx(0.1 * gain / GAIN_UNIT)
    clock[0] += REPLAN_EVERY_S
    assert adapter.proposal(0) == (0, 0)  # due again, but nothing would change


def test_a_new_world_starts_from_the_base_batch_and_a_restart_from_the_users_lr() -> None:
    clock = [0.0]
    adapter = _adapter(clock)
    adapter.apply(24, 2 * GAIN_UNIT, 0, 1)
    assert adapter.optimizer.param_groups[0]["lr"] == pytest.approx(0.2)
    ddp = _Ddp()
    adapter.formed(1, 1, ddp, BatchPlan(4, 3).for_rank(0, 1))  # type: ignore[arg-type]
    assert not ddp.hooks  # one replica: no second batch size to estimate it from
    assert (adapter.global_batch, adapter.gain) == (12, 1.0)
    assert adapter.optimizer.param_groups[0]["lr"] == pytest.approx(0.1)
    # A restarted trainer's optimizer comes back from its checkpoint with a scaled rate.
    adapter.apply(24, 2 * GAIN_UNIT, 0, 1)
    restored = adapter.optimizer
    again = BatchAdapter(AdaptiveBatch(12, 24, 4), restored, GoodputReporter(4.0))
    assert again.base_lrs == [0.1] and restored.param_groups[0]["lr"] == pytest.approx(0.1)


def test_the_replan_period_comes_from_the_environment_and_a_bad_one_is_named() -> None:
    assert replan_every(settings({})) == REPLAN_EVERY_S
    assert replan_every(settings({"FLEXJOB_BATCH_REPLAN_S": "2.5"})) == 2.5
    for bad in ("0", "-1", "soon", "inf"):
        with pytest.raises(ValueError, match="FLEXJOB_BATCH_REPLAN_S must be a number"):
            replan_every(settings({"FLEXJOB_BATCH_REPLAN_S": bad}))
