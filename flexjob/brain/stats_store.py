"""The Brain's stats store: writes reports to the database and reads them back as planner stats.

One ``BrainStore`` per database; every method runs in its own short transaction, so the store can
be shared by the HTTP worker threads. Not for decisions (``processor``) or the wire (``app``).
"""

import time
from collections.abc import Sequence
from typing import TypeVar

from sqlalchemy import Engine, func, or_, select
from sqlalchemy.orm import Session, sessionmaker

from flexjob.api import ReplicaType, ResourcePlan
from flexjob.api.errors import NotFoundError
from flexjob.brain.db import models as m
from flexjob.core import planner
from flexjob.core.clock import Clock
from flexjob.core.fields import build
from flexjob.rpc import brain_messages as schemas

#: Most samples of each kind loaded for one job's stats (the newest ones).
MAX_SAMPLES = 5000
#: Most finished jobs read to find similar ones (the most recently finished).
MAX_HISTORY = 200


def unknown_job(job: str) -> NotFoundError:
    """The error for a job the brain has never been told about."""
    return NotFoundError(f"unknown job {job!r}: report its metrics with a job record first")


class BrainStore:
    def __init__(self, engine: Engine, clock: Clock = time.time) -> None:
        self.engine = engine
        self.clock = clock
        self._session = sessionmaker(engine, expire_on_commit=False)

    # ---- writes ----
    def persist(self, job_name: str, report: schemas.MetricsReport) -> None:
        with self._session.begin() as s:
            job = self._upsert_job(s, job_name, report.job)
            nodes: dict[str, m.JobNodeRow] = {}
            for ns in report.node_samples:
                node = self._node(s, job, nodes, ns.node, ns.replica_type)
                node.cpu_limit = ns.cpu_limit or node.cpu_limit
                node.memory_limit_mb = ns.memory_limit_mb or node.memory_limit_mb
                s.add(build(m.NodeSampleRow, ns, job_id=job.id, node_id=node.id))
            for ev in report.node_events:
                node = self._node(s, job, nodes, ev.node, ev.replica_type)
                kind = ev.kind.value
                s.add(build(m.NodeEventRow, ev, job_id=job.id, node_id=node.id, kind=kind))
            s.add_all(build(m.SpeedSampleRow, sp, job_id=job.id) for sp in report.speed_samples)
            if report.status is not None:
                job.status = report.status.value
                if report.status is not schemas.JobStatus.RUNNING:
                    job.finished_at = self.clock()

    def _upsert_job(self, s: Session, name: str, info: schemas.JobInfoMessage | None) -> m.JobRow:
        job = s.scalar(select(m.JobRow).where(m.JobRow.name == name))
        if info is not None and info.name != name:
            raise ValueError(f"job.name: {info.name!r} does not match the job in the path {name!r}")
        if job is None:
            if info is None:
                raise unknown_job(name)
            job = m.JobRow(name=name, created_at=self.clock(), status="running")
            s.add(job)
        if info is not None:
            job.user, job.model, job.dataset = info.user, info.model, info.dataset
            job.optimize_mode = info.optimize_mode.value
            job.limits = info.limits.model_dump(mode="json")
            job.resources = {t.value: r.model_dump(mode="json") for t, r in info.resources.items()}
        s.flush()
        return job

    def _node(
        self,
        s: Session,
        job: m.JobRow,
        cache: dict[str, m.JobNodeRow],
        name: str,
        rtype: ReplicaType,
    ) -> m.JobNodeRow:
        node = cache.get(name) or s.scalar(
            select(m.JobNodeRow).where(m.JobNodeRow.job_id == job.id, m.JobNodeRow.name == name)
        )
        if node is None:
            node = m.JobNodeRow(job_id=job.id, name=name, replica_type=rtype.value)
            s.add(node)
        node.updated_at = self.clock()
        s.flush()
        cache[name] = node
        return node

    def add_plan(
        self,
        job_name: str,
        stage: planner.OptimizeStage,
        plan: ResourcePlan | None,
        decisions: Sequence[planner.Decision],
        stats_until: float,
    ) -> tuple[int | None, list[schemas.EventRecord]]:
        """Store the plan (when not ``None``) and the decisions' events; return their records."""
        with self._session.begin() as s:
            job = self._job(s, job_name)
            now = self.clock()
            row = None
            if plan is not None:
                row = m.ResourcePlanRow(
                    job_id=job.id,
                    created_at=now,
                    stage=stage.value,
                    reason=plan.reason[:2000],
                    plan=plan.to_wire(),
                    stats_until=stats_until,
                )
                s.add(row)
                s.flush()
            events = [
                m.OptimizeEventRow(
                    job_id=job.id,
                    created_at=now,
                    kind=d.event.kind.value,
                    node=d.event.node,
                    detail=d.event.detail[:2000],
                    algorithm=d.algorithm,
                    plan_id=row.id if row is not None and not d.plan.empty else None,
                )
                for d in decisions
            ]
            s.add_all(events)
            s.flush()
            return (row.id if row else None), [_event(e) for e in events]

    def report_cluster(self, report: schemas.ClusterReport) -> None:
        with self._session.begin() as s:
            for n in report.nodes:
                node = s.scalar(select(m.ClusterNodeRow).where(m.ClusterNodeRow.name == n.name))
                if node is None:
                    node = m.ClusterNodeRow(name=n.name)
                    s.add(node)
                node.platform = n.platform
                node.cpu_capacity, node.memory_capacity_mb = n.cpu_capacity, n.memory_capacity_mb
                node.updated_at = n.timestamp
                s.flush()
                s.add(build(m.ClusterSampleRow, n, cluster_node_id=node.id))
            for j in report.jobs:
                row = s.scalar(select(m.ClusterJobRow).where(m.ClusterJobRow.name == j.name))
                if row is None:
                    row = m.ClusterJobRow(name=j.name)
                    s.add(row)
                row.platform, row.phase, row.replicas = j.platform, j.phase, dict(j.replicas)
                row.updated_at = j.timestamp

    # ---- reads ----
    def _job(self, s: Session, name: str) -> m.JobRow:
        job = s.scalar(select(m.JobRow).where(m.JobRow.name == name))
        if job is None:
            raise unknown_job(name)
        return job

    def job_names(self) -> list[str]:
        with self._session() as s:
            return list(s.scalars(select(m.JobRow.name).order_by(m.JobRow.id)))

    def metrics(self, job_name: str) -> schemas.JobMetrics:
        with self._session() as s:
            job = self._job(s, job_name)
            names = {
                n.id: n
                for n in s.scalars(select(m.JobNodeRow).where(m.JobNodeRow.job_id == job.id))
            }
            node_rows = _newest(s, m.NodeSampleRow, job.id)
            event_rows = s.scalars(
                select(m.NodeEventRow)
                .where(m.NodeEventRow.job_id == job.id)
                .order_by(m.NodeEventRow.id)
            )
            plan_rows = s.scalars(
                select(m.ResourcePlanRow)
                .where(m.ResourcePlanRow.job_id == job.id)
                .order_by(m.ResourcePlanRow.id)
            )
            opt_rows = s.scalars(
                select(m.OptimizeEventRow)
                .where(m.OptimizeEventRow.job_id == job.id)
                .order_by(m.OptimizeEventRow.id)
            )
            return schemas.JobMetrics(
                job=_job_info(job),
                status=schemas.JobStatus(job.status),
                node_samples=[_node_sample(r, names[r.node_id]) for r in node_rows],
                speed_samples=[
                    build(schemas.SpeedSampleMessage, r)
                    for r in _newest(s, m.SpeedSampleRow, job.id)
                ],
                node_events=[
                    build(
                        schemas.NodeEventMessage,
                        r,
                        node=names[r.node_id].name,
                        replica_type=ReplicaType(names[r.node_id].replica_type),
                        kind=planner.NodeEventKind(r.kind),
                    )
                    for r in event_rows
                ],
                plans=[
                    schemas.PlanRecord(
                        id=r.id,
                        created_at=r.created_at,
                        stage=planner.OptimizeStage(r.stage),
                        plan=ResourcePlan.model_validate(r.plan),
                    )
                    for r in plan_rows
                ],
                events=[_event(r) for r in opt_rows],
            )

    def stats_until(self, job_name: str) -> float:
        """``stats_until`` of the job's newest plan: later samples and events are fresh."""
        with self._session() as s:
            job = self._job(s, job_name)
            value = s.scalar(
                select(m.ResourcePlanRow.stats_until)
                .where(m.ResourcePlanRow.job_id == job.id)
                .order_by(m.ResourcePlanRow.id.desc())
                .limit(1)
            )
            return value or 0.0

    def finished_jobs(self, like: planner.JobProfile | None = None) -> list[planner.FinishedJob]:
        """Finished jobs (sharing ``like``'s model or dataset, when given; never ``like`` itself)
        with the resources they ended with and their peak memory per replica type."""
        query = select(m.JobRow).where(m.JobRow.finished_at.is_not(None))
        if like is not None:
            keys = [m.JobRow.model == like.model] if like.model else []
            keys += [m.JobRow.dataset == like.dataset] if like.dataset else []
            if not keys:
                return []
            query = query.where(m.JobRow.name != like.name, or_(*keys))
        out = []
        with self._session() as s:
            for job in s.scalars(query.order_by(m.JobRow.finished_at.desc()).limit(MAX_HISTORY)):
                plans = s.scalars(
                    select(m.ResourcePlanRow.plan)
                    .where(m.ResourcePlanRow.job_id == job.id)
                    .order_by(m.ResourcePlanRow.id)
                )
                peaks = s.execute(
                    select(m.JobNodeRow.replica_type, func.max(m.NodeSampleRow.memory_mb))
                    .join(m.NodeSampleRow, m.NodeSampleRow.node_id == m.JobNodeRow.id)
                    .where(m.JobNodeRow.job_id == job.id)
                    .group_by(m.JobNodeRow.replica_type)
                )
                info = _job_info(job)
                base = {t: r.to_core() for t, r in info.resources.items()}
                out.append(
                    planner.FinishedJob(
                        profile=info.profile(),
                        succeeded=job.status == schemas.JobStatus.SUCCEEDED.value,
                        finished_at=job.finished_at or 0.0,
                        resources=planner.apply_plans(
                            base, [ResourcePlan.model_validate(p) for p in plans]
                        ),
                        peak_memory_mb={ReplicaType(t): float(v) for t, v in peaks if v},
                    )
                )
        return out

    def cluster_jobs(self) -> list[schemas.ClusterJobReport]:
        """Each job's status as the cluster monitor last reported it, by name."""
        with self._session() as s:
            rows = s.scalars(select(m.ClusterJobRow).order_by(m.ClusterJobRow.name))
            return [build(schemas.ClusterJobReport, r, timestamp=r.updated_at) for r in rows]

    def cluster_nodes(self) -> list[schemas.ClusterNodeReport]:
        """Each machine's capacity with its newest usage sample."""
        with self._session() as s:
            out = []
            for node in s.scalars(select(m.ClusterNodeRow).order_by(m.ClusterNodeRow.name)):
                last = s.scalar(
                    select(m.ClusterSampleRow)
                    .where(m.ClusterSampleRow.cluster_node_id == node.id)
                    .order_by(m.ClusterSampleRow.id.desc())
                    .limit(1)
                )
                out.append(
                    build(
                        schemas.ClusterNodeReport,
                        node,
                        timestamp=node.updated_at,
                        cpu_used=last.cpu_used if last else 0.0,
                        memory_used_mb=last.memory_used_mb if last else 0.0,
                        pods=last.pods if last else 0,
                    )
                )
            return out


