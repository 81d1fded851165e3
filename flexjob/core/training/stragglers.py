"""Straggler nodes: which members of the running world are far slower than the others.

A node's *own step time* is what its trainer reports (``NodeStats.step_seconds``): the seconds
of a step spent on the node's own work, waits for slower peers left out (``trainer.step_time``)
— in synchronous training every rank's wall time per step is the slowest one's, so only the
own time tells who is slow. ``StragglerWatch`` keeps each node's reports of the current round
for ``window_s`` seconds; a member is a straggler once it has reported for a whole window
(at least ``min_reports`` times) and the median of its window is more than ``ratio`` times
the median of the other members' window medians (the others', not the world's: in a world of
two, the world's median is the mean of both and no node could be twice it). One slow step is
no straggler; a world change starts every window again. What to do with one (report it,
exclude it from the next world) is ``StragglerPolicy``, carried out by ``master.stragglers``.
No I/O; the caller passes the time.
"""

from __future__ import annotations

import statistics
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from flexjob.api.enums import StragglerPolicy

#: A node's own step time over this many times the others' median makes it a straggler.
DEFAULT_RATIO = 2.0
#: Seconds a node must have been slow (all its reports of that long) before it is one.
DEFAULT_WINDOW_S = 30.0
#: Reports a window needs at least (agents report every second or so).
DEFAULT_MIN_REPORTS = 3


@dataclass(frozen=True, slots=True)
class StragglerConfig:
    """The master's slow-node settings (its ``slow_nodes``; slow *shards* are
    ``ShardConfig``'s): what to do with one (``policy``) and when a node is one."""

    policy: StragglerPolicy = StragglerPolicy.REPORT
    ratio: float = DEFAULT_RATIO
    window_s: float = DEFAULT_WINDOW_S
    min_reports: int = DEFAULT_MIN_REPORTS

    def __post_init__(self) -> None:
        if not self.ratio > 1.0:
            raise ValueError(f"straggler ratio (--straggler-ratio) must be > 1, got {self.ratio}")
        if not self.window_s > 0:
            raise ValueError(
                f"straggler window (--straggler-window) must be > 0 seconds, got {self.window_s}"
            )
        if self.min_reports < 1:
            raise ValueError(f"straggler min_reports must be >= 1, got {self.min_reports}")


@dataclass(frozen=True, slots=True)
class Straggler:
    """A slow member: the median own step time of its window and the others' median."""

    node: str
    step_seconds: float
    others_seconds: float

    @property
    def times_slower(self) -> float:
        return self.step_seconds / self.others_seconds


def slower_than_others(seconds: Mapping[str, float], ratio: float) -> list[Straggler]:
    """The nodes of ``seconds`` (node → own step time) over ``ratio`` x the median of the
    others' times, slowest first; none while fewer than two nodes have a positive time."""
    known = {n: s for n, s in seconds.items() if s > 0}
    found = []
    for node, own in known.items():
        others = [s for n, s in known.items() if n != node]
        if not others:
            continue
        median = statistics.median(others)
        if own > ratio * median:
            found.append(Straggler(node, own, median))
    return sorted(found, key=lambda s: (-s.times_slower, s.node))


@dataclass(slots=True)
class _Window:
    round: int
    since: float  # the first report in this round
    reports: deque[tuple[float, float]] = field(default_factory=deque)  # (time, seconds)


class StragglerWatch:
    """Windows of own step times per node; ``stragglers`` tells the slow members."""

    def __init__(self, config: StragglerConfig | None = None) -> None:
        self.config = config or StragglerConfig()
        self._windows: dict[str, _Window] = {}

    def observe(self, node: str, round_: int, step_seconds: float, now: float) -> None:
        """A report of ``node`` in world ``round_``; 0 (no step measured yet) is skipped."""
        if step_seconds <= 0:
            return
        w = self._windows.get(node)
        if w is None or w.round != round_:
            w = self._windows[node] = _Window(round_, now)
        w.reports.append((now, step_seconds))
        self._trim(w, now)

    def forget(self, node: str) -> None:
        self._windows.pop(node, None)

    def stragglers(self, members: Iterable[str], round_: int, now: float) -> list[Straggler]:
        """The members of world ``round_`` slow for a whole window, slowest first."""
        medians: dict[str, float] = {}
        full: set[str] = set()
        for node in members:
            w = self._windows.get(node)
            if w is None or w.round != round_:
                continue
            self._trim(w, now)
            if not w.reports:
                continue
            medians[node] = statistics.median(s for _, s in w.reports)
            covered = now - w.since >= self.config.window_s
            if covered and len(w.reports) >= self.config.min_reports:
                full.add(node)
        slow = slower_than_others(medians, self.config.ratio)
        return [s for s in slow if s.node in full]

    def _trim(self, w: _Window, now: float) -> None:
        while w.reports and w.reports[0][0] < now - self.config.window_s:
            w.reports.popleft()


def to_exclude(nodes: Iterable[str], members: int, min_nodes: int) -> list[str]:
    """Of ``nodes`` (stragglers slowest first, or nodes that failed the pre-flight check), the
    ones to keep out of the next world: as many as leave it ``min_nodes`` of its ``members``
    (more would stop the job: no world could form without them)."""
    room = max(members - min_nodes, 0)
    return list(nodes)[:room]
