"""Runtime stats per node (CPU, memory, step, samples/s) and failures, kept by the master.

Latest report per node plus counters; JSON-ready for the state file. Not for deciding scaling
(``core.planner`` and the Brain do that).
"""

from dataclasses import asdict, dataclass, field
from typing import Any

from flexjob.rpc.messages import NodeStats


@dataclass(slots=True)
class NodeRecord:
    latest: NodeStats = field(default_factory=NodeStats)
    reports: int = 0
    failures: int = 0
    last_failure: str = ""
    alive: bool = True


class StatsBook:
    def __init__(self) -> None:
        self.nodes: dict[str, NodeRecord] = {}
        #: Grows with every change, so a saved copy can be reused while it is unchanged.
        self.version = 0

    def _record(self, node_id: str) -> NodeRecord:
        self.version += 1
        return self.nodes.setdefault(node_id, NodeRecord())

    def update(self, node_id: str, stats: NodeStats) -> None:
        rec = self._record(node_id)
        rec.latest = stats
        rec.reports += 1
        rec.alive = True

    def failure(self, node_id: str, reason: str) -> None:
        rec = self._record(node_id)
        rec.failures += 1
        rec.last_failure = reason

    def set_alive(self, node_id: str, alive: bool) -> None:
        self._record(node_id).alive = alive

    def job_samples_per_second(self) -> float:
        return sum(r.latest.samples_per_second for r in self.nodes.values() if r.alive)

    def to_dict(self) -> dict[str, Any]:
        return {node: asdict(rec) for node, rec in self.nodes.items()}

    def restore(self, data: dict[str, Any]) -> None:
        self.nodes = {
            node: NodeRecord(**{**rec, "latest": NodeStats(**rec["latest"])})
            for node, rec in data.items()
        }
