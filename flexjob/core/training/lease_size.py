"""How many shards a training process leases per call to the master: fixed, or adaptive.

Adaptive (the default): the first lease is one shard (a small or short job, and the first
step, cost what they did with one shard per call), then the size follows how fast leases are
used up. A lease used up in less than half of ``hold_s`` doubles the next one; one that lasted
more than twice ``hold_s`` halves it; never above ``cap`` nor below 1. So a process holds about
``hold_s`` of work ahead of its training, whatever its speed: calls to the master per second
stay bounded (a few a second at most once the lease has grown), while what one process can keep
from the others at the end of the data (the shards it leased and has not started) stays about
``hold_s`` of its training. A process that dies gives its leased shards back either way (the
master puts every shard DOING for it back in TODO); only the one it was training is redone.
No I/O: the caller measures the seconds.
"""

from __future__ import annotations

from dataclasses import dataclass

from flexjob.api.limits import MAX_SHARD_LEASE

#: The most shards an adaptive lease grows to.
ADAPTIVE_LEASE_CAP = 32
#: Seconds of training a process's leased shards should last (the adaptive lease's target).
ADAPTIVE_LEASE_HOLD_S = 1.0


@dataclass(frozen=True, slots=True)
class LeasePolicy:
    """``fixed`` shards per call when set; otherwise adaptive between 1 and ``cap``."""

    fixed: int | None = None
    cap: int = ADAPTIVE_LEASE_CAP
    hold_s: float = ADAPTIVE_LEASE_HOLD_S

    def __post_init__(self) -> None:
        if self.fixed is not None and not 1 <= self.fixed <= MAX_SHARD_LEASE:
            raise ValueError(f"fixed lease must be in 1..{MAX_SHARD_LEASE}, got {self.fixed}")
        if not 1 <= self.cap <= MAX_SHARD_LEASE:
            raise ValueError(f"lease cap must be in 1..{MAX_SHARD_LEASE}, got {self.cap}")
        if not self.hold_s > 0:
            raise ValueError(f"hold_s must be > 0, got {self.hold_s}")

    @property
    def first(self) -> int:
        """The size of the first lease."""
        return self.fixed if self.fixed is not None else 1

    def next(self, size: int, used_up_s: float) -> int:
        """The next lease's size after a lease of ``size`` shards was used up (the process
        asked for more) ``used_up_s`` seconds after it arrived."""
        if self.fixed is not None:
            return self.fixed
        if used_up_s < self.hold_s / 2:
            size *= 2
        elif used_up_s > self.hold_s * 2:
            size //= 2
        return max(1, min(self.cap, size))
