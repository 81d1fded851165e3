"""The master's side of resource optimization, in the job's ``optimizeMode``.

``JobOptimizer`` takes the job's runtime stats and yields ``ResourcePlan``s:
  * ``manual``: never plans (users scale through the CLI or the server); stats still go to a
    brain when one is given, for the record;
  * ``single-job``: runs ``core.planner`` on stats kept in memory (lost if the master dies);
  * ``cluster``: sends stats to the brain and asks it for plans; a restarted master calls
    ``restore`` to reload the history (stats and accepted plans) from the brain.
``to_scale_plan`` turns an accepted plan into the ``ScalePlan`` the operator carries out.
Not for carrying plans out, nor for the algorithms themselves (``core.planner``).
"""

import logging
import time
from collections import deque
from collections.abc import Iterable, Mapping

from flexjob.api import (
    ObjectMeta,
    OptimizeMode,
    PodRef,
    ReplicaType,
    ResourcePlan,
    ScalePlan,
    ScalePlanSpec,
)
from flexjob.api.errors import FlexjobError, NotFoundError
from flexjob.api.names import LABEL_JOB_NAME
from flexjob.api.roles import DEFAULT_TYPE, PS_TYPE
from flexjob.core import planner
from flexjob.core.clock import Clock
from flexjob.core.replicas import replica_name
from flexjob.rpc import brain_messages as schemas
from flexjob.rpc.brain_client import BrainClient

log = logging.getLogger(__name__)

#: Annotations on ScalePlans written by the optimizer.
ANNOTATION_REASON = "flexjob.dev/plan-reason"
ANNOTATION_BRAIN_PLAN = "flexjob.dev/brain-plan-id"


class JobOptimizer:
    def __init__(
        self,
        job: schemas.JobInfoMessage,
        mode: OptimizeMode,
        brain: BrainClient | None = None,
        config: planner.PlannerConfig | None = None,
        max_samples: int = 5000,
    ) -> None:
        if mode is OptimizeMode.CLUSTER and brain is None:
            raise ValueError("spec.optimizeMode 'cluster' needs a brain: set spec.brainService")
        self.job = job
        self.mode = mode
        self.brain = brain
        self.config = config or planner.PlannerConfig()
        self._node_samples: deque[planner.NodeSample] = deque(maxlen=max_samples)
        self._speed: deque[planner.SpeedSample] = deque(maxlen=max_samples)
        self._events: deque[planner.NodeEvent] = deque(maxlen=max_samples)
        self._outbox = schemas.MetricsReport(job=job)
        self._since = 0.0
        #: Plans accepted so far, oldest first (with the brain's plan ids in cluster mode).
        self.plans: list[ResourcePlan] = []
        self.plan_ids: list[int | None] = []

    # ---- stats in ----
    def observe_node(self, sample: planner.NodeSample) -> None:
        self._node_samples.append(sample)
        self._outbox.node_samples.append(
            schemas.NodeSampleMessage.model_validate(sample, from_attributes=True)
        )

    def observe_speed(self, sample: planner.SpeedSample) -> None:
        self._speed.append(sample)
        self._outbox.speed_samples.append(
            schemas.SpeedSampleMessage.model_validate(sample, from_attributes=True)
        )

    def observe_event(self, event: planner.NodeEvent) -> None:
        self._events.append(event)
        self._outbox.node_events.append(
            schemas.NodeEventMessage.model_validate(event, from_attributes=True)
        )

    def stats(self) -> planner.JobStats:
        return planner.JobStats(
            profile=self.job.profile(),
            limits=self.job.limits.to_core(),
            current=self.current(),
            node_samples=tuple(self._node_samples),
            speed_samples=tuple(self._speed),
            node_events=tuple(self._events),
        )

    def current(self) -> dict[ReplicaType, planner.ReplicaResources]:
        """The resources the job runs with: requested, then every accepted plan."""
        base = {t: r.to_core() for t, r in self.job.resources.items()}
        return planner.apply_plans(base, self.plans)

    def node_limits(self, node: str, rtype: ReplicaType) -> tuple[float | None, float | None]:
        """CPU cores and MiB ``node`` runs with: from its last per-node plan, else its type."""
        cpu = memory = None
        for plan in reversed(self.plans):
            res = plan.node_resources.get(node)
            if res is not None:
                cpu = res.cpu if cpu is None else cpu
                memory = float(res.memory) if memory is None and res.memory else memory
        typed = self.current().get(rtype)
        if typed is not None:
            cpu = typed.cpu if cpu is None else cpu
            memory = typed.memory_mb if memory is None else memory
        return cpu, memory

    # ---- plans out ----
    def restore(self) -> bool:
        """Cluster mode: reload stats and accepted plans from the brain. False if it has none."""
        if self.brain is None or self.mode is not OptimizeMode.CLUSTER:
            return False
        try:
            metrics = self.brain.get_job_metrics(self.job.name)
        except NotFoundError:
            return False
        self.plans = [p.plan for p in metrics.plans]
        self.plan_ids = [p.id for p in metrics.plans]
        self._node_samples.extend(s.to_core() for s in metrics.node_samples)
        self._speed.extend(s.to_core() for s in metrics.speed_samples)
        self._events.extend(e.to_core() for e in metrics.node_events)
        log.info(
            "job %s: restored %d plans, %d speed samples from the brain",
            self.job.name,
            len(self.plans),
            len(metrics.speed_samples),
        )
        return True

    def initial_plan(self) -> ResourcePlan | None:
        """The plan to start with (once per job), or ``None`` to start as the spec says.

        Plans are recorded in ``plans`` even when they change nothing; only changes are returned.
        """
        return self._plan(planner.OptimizeStage.CREATE)

    def step(self) -> ResourcePlan | None:
        """Send stats (if a brain is used) and return a new plan, or ``None`` for no change."""
        return self._plan(planner.OptimizeStage.RUNNING)

    def finish(self, status: schemas.JobStatus) -> None:
        """Tell the brain how the job ended (its stats become history for similar jobs)."""
        self._outbox.status = status
        self.flush()

    def flush(self) -> bool:
        """Send buffered stats to the brain; on failure keep them for the next try."""
        if self.brain is None:
            return True
        try:
            self.brain.persist_metrics(self.job.name, self._outbox)
        except FlexjobError as exc:
            log.warning(
                "job %s: brain unreachable, keeping stats for later: %s", self.job.name, exc
            )
            return False
        self._outbox = schemas.MetricsReport()
        return True

    def _plan(self, stage: planner.OptimizeStage) -> ResourcePlan | None:
        if self.mode is OptimizeMode.MANUAL:
            self.flush()
            return None
        if self.mode is OptimizeMode.SINGLE_JOB:
            self.flush()
            return self._plan_here(stage)
        return self._plan_from_brain(stage)

    def _plan_here(self, stage: planner.OptimizeStage) -> ResourcePlan | None:
        if stage is planner.OptimizeStage.CREATE and self.plans:
            return None
        stats = self.stats()
        plan, _ = planner.optimize(stats, stage, (), self._since, self.config)
        until = self._since
        if stage is planner.OptimizeStage.RUNNING:  # the initial plan reads no samples
            times = [s.timestamp for s in stats.node_samples]
            until = max([until, *times, *(e.timestamp for e in stats.node_events)])
        return self._accept(plan, None, until)

    def _plan_from_brain(self, stage: planner.OptimizeStage) -> ResourcePlan | None:
        assert self.brain is not None
        if not self.flush():
            return None
        try:
            answer = self.brain.optimize_detail(self.job.name, stage)
        except FlexjobError as exc:
            log.warning("job %s: no plan from the brain: %s", self.job.name, exc)
            return None
        if answer.plan_id is not None and answer.plan_id in self.plan_ids:
            return None  # already accepted (a repeated initial plan after a restart)
        return self._accept(answer.plan, answer.plan_id, self._since)

    def _accept(self, plan: ResourcePlan, plan_id: int | None, since: float) -> ResourcePlan | None:
        """Record a non-empty plan; return it only if it changes what the job runs with."""
        if plan.empty:
            return None
        before = self.current()
        self._since = since
        self.plans.append(plan)
        self.plan_ids.append(plan_id)
        log.info("job %s: plan %d accepted: %s", self.job.name, len(self.plans), plan.reason)
        if not plan.node_resources and self.current() == before:
            return None  # e.g. an initial plan equal to the spec: nothing to carry out
        return plan


