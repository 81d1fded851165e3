"""Per-job administrators: each watches one job's stats and raises its optimize events.

An administrator is created when a job is first seen and lives as long as the brain process; what
it needs to survive a restart (the time up to which stats were already acted on) is read from the
database. Detection itself is ``core.planner.detect_events``; answering events is ``processor``.
"""

import logging
import threading

from flexjob.brain.stats_store import BrainStore, job_stats
from flexjob.core import planner

log = logging.getLogger(__name__)


class JobAdministrator:
    """Raises optimize events for one job from the stats not yet acted on."""

    def __init__(self, job: str, store: BrainStore, config: planner.PlannerConfig) -> None:
        self.job = job
        self.store = store
        self.config = config
        #: Serializes optimize calls of this job (two masters, or retries, at once).
        self.lock = threading.Lock()

    def observe(
        self, stage: planner.OptimizeStage
    ) -> tuple[planner.JobStats, list[planner.OptimizeEvent], float]:
        """The job's stats, the events in them, and the newest data time they cover."""
        metrics = self.store.metrics(self.job)
        stats = job_stats(metrics)
        since = self.store.stats_until(self.job)
        events = planner.detect_events(stats, stage, since, self.config)
        until = since
        if stage is planner.OptimizeStage.RUNNING:  # the initial plan reads no samples
            times = [s.timestamp for s in stats.node_samples]
            until = max([since, *times, *(e.timestamp for e in stats.node_events)])
        if events:
            log.info("job %s: %s", self.job, ", ".join(f"{e.kind}({e.node})" for e in events))
        return stats, events, until


class Administrators:
    """The administrator of every job this brain has seen."""

    def __init__(self, store: BrainStore, config: planner.PlannerConfig) -> None:
        self.store = store
        self.config = config
        self._lock = threading.Lock()
        self._by_job: dict[str, JobAdministrator] = {}

    def get(self, job: str) -> JobAdministrator:
        with self._lock:
            admin = self._by_job.get(job)
            if admin is None:
                admin = self._by_job[job] = JobAdministrator(job, self.store, self.config)
            return admin
