"""The master's optimizer loop: feeds ``JobOptimizer`` from the master's stats, writes ScalePlans.

Every ``optimize_interval`` seconds (on its own thread) it takes a snapshot of the master's
per-node stats and turns new reports into resource samples, job speed samples (once a whole
world has reported, see ``core.planner.speed``) and, for failures that mention OOM, node events.
Then it asks the optimizer for a plan and hands each accepted plan, as a ``ScalePlan``, to a
sink (JSON files in ``<job-dir>/scaleplans/``, or a platform's store for its operator). Not for
the algorithms (``core.planner``) or the modes (``master.optimizer``).
"""

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from flexjob.api import ResourcePlan, ScalePlan
from flexjob.api.errors import FlexjobError
from flexjob.api.roles import DEFAULT_TYPE
from flexjob.core import planner
from flexjob.core.planner.speed import SpeedAggregator
from flexjob.core.training.master_config import OptimizerConfig
from flexjob.core.training.rendezvous import RendezvousConfig
from flexjob.master.logs import event
from flexjob.master.optimizer import JobOptimizer, to_scale_plan
from flexjob.master.state_file import write_atomic
from flexjob.master.stats import NodeRecord
from flexjob.rpc import brain_messages as schemas
from flexjob.rpc.brain_client import BrainClient

log = logging.getLogger(__name__)
PlanSink = Callable[[ScalePlan], None]
MIB = 2**20


class StatsSource(Protocol):
    def stats_snapshot(self) -> tuple[dict[str, NodeRecord], int]: ...


