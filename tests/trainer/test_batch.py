from __future__ import annotations

import pytest

from flexjob.trainer.batch import accumulation_steps, fixed_batch_plan


@pytest.mark.parametrize("world", [1, 2, 3, 5, 8])
def test_accumulation_steps_of_all_ranks_add_up_to_the_global_batch(world: int) -> None:
    assert sum(accumulation_steps(8, r, world) for r in range(world)) == 8


def test_first_ranks_take_the_remainder() -> None:
    assert [accumulation_steps(8, r, 3) for r in range(3)] == [3, 3, 2]


def test_fixed_batch_plan_keeps_global_batch_when_the_world_shrinks() -> None:
    full = fixed_batch_plan(256, 32, rank=0, world_size=8)
    half = fixed_batch_plan(256, 32, rank=0, world_size=4)
    assert (full.micro_batches, half.micro_batches) == (1, 2)
    assert half.global_batch_size == 256


def test_global_batch_not_a_multiple_of_micro_batch_is_rejected() -> None:
    with pytest.raises(ValueError, match="global_batch_size"):
        fixed_batch_plan(100, 32, rank=0, world_size=1)


def test_rank_outside_the_world_is_rejected() -> None:
    with pytest.raises(ValueError, match="rank"):
        accumulation_steps(4, 2, 2)
