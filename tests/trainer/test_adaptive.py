"""Adaptive batch size: off keeps the fixed global batch; on, goodput picks it within bounds."""

import pytest
import torch

from flexjob.api.job import BatchSpec
from flexjob.core.allocator import ThroughputParams
from flexjob.core.training.batch import BatchPlan, batch_plan_from_spec
from flexjob.trainer.adaptive import AdaptiveBatch, scale_lr

PARAMS = ThroughputParams(alpha=0.05, beta=0.0005, sync_remote=0.05)


def test_off_means_the_fixed_global_batch_exactly() -> None:
    assert AdaptiveBatch.from_spec(None) is None
    assert AdaptiveBatch.from_spec(BatchSpec(global_batch_size=256, micro_batch_size=32)) is None
    spec = BatchSpec(global_batch_size=256, micro_batch_size=32, adaptive=False)
    assert AdaptiveBatch.from_spec(spec) is None
    assert BatchPlan.for_global_batch(256, 32).assignment(3) == (3, 3, 2)


def test_bounds_are_checked_naming_the_field() -> None:
    with pytest.raises(ValueError, match="maxGlobalBatchSize must be >= globalBatchSize"):
        AdaptiveBatch(256, 128, 32)
    with pytest.raises(ValueError, match="multiple of microBatchSize"):
        AdaptiveBatch(100, 400, 32)
    with pytest.raises(ValueError, match="needs globalBatchSize and maxGlobalBatchSize"):
        AdaptiveBatch.from_spec(BatchSpec(global_batch_size=64, adaptive=True))


def test_without_a_noise_scale_the_base_batch_and_lr_hold() -> None:
    adaptive = AdaptiveBatch(256, 4096, 32)
    choice = adaptive.plan(4, 16, PARAMS, None)
    assert choice.global_batch_size == 256 and choice.lr_gain == 1.0


def test_a_bigger_world_with_a_high_noise_scale_gets_a_bigger_batch_within_bounds() -> None:
    adaptive = AdaptiveBatch(256, 4096, 32)
    small = adaptive.plan(1, 1, PARAMS, 5000.0)
    big = adaptive.plan(4, 16, PARAMS, 5000.0)
    assert 256 <= small.global_batch_size <= big.global_batch_size <= 4096
    assert big.global_batch_size > 256 and big.global_batch_size % 32 == 0
    # AdaScale: the gain is E(M) * M / M0, between 1 and M / M0.
    scale = big.global_batch_size / 256
    assert 1.0 < big.lr_gain < scale
    assert big.lr_gain == pytest.approx((5000 + 256) / (5000 + big.global_batch_size) * scale)
    # A low noise scale makes big batches statistically wasteful: it stays smaller.
    assert adaptive.plan(4, 16, PARAMS, 50.0).global_batch_size < big.global_batch_size


def test_scale_lr_sets_each_group_from_its_base() -> None:
    model = torch.nn.Linear(2, 1)
    optimizer = torch.optim.SGD(
        [{"params": [model.weight], "lr": 0.1}, {"params": [model.bias], "lr": 0.01}]
    )
    scale_lr(optimizer, [0.1, 0.01], 2.5)
    assert [g["lr"] for g in optimizer.param_groups] == pytest.approx([0.25, 0.025])


def test_an_adaptive_spec_without_a_micro_batch_takes_the_masters_default() -> None:
    spec = BatchSpec(global_batch_size=64, max_workers=4, adaptive=True, max_global_batch_size=256)
    bounds = AdaptiveBatch.from_spec(spec)
    assert bounds is not None and bounds.micro == batch_plan_from_spec(spec).micro_batch_size == 16
    with pytest.raises(ValueError, match="microBatchSize is required"):
        AdaptiveBatch.from_spec(
            BatchSpec(global_batch_size=64, adaptive=True, max_global_batch_size=256)
        )
