"""Hang detection: a trainer that stopped making progress, told from its own status file.

The trainer helpers rewrite their status file at every step and while they wait (for a world,
for data); a process that is stopped (SIGSTOP), deadlocked, or blocked in a collective longer
than its collective timeout stops rewriting it, while its agent keeps heartbeating. Processes
without the helpers (no status file) are not watched. Not for killing (the agent does that).
"""

from __future__ import annotations

from flexjob.trainer.status import TrainerStatus

#: Seconds without progress before a trainer is taken for hung (``--hang-timeout``).
DEFAULT_HANG_TIMEOUT_S = 180.0
#: A trainer's collectives give up after this share of the hang timeout, so a healthy peer of
#: a hung process leaves the collective (and shows progress again) well before it.
COLLECTIVE_SHARE = 1 / 3


def stalled_for(
    status: TrainerStatus | None, now: float, timeout_s: float, not_before: float = 0.0
) -> float | None:
    """Seconds since the trainer last showed progress, when that exceeds ``timeout_s``;
    None while it progresses, when it publishes no status, or when ``timeout_s`` is 0 (off).
    ``not_before``: the clock starts no earlier (the master came back then: a trainer waits
    for an unreachable master without stepping, and that is no hang). A trainer that closed
    (``TrainerStatus.closed``) is ending, not hung."""
    if status is None or timeout_s <= 0 or status.closed:
        return None
    idle = now - max(status.time, not_before)
    return idle if idle > timeout_s else None


def collective_timeout_for(hang_timeout_s: float) -> float | None:
    """The collective timeout to give trainers under ``hang_timeout_s`` (None: keep theirs)."""
    return hang_timeout_s * COLLECTIVE_SHARE if hang_timeout_s > 0 else None
