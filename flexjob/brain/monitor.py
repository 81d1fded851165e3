"""The cluster monitor: samples machines' capacity and usage, and the jobs' status, and reports
them to the brain.

Two node sources: ``LocalSource`` (this machine, via psutil) and ``KubernetesSource`` (every
node's allocatable CPU and memory, and the requests of the pods running on it, via the
kubernetes client). Jobs come from the platform's job store (``JobSource``: each job's phase and
active replicas per type). ``run_monitor`` reports them to a ``BrainClient`` every ``interval``
seconds; the brain cuts plans to the free capacity (``brain.capacity``). Not for per-job stats
(masters report those) nor for scheduling decisions.
"""

import logging
import socket
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

import psutil

from flexjob.api import ElasticJob, ElasticJobStatus
from flexjob.api.errors import FlexjobError
from flexjob.api.quantity import parse_quantity
from flexjob.rpc.brain_client import BrainClient
from flexjob.rpc.brain_messages import ClusterJobReport, ClusterNodeReport, ClusterReport

log = logging.getLogger(__name__)
MIB = 2**20


class NodeSampler(Protocol):
    def sample(self) -> list[ClusterNodeReport]: ...


class LocalSource:
    """This machine: logical CPUs and total memory; CPU and memory in use right now."""

    def __init__(self, name: str | None = None, clock: Callable[[], float] = time.time) -> None:
        self.name = name or socket.gethostname()
        self.clock = clock
        psutil.cpu_percent(interval=None)  # primes the counter; the next call measures from here

    def sample(self) -> list[ClusterNodeReport]:
        cpus = psutil.cpu_count() or 1
        mem = psutil.virtual_memory()
        return [
            ClusterNodeReport(
                name=self.name,
                platform="local",
                timestamp=self.clock(),
                cpu_capacity=float(cpus),
                memory_capacity_mb=mem.total / MIB,
                cpu_used=psutil.cpu_percent(interval=None) / 100.0 * cpus,
                memory_used_mb=(mem.total - mem.available) / MIB,
            )
        ]


class KubernetesSource:
    """Kubernetes nodes: allocatable resources, and the requests of their running pods."""

    def __init__(self, core_v1: Any, clock: Callable[[], float] = time.time) -> None:
        self.api = core_v1
        self.clock = clock

    @classmethod
    def from_config(cls, context: str | None = None) -> "KubernetesSource":
        from kubernetes import client, config

        try:
            config.load_incluster_config()  # type: ignore[no-untyped-call]
        except config.ConfigException:
            config.load_kube_config(context=context)  # type: ignore[no-untyped-call]
        return cls(client.CoreV1Api())

    def sample(self) -> list[ClusterNodeReport]:
        def q(value: Any) -> float:
            return float(parse_quantity(value)) if value is not None else 0.0

        used: dict[str, list[float]] = {}
        pods = self.api.list_pod_for_all_namespaces(field_selector="status.phase=Running").items
        for pod in pods:
            node = pod.spec.node_name
            if not node:
                continue
            acc = used.setdefault(node, [0.0, 0.0, 0.0])
            acc[2] += 1
            for c in pod.spec.containers:
                requests = (c.resources.requests if c.resources else None) or {}
                acc[0] += q(requests.get("cpu"))
                acc[1] += q(requests.get("memory")) / MIB
        now = self.clock()
        out = []
        for node in self.api.list_node().items:
            alloc = node.status.allocatable or node.status.capacity or {}
            cpu, mem, n = used.get(node.metadata.name, [0.0, 0.0, 0.0])
            out.append(
                ClusterNodeReport(
                    name=node.metadata.name,
                    platform="kubernetes",
                    timestamp=now,
                    cpu_capacity=q(alloc.get("cpu")) or 1e-3,
                    memory_capacity_mb=q(alloc.get("memory")) / MIB or 1e-3,
                    cpu_used=cpu,
                    memory_used_mb=mem,
                    pods=int(n),
                )
            )
        return out


class JobLister(Protocol):
    """The part of a platform's job store the monitor reads (``platform.contract.JobStore``)."""

    def list_jobs(self, namespace: str | None = None) -> list[ElasticJob]: ...


class JobSource:
    """Every job of a platform: its phase and active replicas per type."""

    def __init__(
        self, store: JobLister, platform: str, clock: Callable[[], float] = time.time
    ) -> None:
        self.store = store
        self.platform = platform
        self.clock = clock

    def sample(self) -> list[ClusterJobReport]:
        now = self.clock()
        out = []
        for job in self.store.list_jobs():
            status = job.status or ElasticJobStatus()
            replicas = {
                rtype.value: counts.active
                for rtype, counts in status.replica_statuses.items()
                if counts.active
            }
            out.append(
                ClusterJobReport(
                    name=f"{job.namespace}/{job.name}",
                    platform=self.platform,
                    timestamp=now,
                    phase=status.phase.value,
                    replicas=replicas,
                )
            )
        return out


def report_once(
    source: NodeSampler, brain: BrainClient, jobs: JobSource | None = None
) -> list[ClusterNodeReport]:
    nodes = source.sample()
    brain.report_cluster(ClusterReport(nodes=nodes, jobs=jobs.sample() if jobs else []))
    return nodes


def run_monitor(
    source: NodeSampler,
    brain: BrainClient,
    interval: float = 10.0,
    stop: threading.Event | None = None,
    iterations: int | None = None,
    jobs: JobSource | None = None,
) -> int:
    """Report every ``interval`` s until ``stop`` is set or ``iterations`` reports were sent
    (with the jobs of ``jobs`` when given).

    A brain that cannot be reached is logged and retried at the next interval. Returns the
    number of reports the brain accepted.
    """
    stop = stop or threading.Event()
    sent = tries = 0
    while not stop.is_set():
        try:
            nodes = report_once(source, brain, jobs)
            sent += 1
            log.debug("reported %d nodes", len(nodes))
        except FlexjobError as exc:
            log.warning("cluster monitor: %s", exc)
        tries += 1
        if iterations is not None and tries >= iterations:
            break
        stop.wait(interval)
    return sent
