"""Heartbeat tracking: which nodes have gone quiet for longer than the heartbeat timeout.

Any call from a node counts as a sign of life. The clock is injected; the master's periodic
loop asks ``expired()`` and handles the dead. Not for restarting anything.
"""

import time
from collections.abc import Callable, Iterable


class HeartbeatTracker:
    def __init__(self, timeout: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.timeout = timeout
        self._clock = clock
        self._last: dict[str, float] = {}

    def beat(self, node_id: str) -> None:
        self._last[node_id] = self._clock()

    def track(self, node_ids: Iterable[str]) -> None:
        """Start the clock for nodes known from elsewhere (a restored state)."""
        for node_id in node_ids:
            self.beat(node_id)

    def forget(self, node_id: str) -> None:
        self._last.pop(node_id, None)

    def __contains__(self, node_id: object) -> bool:
        """Whether ``node_id`` is tracked (heard from, not expired nor forgotten)."""
        return node_id in self._last

    def alive(self) -> list[str]:
        return list(self._last)

    def expired(self) -> list[str]:
        """Nodes silent for longer than the timeout; they are forgotten."""
        deadline = self._clock() - self.timeout
        dead = [n for n, t in self._last.items() if t < deadline]
        for n in dead:
            del self._last[n]
        return dead
