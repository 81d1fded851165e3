"""Runtime stats per node (CPU, memory, step, samples/s) and failures, kept by the master.

Latest report per node plus counters; JSON-ready for the state file. Not for deciding scaling
(``core.planner`` and the Brain do that).
"""

from dataclasses import asdict, dataclass, field
from typing import Any

from flexjob.api import ReplicaType
from flexjob.api.roles import DEFAULT_TYPE
from flexjob.rpc.messages import NodeRef, NodeStats


@dataclass(slots=True)
class NodeRecord:
    #: The node's replica type, as its ``NodeRef`` said (never parsed from the node id).
    replica_type: ReplicaType = DEFAULT_TYPE
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

    def _record(self, node_id: str, rtype: ReplicaType | None = None) -> NodeRecord:
        self.version += 1
        rec = self.nodes.setdefault(node_id, NodeRecord())
        if rtype is not None:
            rec.replica_type = rtype
        return rec

    def update(self, node: NodeRef, stats: NodeStats) -> None:
        rec = self._record(node.node_id, node.replica_type)
        rec.latest = stats
        rec.reports += 1
        rec.alive = True

    def failure(self, node: NodeRef, reason: str) -> None:
        rec = self._record(node.node_id, node.replica_type)
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
            node: NodeRecord(
                **{
                    **rec,
                    "latest": NodeStats(**rec["latest"]),
                    "replica_type": ReplicaType(rec.get("replica_type", DEFAULT_TYPE)),
                }
            )
            for node, rec in data.items()
        }
