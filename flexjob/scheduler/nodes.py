"""Node sources for the Allocator: a fixed list (parsed from the command line) or the nodes of a
Kubernetes cluster.

For: telling policies which nodes exist and what they can hold. Not for placing anything.
Kubernetes: each schedulable, Ready node's allocatable resources minus what running pods *not*
owned by a flexjob job request there (flexjob jobs are what the policy re-plans).
"""

import re
from collections.abc import Iterable
from typing import Any

from flexjob.api.errors import AllocatorError, InvalidSpecError
from flexjob.api.names import LABEL_JOB_NAME
from flexjob.core.allocator import NodeInfo, Resources
from flexjob.core.operator.replica_resources import GPU_RESOURCE, asked
from flexjob.scheduler.allocator import StaticNodes
from flexjob.scheduler.jobview import resources_of

_GRID = re.compile(r"^(\d+)x(\d+)$")


class NodeSpecError(AllocatorError, InvalidSpecError):
    """A node description that cannot be read; the message shows the expected forms."""


def parse_nodes(specs: Iterable[str]) -> StaticNodes:
    """Nodes from ``COUNTxGPUS`` (e.g. ``16x4``) or ``NAME:gpu=4,cpu=32,memory=128Gi`` items."""
    nodes: list[NodeInfo] = []
    for spec in specs:
        grid = _GRID.match(spec.strip())
        if grid:
            count, gpus = int(grid[1]), int(grid[2])
            start = len(nodes)
            nodes += [NodeInfo(f"node-{start + i:02d}", Resources(gpu=gpus)) for i in range(count)]
            continue
        name, sep, rest = spec.partition(":")
        pairs = [p.partition("=") for p in rest.split(",") if p]
        if not name or not sep or not pairs or any(not eq or not v for _, eq, v in pairs):
            raise NodeSpecError(
                f"--node {spec!r}: expected COUNTxGPUS (16x4) or NAME:gpu=4,cpu=32,memory=128Gi"
            )
        values = {k.strip(): v.strip() for k, _, v in pairs}
        unknown = sorted(set(values) - {"gpu", "cpu", "memory"})
        if unknown:
            raise NodeSpecError(
                f"--node {spec!r}: unknown resources {unknown}; allowed: gpu, cpu, memory"
            )
        try:
            given = {GPU_RESOURCE if k == "gpu" else k: v for k, v in values.items()}
            nodes.append(NodeInfo(name, resources_of(given)))
        except ValueError as exc:
            raise NodeSpecError(f"--node {spec!r}: {exc}") from None
    names = [n.name for n in nodes]
    if len(set(names)) != len(names):
        raise NodeSpecError("--node: node names must be unique")
    return StaticNodes(nodes)


def _requests(pod: Any) -> Resources:
    total = Resources()
    for container in pod.spec.containers or []:
        res = container.resources
        wanted = asked((res and res.requests) or {}, (res and res.limits) or {})
        try:
            total = total + resources_of(wanted)
        except ValueError:
            continue
    return total


def _ready(node: Any) -> bool:
    if node.spec and node.spec.unschedulable:
        return False
    conditions = (node.status and node.status.conditions) or []
    return any(c.type == "Ready" and c.status == "True" for c in conditions)


class KubernetesNodes:
    """Ready, schedulable nodes of a cluster through the official client (``CoreV1Api``)."""

    def __init__(self, core_api: Any) -> None:
        self.core = core_api

    def nodes(self) -> list[NodeInfo]:
        used: dict[str, Resources] = {}
        pods = self.core.list_pod_for_all_namespaces(field_selector="status.phase=Running")
        for pod in pods.items:
            labels = pod.metadata.labels or {}
            if LABEL_JOB_NAME in labels or not pod.spec.node_name:
                continue
            used[pod.spec.node_name] = used.get(pod.spec.node_name, Resources()) + _requests(pod)
        out = []
        for node in self.core.list_node().items:
            if not _ready(node):
                continue
            try:
                allocatable = resources_of(node.status.allocatable or {})
            except ValueError:
                continue
            name = node.metadata.name
            out.append(NodeInfo(name, allocatable - used.get(name, Resources())))
        return sorted(out, key=lambda n: n.name)