def to_scale_plan(
    plan: ResourcePlan,
    job_name: str,
    namespace: str,
    index: int,
    plan_id: int | None = None,
    node_types: Mapping[str, ReplicaType] | None = None,
) -> ScalePlan:
    """The ScalePlan for the operator: new counts per type; nodes with new resources migrate,
    each with the replica type its ``NodeRef`` reported (``node_types``; a worker if unknown).
    A new PS count also names the PS set the job runs after the change (``psHosts``: its
    replicas ``<job>-ps-0 .. N-1``; the operator removes the PS it does not name)."""
    types = node_types or {}
    ps = plan.replica_resources.get(PS_TYPE)
    ps_hosts = (
        [replica_name(job_name, PS_TYPE, i) for i in range(ps.replicas)] if ps is not None else []
    )
    annotations = {ANNOTATION_REASON: plan.reason[:1000]}
    if plan_id is not None:
        annotations[ANNOTATION_BRAIN_PLAN] = str(plan_id)
    return ScalePlan(
        metadata=ObjectMeta(
            name=f"{job_name}-plan-{index}",
            namespace=namespace,
            labels={LABEL_JOB_NAME: job_name},
            annotations=annotations,
        ),
        spec=ScalePlanSpec(
            owner_job=job_name,
            replica_resource_specs=dict(plan.replica_resources),
            migrate_pods=[
                PodRef(name=node, type=types.get(node, DEFAULT_TYPE), resource=res)
                for node, res in sorted(plan.node_resources.items())
            ],
            ps_hosts=ps_hosts,
        ),
    )


def speed_from_nodes(
    step: int, per_node_speed: Iterable[float], world_size: int, clock: Clock = time.time
) -> planner.SpeedSample:
    """The job's speed sample from its nodes' own samples/s (summed)."""
    return planner.SpeedSample(clock(), step, sum(per_node_speed), world_size)
