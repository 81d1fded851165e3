"""A rank's own step time: the seconds of a step it spends on its own work, not waiting.

In synchronous training every rank's wall time per step is the slowest rank's: the others
wait for it in the gradient all-reduce or the next step's control all-reduce. ``OwnStepTimer``
leaves those waits out: a step's own time is from the step's start (the control all-reduce
returned, everyone together) until this rank's last gradient was computed (a hook on each
parameter; the backward pass waits for peers only after that), plus the time from the end of
the step's body to the next control all-reduce. Collectives the script runs itself before its
backward pass count as its own time (a slow peer then makes everyone look slow, never one
rank). Reported smoothed (``seconds``) in the trainer's status; the master compares nodes
(``core.training.stragglers``). Not for throughput (``trainer.goodput``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

#: Weight of the newest step in ``seconds``.
SMOOTHING = 0.5


class OwnStepTimer:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._start: float | None = None
        self._last_grad: float | None = None
        self._body_end: float | None = None
        self._hooked: set[int] = set()
        #: The smoothed own seconds per step (0.0 until a step was measured).
        self.seconds = 0.0

    def attach(self, module: Any) -> None:
        """Watch ``module``'s parameters' gradients (once per parameter)."""
        for p in module.parameters():
            if p.requires_grad and id(p) not in self._hooked:
                self._hooked.add(id(p))
                p.register_hook(self._grad_ready)

    def _grad_ready(self, grad: Any) -> None:
        if self._start is not None and self._body_end is None:
            self._last_grad = self._clock()

    def control_entered(self) -> None:
        """Before the control all-reduce: the step that ran since the last one (if any) ends."""
        now = self._clock()
        if self._start is not None and self._body_end is not None:
            ready = self._last_grad if self._last_grad is not None else self._body_end
            own = max(ready - self._start, 0.0) + max(now - self._body_end, 0.0)
            self.seconds = own if self.seconds == 0.0 else (
                SMOOTHING * own + (1 - SMOOTHING) * self.seconds
            )  # fmt: skip
        self._start = self._last_grad = self._body_end = None

    def control_left(self) -> None:
        """The control all-reduce returned: a step may start now."""
        self._start = self._clock()

    def body_ended(self) -> None:
        """The step's body ran (its gradients are averaged)."""
        if self._start is not None:
            self._body_end = self._clock()

    def reset(self) -> None:
        """A new world: the next step starts the measure again (the old rate is kept)."""
        self._start = self._last_grad = self._body_end = None
