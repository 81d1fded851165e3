"""The trainer's side of the master's rendezvous: wait for the next generation, watch joiners.

``WorldSource`` is what the elastic trainer needs from the master; ``MasterLink`` (in
``flexjob.trainer.link``) implements it over gRPC and tests use an in-memory one. Not the
rendezvous itself: the master decides membership and ranks.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Protocol

from flexjob.api.errors import RendezvousError
from flexjob.trainer.world import Generation

log = logging.getLogger(__name__)


class RendezvousTimeout(RendezvousError, TimeoutError):
    """No generation that includes this node was formed in time."""


class DataFinished(RendezvousError):
    """The job's data was all trained while this node waited for a world: nothing is left
    for it (a node cut off, declared dead, that came back after the others finished)."""


class WorldSource(Protocol):
    def join(self) -> int:
        """Ask to be in the next round; returns that round's number."""
        ...

    def get_world(self, round: int) -> Generation | None:
        """The formed world of ``round`` or later with this node in it; None while waiting."""
        ...

    def nodes_waiting(self) -> int:
        """How many nodes wait to join the running world."""
        ...


#: Seconds after a join during which the master is asked at the fastest pace: a broken
#: world re-forms as soon as its last survivor re-joined, which is usually within this.
FAST_POLL_S = 0.5
#: Seconds between two looks at whether the data is done, for a node waiting for a world.
FINISHED_POLL_S = 1.0


def next_generation(
    source: WorldSource,
    after_round: int,
    timeout_s: float,
    poll_s: float = 0.005,
    on_wait: Callable[[], None] | None = None,
    on_joined: Callable[[], None] | None = None,
    finished: Callable[[], bool] | None = None,
) -> Generation:
    """Join and wait for a generation newer than ``after_round`` that includes this node;
    ``on_wait`` is called at every poll (the trainer tells its agent it is alive, waiting),
    ``on_joined`` once right after the join (work that need not delay it). The master is
    asked every ``poll_s`` for ``FAST_POLL_S``, then less and less often (at most every
    0.2 s), so that a long wait for nodes does not load it. ``finished`` (asked every
    ``FINISHED_POLL_S``) ends the wait with ``DataFinished`` once the job's data is done:
    the others finished without this node, and no world will ever include it again."""
    started = time.monotonic()
    deadline = started + timeout_s
    wanted = max(source.join(), after_round + 1)
    if on_joined is not None:
        on_joined()
    delay = poll_s
    looked = started
    while time.monotonic() < deadline:
        gen = source.get_world(wanted)
        if gen is not None and gen.round >= wanted:
            return gen
        if finished is not None and time.monotonic() - looked >= FINISHED_POLL_S:
            looked = time.monotonic()
            if finished():
                raise DataFinished(
                    f"the data was done while waiting for a world after {after_round}"
                )
        if on_wait is not None:
            on_wait()
        time.sleep(delay)
        if time.monotonic() - started > FAST_POLL_S:
            delay = min(max(delay, 0.02) * 1.5, 0.2)
    raise RendezvousTimeout(f"no world including this node after round {after_round}")


class WaitingWatcher:
    """Polls the master in the background for nodes waiting to join; reading is free."""

    def __init__(self, source: WorldSource, interval_s: float = 0.2) -> None:
        self._source = source
        self._interval_s = interval_s
        self._waiting = 0
        self._active = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="flexjob-waiting", daemon=True)
        self._thread.start()

    @property
    def waiting(self) -> int:
        return self._waiting

    def set_active(self, active: bool) -> None:
        """Only the process that decides for the world (rank 0) needs to poll."""
        if active:
            self._active.set()
        else:
            self._active.clear()
            self._waiting = 0

    def clear(self) -> None:
        self._waiting = 0

    def stop(self) -> None:
        self._stop.set()
        self._active.set()
        self._thread.join(timeout=5.0)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._active.wait()
            if self._stop.is_set():
                return
            try:
                self._waiting = self._source.nodes_waiting()
            except Exception as exc:  # the master may be briefly unreachable
                log.debug("nodes_waiting failed: %s", exc)
            self._stop.wait(self._interval_s)
