import pytest

from flexjob.core.training.batch import BatchPlan


def test_fixed_batch_spreads_max_workers_micro_batches_over_live_workers() -> None:
    plan = BatchPlan.for_max_workers(max_workers=8, micro_batch_size=16)
    assert plan.assignment(3) == (3, 3, 2)  # 8 // 3 = 2, 8 % 3 = 2 ranks get one more
    assert plan.global_batch_size == 128


@pytest.mark.parametrize("world", range(1, 9))
def test_global_batch_stays_fixed_for_every_world_size(world: int) -> None:
    plan = BatchPlan.for_max_workers(8, 16)
    assert sum(plan.assignment(world)) * plan.micro_batch_size == 128


def test_general_form_from_global_batch_and_micro_batch() -> None:
    plan = BatchPlan.for_global_batch(global_batch_size=96, micro_batch_size=8)
    assert plan.total_micro_batches == 12
    assert plan.assignment(5) == (3, 3, 2, 2, 2)


def test_ranks_beyond_the_micro_batches_get_none() -> None:
    assert BatchPlan.for_global_batch(16, 8).assignment(3) == (1, 1, 0)


def test_global_batch_not_a_multiple_of_micro_batch_is_rejected() -> None:
    with pytest.raises(ValueError, match="global_batch_size must be a positive multiple"):
        BatchPlan.for_global_batch(100, 8)


def test_rank_outside_the_world_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"rank must be in \[0, 2\), got 2"):
        BatchPlan.for_max_workers(4, 1).micro_batches(2, 2)
