"""The pre-flight check's verdict: which nodes of a new world fail it.

Every rank of a new world runs a small local check (a fixed amount of compute, timed) and an
all-reduce, then all ranks exchange ``CheckResult``s (``trainer.preflight``). A node fails when
one of its ranks' check raised, or when its slowest rank took more than ``PREFLIGHT_RATIO``
times the median of the other nodes' times (``core.training.stragglers.slower_than_others``). The
master then keeps the failed nodes out (``core.training.stragglers.to_exclude``: never below the
world's minimum). No I/O.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from flexjob.core.training.stragglers import slower_than_others

#: A node whose check took more than this many times the other nodes' median fails it. Higher
#: than the straggler ratio: the check is short, one measure, not a window.
PREFLIGHT_RATIO = 3.0


@dataclass(frozen=True, slots=True)
class CheckResult:
    """One rank's check: its node, the seconds it took, and the error if it raised."""

    node: str
    seconds: float
    error: str = ""


def failed_nodes(results: Iterable[CheckResult], ratio: float = PREFLIGHT_RATIO) -> dict[str, str]:
    """Node → why it failed the check, for every node that did (none for a healthy world),
    worst first: nodes whose check raised (by name), then the slow ones, slowest first."""
    errors: dict[str, str] = {}
    slowest: dict[str, float] = {}
    for r in results:
        if r.error:
            errors.setdefault(r.node, f"pre-flight check failed: {r.error}")
        slowest[r.node] = max(slowest.get(r.node, 0.0), r.seconds)
    why = {node: errors[node] for node in sorted(errors)}
    for s in slower_than_others(slowest, ratio):
        why.setdefault(
            s.node,
            f"pre-flight check took {s.step_seconds:.3f} s, {s.times_slower:.1f}x the other "
            f"nodes' median {s.others_seconds:.3f} s",
        )
    return why
