"""A node waiting for a world stops waiting once the job's data is done (the others
finished while it was cut off): ``DataFinished``, not the rendezvous timeout."""

import time

import pytest

from flexjob.trainer.rendezvous import DataFinished, RendezvousTimeout, next_generation
from flexjob.trainer.world import Generation


class NeverFormed:
    """A master that never forms a world including this node."""

    def join(self) -> int:
        return 3

    def get_world(self, round: int) -> Generation | None:
        return None

    def nodes_waiting(self) -> int:
        return 0


def test_a_wait_for_a_world_ends_when_the_data_is_done() -> None:
    started = time.monotonic()
    with pytest.raises(DataFinished):
        next_generation(NeverFormed(), 2, timeout_s=60, finished=lambda: True)
    assert time.monotonic() - started < 30  # not the 60 s rendezvous timeout


def test_a_wait_while_data_is_left_still_times_out() -> None:
    with pytest.raises(RendezvousTimeout):
        next_generation(NeverFormed(), 2, timeout_s=1.5, finished=lambda: False)
