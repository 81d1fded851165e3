"""The steps a recovery run's training processes log (``recovery_train.py``: one line a step,
``time node pid round world ...``) and the gaps in them that ``recovery.py`` reports: when a
world resumed after a kill, how long the others paused at a join. Not for starting or killing
anything (``recovery.py``)."""

from __future__ import annotations

import itertools
import statistics
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Step:
    t: float
    node: str
    pid: int
    round: int
    world: int


def read_steps(d: Path) -> list[Step]:
    steps = []
    for f in d.glob("*.log"):
        for line in f.read_text().splitlines():
            parts = line.split()
            if len(parts) == 6:
                steps.append(
                    Step(float(parts[0]), parts[1], int(parts[2]), int(parts[3]), int(parts[4]))
                )
    return sorted(steps, key=lambda s: s.t)


def steady(work: Path, world: int, since: float, seconds: float) -> bool:
    steps = [s for s in read_steps(work) if s.t >= since and s.world == world]
    return bool(steps) and steps[-1].t - steps[0].t >= seconds


def resume_after(work: Path, t0: float, exclude_node: str | None = None) -> float | None:
    """Seconds from ``t0`` to the first step of a new generation (a (pid, round) not seen
    stepping before ``t0``) on a node other than ``exclude_node``."""
    steps = read_steps(work)
    before = {(s.pid, s.round) for s in steps if s.t < t0}
    for s in steps:
        if s.t > t0 and (s.pid, s.round) not in before and s.node != exclude_node:
            return s.t - t0
    return None


def _gaps(work: Path, nodes: set[str], t0: float, t1: float) -> list[float]:
    """The gaps between consecutive steps of each of ``nodes`` within [t0, t1]."""
    steps = read_steps(work)
    gaps: list[float] = []
    for node in nodes:
        ts = [s.t for s in steps if s.node == node and t0 <= s.t <= t1]
        gaps += [b - a for a, b in itertools.pairwise(ts)]
    return gaps


def max_gap(work: Path, nodes: set[str], t0: float, t1: float) -> float:
    """The longest gap from a second before ``t0`` to ``t1``."""
    return max(_gaps(work, nodes, t0 - 1, t1), default=float("nan"))


def switch_gap(work: Path, nodes: set[str], t0: float, world: int) -> float:
    """The longest of ``nodes``' gaps between their last step before and their first step in
    a world of ``world`` after ``t0``: what taking a node in cost them."""
    steps = read_steps(work)
    gaps = []
    for node in nodes:
        mine = [s for s in steps if s.node == node]
        first = next((i for i, s in enumerate(mine) if s.t > t0 and s.world == world), None)
        if first:
            gaps.append(mine[first].t - mine[first - 1].t)
    return max(gaps, default=float("nan"))


def median_gap(work: Path, nodes: set[str], t0: float, t1: float) -> float:
    gaps = _gaps(work, nodes, t0, t1)
    return statistics.median(gaps) if gaps else float("nan")
