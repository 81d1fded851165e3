"""The live ``Allocator``: runs a policy over the jobs in a platform's job store and writes
``status.allocation`` (and, for preemptible jobs, ``status.replicas``).

Each ``step``: list unfinished jobs, build a ``JobInfo`` for each type of each job it places
(``jobview``: every scalable type — a DIJob v2's learner, collector and evaluator alike —
keyed ``namespace/name/type``; speedup fitted from its profilings), run
``core.allocator.schedule_round`` (new jobs placed with ``allocate``; every ``period`` seconds
preemptible jobs re-planned with ``optimize``), and write what changed.
``status.allocation[type]`` lists one node per replica, index-aligned with the replica index;
the operator places replica ``i`` on that node (Kubernetes: node selector; local: a label).
Each job's attained service (what ``core.allocator.attained_service`` orders by, so it decides which
job's tasks win a conflict for nodes) is integrated here between steps: the replicas of all its
types' current allocations times the seconds since the last step, in GPU-seconds (a replica
that needs no GPU counts as one), shared by all its tasks, kept in memory — an Allocator that
restarts starts everyone at 0, which only reorders jobs, never over-commits.
Non-preemptible jobs keep their replica count and, once placed, their nodes. A job whose
``status.replicas`` was changed by hand (the server) no longer matches its allocation and is
placed afresh: requested-size policies honour the new count; ``goodput`` takes it as the job's
ask and still sizes preemptible jobs by speedup. A preemptible job the policy leaves out
(no room) keeps its replicas but loses its placement, so the cluster's own scheduler queues it.

Not for: deciding (policies), creating replicas (operator) or node discovery (``NodeSource``).
"""

import logging
import threading
from collections.abc import Sequence
from dataclasses import KW_ONLY, dataclass, field
from datetime import datetime
from typing import Any, Protocol

from flexjob.api import ElasticJob, ReplicaType
from flexjob.core.allocator import JobInfo, NodeInfo, Policy, PolicyError, schedule_round
from flexjob.core.clock import WallClock, utc_now
from flexjob.platform.contract import NotFoundError, Platform
from flexjob.scheduler.jobview import (
    job_infos,
    job_key,
    placed_types,
    replica_resources,
    task_key,
)

log = logging.getLogger(__name__)


class NodeSource(Protocol):
    """Where the Allocator learns the cluster's nodes and their allocatable resources."""

    def nodes(self) -> list[NodeInfo]: ...


class StaticNodes:
    """A fixed list of nodes (the local platform, tests, or a configured cluster)."""

    def __init__(self, nodes: Sequence[NodeInfo]) -> None:
        self._nodes = list(nodes)

    def nodes(self) -> list[NodeInfo]:
        return list(self._nodes)


@dataclass(eq=False)
class Allocator:
    """Runs ``policy`` over the unfinished jobs of ``platform`` on the nodes of ``nodes``."""

    platform: Platform
    policy: Policy
    nodes: NodeSource
    _: KW_ONLY
    period: float = 60.0
    namespace: str | None = None
    clock: WallClock = utc_now
    #: Task key -> how many times its allocation moved.
    restarts: dict[str, int] = field(default_factory=dict, init=False)
    #: Job key -> attained service in GPU-seconds (see the module docstring).
    attained: dict[str, float] = field(default_factory=dict, init=False)
    _last_optimize: datetime | None = field(default=None, init=False)
    _last_step: datetime | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        if self.period <= 0:
            raise ValueError(f"period must be > 0 seconds, got {self.period}")

    def _current(self, jobs: Sequence[ElasticJob]) -> dict[str, list[str]]:
        previous: dict[str, list[str]] = {}
        for job in jobs:
            if job.status is None:
                continue
            for rtype in placed_types(job):
                placed = list(job.status.allocation.get(rtype, []))
                if placed and all(placed):
                    previous[task_key(job, rtype)] = placed
        return previous

    def step(self) -> dict[str, list[str]]:
        """One round; returns the allocations that changed (job key -> nodes)."""
        now = self.clock()
        jobs = [
            j
            for j in self.platform.list_jobs(self.namespace)
            if not (j.status and j.status.phase.finished) and not j.spec.suspend
        ]
        previous = self._current(jobs)
        self._attain(jobs, previous, now)
        infos: list[JobInfo] = []
        by_key: dict[str, tuple[ElasticJob, ReplicaType]] = {}
        for job in jobs:
            for rtype, info in job_infos(
                job, now, self.restarts, self.attained.get(job_key(job), 0.0)
            ):
                infos.append(info)
                by_key[info.id] = (job, rtype)
        for info in infos:  # a job resized by hand (server, CLI) is a new request: place afresh
            placed = previous.get(info.id)
            if placed and len(placed) != info.replicas:
                del previous[info.id]
        optimize = (
            self._last_optimize is None
            or (now - self._last_optimize).total_seconds() >= self.period
        )
        try:
            result = schedule_round(
                self.policy, infos, self.nodes.nodes(), previous, optimize=optimize
            )
        except PolicyError:
            log.exception(
                "policy %s broke the allocation contract; nothing written", self.policy.name
            )
            return {}
        if optimize:
            self._last_optimize = now
        changed = {}
        for info in infos:
            new = result.get(info.id, [])
            old = previous.get(info.id, [])
            if new == old:
                continue
            if old and new:
                self.restarts[info.id] = self.restarts.get(info.id, 0) + 1
            if self._write(*by_key[info.id], info, new):
                changed[info.id] = new
        return changed

    def _attain(
        self, jobs: Sequence[ElasticJob], previous: dict[str, list[str]], now: datetime
    ) -> None:
        """Add the service each placed job had since the last step; forget finished jobs."""
        seconds = (now - self._last_step).total_seconds() if self._last_step else 0.0
        self._last_step = now
        live = {job_key(job) for job in jobs}
        self.attained = {k: v for k, v in self.attained.items() if k in live}
        for job in jobs:
            for rtype in placed_types(job):
                placed = previous.get(task_key(job, rtype))
                if not placed:
                    continue
                per_replica = max(replica_resources(job, rtype).gpu, 1)
                served = len(placed) * per_replica * max(seconds, 0.0)
                self.attained[job_key(job)] = self.attained.get(job_key(job), 0.0) + served

    def _write(self, job: ElasticJob, rtype: ReplicaType, info: JobInfo, nodes: list[str]) -> bool:
        try:
            patch: dict[str, Any] = {"allocation": {rtype.value: nodes}}
            if info.preemptible and nodes:
                patch["replicas"] = {rtype.value: len(nodes)}
            self.platform.patch_job_status(job.namespace, job.name, patch)
        except NotFoundError:
            return False
        log.info("allocated %s to %s", info.id, nodes or "nothing")
        return True

    def run(self, stop: threading.Event, interval: float = 5.0) -> None:
        """Step every ``interval`` seconds until ``stop`` is set; errors are logged, not fatal."""
        while not stop.is_set():
            try:
                self.step()
            except Exception:
                log.exception("allocator round failed")
            stop.wait(interval)
