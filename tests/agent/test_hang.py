"""Hang detection decides from the trainer's own progress file, never from the agent."""

import dataclasses

import pytest

from flexjob.agent.hang import collective_timeout_for, stalled_for
from flexjob.trainer.status import TrainerStatus


def status(at: float) -> TrainerStatus:
    return TrainerStatus(pid=1, in_place=True, round=2, step=7, samples=64, epoch=0,
                         world_size=2, time=at)  # fmt: skip


def test_a_trainer_without_progress_past_the_timeout_is_stalled() -> None:
    assert stalled_for(status(100.0), now=131.0, timeout_s=30.0) == pytest.approx(31.0)


def test_a_trainer_that_progressed_within_the_timeout_is_not() -> None:
    assert stalled_for(status(100.0), now=129.0, timeout_s=30.0) is None


def test_a_process_without_a_status_file_or_a_zero_timeout_is_never_stalled() -> None:
    assert stalled_for(None, now=1e9, timeout_s=30.0) is None
    assert stalled_for(status(0.0), now=1e9, timeout_s=0.0) is None


def test_a_trainer_that_closed_is_ending_not_hung() -> None:
    """Its interpreter's exit (a last garbage collection of torch's objects) may take long
    on a loaded machine: no hang kill, no restart of a node that finished."""
    closed = dataclasses.replace(status(100.0), closed=True)
    assert stalled_for(closed, now=1e9, timeout_s=30.0) is None


def test_the_clock_starts_again_when_the_master_is_back() -> None:
    assert stalled_for(status(100.0), now=131.0, timeout_s=30.0, not_before=120.0) is None
    assert stalled_for(status(100.0), now=151.0, timeout_s=30.0, not_before=120.0) == 31.0


def test_collectives_give_up_well_before_the_hang_timeout() -> None:
    assert collective_timeout_for(180.0) == pytest.approx(60.0)
    assert collective_timeout_for(0.0) is None