def job_stats(metrics: schemas.JobMetrics) -> planner.JobStats:
    """Planner stats from stored metrics; current resources = requested + every plan since."""
    base = {t: r.to_core() for t, r in metrics.job.resources.items()}
    return planner.JobStats(
        profile=metrics.job.profile(),
        limits=metrics.job.limits.to_core(),
        current=planner.apply_plans(base, [p.plan for p in metrics.plans]),
        node_samples=[n.to_core() for n in metrics.node_samples],
        speed_samples=[sp.to_core() for sp in metrics.speed_samples],
        node_events=[e.to_core() for e in metrics.node_events],
    )


_Sample = TypeVar("_Sample", m.NodeSampleRow, m.SpeedSampleRow)


def _newest(s: Session, model: type[_Sample], job_id: int) -> list[_Sample]:
    rows = s.scalars(
        select(model).where(model.job_id == job_id).order_by(model.id.desc()).limit(MAX_SAMPLES)
    )
    return list(reversed(list(rows)))


def _node_sample(r: m.NodeSampleRow, node: m.JobNodeRow) -> schemas.NodeSampleMessage:
    return schemas.NodeSampleMessage(
        node=node.name,
        replica_type=ReplicaType(node.replica_type),
        timestamp=r.timestamp,
        cpu_percent=r.cpu_percent,
        memory_mb=r.memory_mb,
        cpu_limit=node.cpu_limit,
        memory_limit_mb=node.memory_limit_mb,
        requests_per_second=r.requests_per_second or 0.0,
        partition_bytes=r.partition_bytes or 0,
        gpu_memory_mb=r.gpu_memory_mb or 0.0,
        gpu_percent=r.gpu_percent or 0.0,
    )


def _job_info(job: m.JobRow) -> schemas.JobInfoMessage:
    return build(
        schemas.JobInfoMessage,
        job,
        limits=schemas.JobLimitsMessage.model_validate(job.limits),
        resources={
            ReplicaType(t): schemas.ReplicaResourcesMessage.model_validate(r)
            for t, r in job.resources.items()
        },
    )


def _event(r: m.OptimizeEventRow) -> schemas.EventRecord:
    return build(schemas.EventRecord, r, kind=planner.EventKind(r.kind))
