"""The Brain's capacity rounds: plans that grow a job wait a moment for other jobs' growing
plans, then all of them are cut to the cluster's free capacity together, fairly
(``core.planner.capacity``: DRF).

Free capacity is what the Cluster Monitor last reported (``BrainStore.cluster_nodes``) minus
what this Brain granted since that report (at most ``reserve_s`` seconds back): the monitor
does not see those replicas yet. A round opens with the first growing plan and closes
``window_s`` later; every plan that grows in that time is decided in the same ``share``.
Without any monitored node the cluster is unknown and plans pass unchanged. Not for choosing
plans (the planner does).
"""

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import KW_ONLY, dataclass, field

from flexjob.api.scaleplan import ResourcePlan
from flexjob.core.allocator.contract import Resources
from flexjob.core.planner import JobStats
from flexjob.core.planner.capacity import Ask, fit_plan, free_capacity, plan_asks, share
from flexjob.rpc.brain_messages import ClusterNodeReport

#: Seconds a round waits for more growing plans.
DEFAULT_WINDOW_S = 0.5
#: Seconds a grant counts as used at most when no newer monitor report came.
DEFAULT_RESERVE_S = 60.0


def node_resources(node: ClusterNodeReport) -> tuple[Resources, Resources]:
    """(capacity, used) of a monitored node."""
    capacity = Resources(0, node.cpu_capacity, int(node.memory_capacity_mb))
    return capacity, Resources(0, node.cpu_used, int(node.memory_used_mb))


@dataclass
class _CapacityRound:
    closes: float
    asks: list[Ask] = field(default_factory=list)
    grants: dict[Ask, int] | None = None
    free: Resources = field(default_factory=Resources)
    done: threading.Event = field(default_factory=threading.Event)


@dataclass(eq=False)
class CapacityRounds:
    """Cuts growing plans to free capacity, several jobs at once (see the module doc)."""

    nodes: Callable[[], Sequence[ClusterNodeReport]]
    _: KW_ONLY
    window_s: float = DEFAULT_WINDOW_S
    reserve_s: float = DEFAULT_RESERVE_S
    clock: Callable[[], float] = time.time
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)
    _round: _CapacityRound | None = field(default=None, init=False)
    _reserved: list[tuple[float, Resources]] = field(default_factory=list, init=False)

    def fit(self, job: str, stats: JobStats, plan: ResourcePlan) -> ResourcePlan:
        """``plan`` cut to what ``job`` is granted in the round it joins."""
        asks = plan_asks(job, plan, stats.current)
        if not asks or not self.nodes():
            return plan
        with self._lock:
            current = self._round
            if current is None or current.grants is not None:
                current = self._round = _CapacityRound(self.clock() + self.window_s)
            current.asks.extend(asks)
        wait = current.closes - self.clock()
        if wait > 0:
            current.done.wait(wait)
        self._decide(current)
        current.done.wait(10.0)
        grants = current.grants or {}
        granted = {a.replica_type: grants.get(a, 0) for a in asks}
        return fit_plan(plan, stats.current, granted, current.free)

    def _decide(self, current: _CapacityRound) -> None:
        with self._lock:
            if current.grants is not None:
                return
            nodes = self.nodes()
            now = self.clock()
            seen = max((n.timestamp for n in nodes), default=0.0)
            self._reserved = [
                (t, r) for t, r in self._reserved if now - t < self.reserve_s and t >= seen
            ]
            free = free_capacity(node_resources(n) for n in nodes)
            total = Resources()
            for capacity, _ in map(node_resources, nodes):
                total += capacity
            for _, amount in self._reserved:
                free -= amount
            free = Resources(max(free.gpu, 0), max(free.cpu, 0.0), max(free.memory, 0))
            grants = share(current.asks, free, total)
            for ask, count in grants.items():
                if count:
                    self._reserved.append((now, ask.each.times(count)))
            current.free, current.grants = free, grants
            if self._round is current:
                self._round = None
            current.done.set()