class DirectorySink:
    """Writes each ScalePlan as ``<dir>/<name>.json`` (atomically)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def __call__(self, plan: ScalePlan) -> None:
        write_atomic(
            self.directory / f"{plan.metadata.name}.json", plan.model_dump_json(by_alias=True)
        )


def plan_sink(platform_name: str, job_dir: str | None) -> PlanSink:
    """Where the master's ScalePlans go: a platform's store, the job dir, or the log."""
    if platform_name:
        from flexjob.platform.registry import open_platform

        platform = open_platform(platform_name)

        def create(plan: ScalePlan) -> None:
            platform.create_scale_plan(plan)

        return create
    if job_dir:
        return DirectorySink(Path(job_dir) / "scaleplans")
    return _log_sink


def job_info(
    job_name: str, bounds: RendezvousConfig, settings: OptimizerConfig
) -> schemas.JobInfoMessage:
    """The job as the brain sees it: from ``settings.job``, else from the node ``bounds``."""
    job = settings.job or planner.PlannedJob(
        planner.JobProfile(job_name),
        planner.JobLimits(min_replicas=bounds.min_nodes, max_replicas=bounds.max_nodes),
        {DEFAULT_TYPE: planner.ReplicaResources(bounds.min_nodes)},
    )
    return schemas.JobInfoMessage.from_core(job, settings.mode)


@dataclass(eq=False)
class OptimizerLoop:
    source: StatsSource
    optimizer: JobOptimizer
    sink: PlanSink
    job_name: str
    namespace: str = "default"
    interval: float = 30.0
    clock: Callable[[], float] = time.time
    _seen: dict[str, tuple[int, int]] = field(
        default_factory=dict, init=False
    )  # node -> (reports, failures) already fed
    _speed: SpeedAggregator = field(init=False)
    _stop: threading.Event = field(default_factory=threading.Event, init=False)
    _thread: threading.Thread | None = field(default=None, init=False)
    _started: bool = field(default=False, init=False)

    def __post_init__(self) -> None:
        self._speed = SpeedAggregator(stale_after=max(10 * self.interval, 5.0))

    @classmethod
    def for_job(
        cls,
        job_name: str,
        bounds: RendezvousConfig,
        settings: OptimizerConfig,
        source: StatsSource,
        sink: PlanSink,
    ) -> "OptimizerLoop":
        """The loop of the job ``job_name`` with node ``bounds``, by the master's
        optimizer ``settings``."""
        brain = BrainClient(settings.brain_url) if settings.brain_url else None
        optimizer = JobOptimizer(job_info(job_name, bounds, settings), settings.mode, brain)
        namespace, dot, _ = optimizer.job.name.partition(".")
        return cls(
            source,
            optimizer,
            sink,
            job_name,
            namespace=namespace if dot else "default",
            interval=settings.interval,
        )

    def start(self) -> None:
        self._begin()
        self._thread = threading.Thread(target=self._run, name="master-optimizer", daemon=True)
        self._thread.start()

    def stop(self, status: schemas.JobStatus | None = None) -> None:
        """Stop ticking; send what was measured since the last tick (a job shorter than one
        interval has no other samples) and, when ``status`` is known, how the job ended."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        try:
            self.feed()
        except Exception:
            log.exception("last stats of job %s not taken", self.job_name)
        if status is None:
            self.optimizer.flush()
        else:
            self.optimizer.finish(status)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.tick()
            except Exception:  # keep the master up; the next tick retries
                log.exception("optimizer tick failed for job %s", self.job_name)

    def _begin(self) -> None:
        """Reload history (cluster mode) or start with the initial plan; retried until done."""
        try:
            if not self.optimizer.restore():
                self._emit(self.optimizer.initial_plan())
        except FlexjobError as exc:
            log.warning("job %s: brain unreachable, will retry: %s", self.job_name, exc)
            return
        self._started = True

    def tick(self) -> None:
        """Feed new stats to the optimizer and carry out its plan, if any."""
        self.feed()
        if not self._started:
            self._begin()
        if self._started:
            self._emit(self.optimizer.step())

    def feed(self) -> None:
        nodes, _ = self.source.stats_snapshot()
        now = self.clock()
        for node_id, rec in sorted(nodes.items()):
            rtype = rec.replica_type
            reports, failures = self._seen.get(node_id, (0, 0))
            st = rec.latest
            cpu, memory = self.optimizer.node_limits(node_id, rtype)
            if rec.reports > reports:
                self.optimizer.observe_node(
                    planner.NodeSample(
                        node_id,
                        rtype,
                        st.timestamp or now,
                        st.cpu_percent,
                        st.memory_bytes / MIB,
                        cpu_limit=cpu,
                        memory_limit_mb=memory,
                        requests_per_second=st.requests_per_second,
                        partition_bytes=st.partition_bytes,
                        gpu_memory_mb=st.gpu_memory_bytes / MIB,
                        gpu_percent=st.gpu_percent,
                    )
                )
                if rec.alive:
                    self._speed.observe(node_id, st.world_size, st.samples_per_second, st.step, now)
            if rec.failures > failures and planner.mentions_oom(rec.last_failure):
                self.optimizer.observe_event(
                    planner.NodeEvent(
                        node_id,
                        rtype,
                        planner.NodeEventKind.OOM,
                        now,
                        memory or st.memory_bytes / MIB or None,  # what it had, else what it used
                    )
                )
            self._seen[node_id] = (rec.reports, rec.failures)
        if (sample := self._speed.take(now)) is not None:
            self.optimizer.observe_speed(sample)

    def _emit(self, plan: ResourcePlan | None) -> None:
        if plan is None:
            return
        index = len(self.optimizer.plans)
        nodes, _ = self.source.stats_snapshot()
        scale_plan = to_scale_plan(
            plan,
            self.job_name,
            self.namespace,
            index,
            self.optimizer.plan_ids[-1],
            {node: rec.replica_type for node, rec in nodes.items()},
        )
        self.sink(scale_plan)
        event(log, "scaled", self.job_name, plan=scale_plan.metadata.name, detail=plan.reason)


def _log_sink(plan: ScalePlan) -> None:
    log.info("ScalePlan (no job dir to write it to): %s", plan.model_dump_json(by_alias=True))
