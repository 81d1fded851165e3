"""A rank's own step time: waits for peers left out, measured with a manual clock."""

import torch

from flexjob.trainer.step_time import SMOOTHING, OwnStepTimer
from tests.core.clock import FakeClock


def test_waiting_for_peers_is_not_own_time() -> None:
    clock = FakeClock(0.0)
    timer = OwnStepTimer(clock)
    model = torch.nn.Linear(2, 1)
    timer.attach(model)
    timer.control_left()  # the step starts
    clock.advance(0.2)  # own work: forward, backward...
    model(torch.ones(1, 2)).sum().backward()  # ... the last gradient is ready now
    clock.advance(3.0)  # waits for a slow peer in the gradient all-reduce
    timer.body_ended()
    clock.advance(0.1)  # own work after the body (logging, the next batch)
    timer.control_entered()
    assert abs(timer.seconds - 0.3) < 1e-9


def test_without_gradients_the_body_is_own_time_and_steps_are_smoothed() -> None:
    clock = FakeClock(0.0)
    timer = OwnStepTimer(clock)
    for own in (1.0, 3.0):
        timer.control_left()
        clock.advance(own)
        timer.body_ended()
        timer.control_entered()
    assert timer.seconds == SMOOTHING * 3.0 + (1 - SMOOTHING) * 1.0


def test_a_control_round_without_a_step_or_a_reform_measures_nothing() -> None:
    clock = FakeClock(0.0)
    timer = OwnStepTimer(clock)
    timer.control_left()
    clock.advance(5.0)  # no step ran (waiting for data)
    timer.control_entered()
    timer.control_left()
    clock.advance(2.0)
    timer.body_ended()
    timer.reset()  # the world broke: the step is retried elsewhere
    timer.control_entered()
    assert timer.seconds == 0.0
