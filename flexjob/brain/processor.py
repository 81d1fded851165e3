"""The optimize processor and the algorithm executor of the Brain.

``OptimizeProcessor.optimize(job, stage)`` asks the job's administrator for events, picks the
algorithm for each (``core.planner.ALGORITHMS``), has the executor run it on the stored stats
(plus finished jobs, for initial plans), merges the answers, cuts a plan that grows the job to
the cluster's free capacity, shared fairly with other jobs growing at the same time
(``brain.capacity``), and records the events and the plan.
Not for detection (``administrator``) or the wire (``app``).
"""

import logging
from collections.abc import Sequence

from flexjob.brain.administrator import Administrators
from flexjob.brain.capacity import CapacityRounds
from flexjob.brain.stats_store import BrainStore
from flexjob.core import planner
from flexjob.observe import metrics
from flexjob.rpc import brain_messages as schemas

log = logging.getLogger(__name__)

ALGORITHM_SECONDS = metrics.histogram(
    "flexjob_brain_algorithm_seconds", "Seconds an algorithm ran.", ["algorithm"]
)
OPTIMIZE_REQUESTS = metrics.counter(
    "flexjob_brain_optimize_requests", "Optimize requests, by stage.", ["stage"]
)
PLANS = metrics.counter("flexjob_brain_plans", "Plans made, by stage.", ["stage"])


class AlgorithmExecutor:
    """Runs the chosen algorithm for one event."""

    def __init__(self, config: planner.PlannerConfig) -> None:
        self.config = config

    def run(
        self,
        event: planner.OptimizeEvent,
        stats: planner.JobStats,
        history: Sequence[planner.FinishedJob],
    ) -> planner.Decision:
        with ALGORITHM_SECONDS.labels(planner.ALGORITHMS[event.kind][0]).time():
            return planner.execute(event, stats, history, self.config)


class OptimizeProcessor:
    def __init__(
        self,
        store: BrainStore,
        config: planner.PlannerConfig | None = None,
        capacity: CapacityRounds | None = None,
    ) -> None:
        self.store = store
        self.config = config or planner.PlannerConfig()
        self.capacity = capacity or CapacityRounds(store.cluster_nodes)
        self.administrators = Administrators(store, self.config)
        self.executor = AlgorithmExecutor(self.config)

    def algorithm_for(self, event: planner.OptimizeEvent) -> str:
        return planner.ALGORITHMS[event.kind][0]

    def optimize(self, job: str, stage: planner.OptimizeStage) -> schemas.OptimizeResponse:
        OPTIMIZE_REQUESTS.labels(stage.value).inc()
        admin = self.administrators.get(job)
        with admin.lock:
            if stage is planner.OptimizeStage.CREATE:
                first = self._first_plan(job)
                if first is not None:
                    return first
            stats, events, until = admin.observe(stage)
            if not events:
                return schemas.OptimizeResponse(plan=planner.merge(job, []))
            history = (
                self.store.finished_jobs(like=stats.profile)
                if stage is planner.OptimizeStage.CREATE
                else []
            )
            decisions = [self.executor.run(e, stats, history) for e in events]
            plan = planner.merge(job, [d.plan for d in decisions if not d.plan.empty])
            if not plan.empty:
                plan = self.capacity.fit(job, stats, plan)
            plan_id, records = self.store.add_plan(
                job, stage, None if plan.empty else plan, decisions, until
            )
        if plan_id is not None:
            PLANS.labels(stage.value).inc()
            log.info("job %s: plan %d: %s", job, plan_id, plan.reason)
        return schemas.OptimizeResponse(plan=plan, plan_id=plan_id, events=records)

    def _first_plan(self, job: str) -> schemas.OptimizeResponse | None:
        """The job's initial plan if it has one: asking again (a restarted master) repeats it."""
        metrics = self.store.metrics(job)
        for record in metrics.plans:
            if record.stage is planner.OptimizeStage.CREATE:
                events = [e for e in metrics.events if e.plan_id == record.id]
                return schemas.OptimizeResponse(plan=record.plan, plan_id=record.id, events=events)
        return None
