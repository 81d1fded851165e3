"""The Brain's database schema as SQLAlchemy 2.0 models, one ``*Row`` class per table.

Jobs, their replicas (``job_nodes``), resource and speed samples, node events, resource plans and
optimize events; cluster nodes and their samples from the cluster monitor. Times are Unix seconds
(floats) so SQLite and PostgreSQL store them alike. Schema changes go through Alembic migrations
in ``flexjob/brain/migrations``; this module is not for queries (see ``brain.stats_store``).
"""

from typing import Any

from sqlalchemy import JSON, BigInteger, Float, ForeignKey, Index, Integer, String, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, MappedColumn, mapped_column

NAME = 255


class Base(DeclarativeBase):
    """Every table's key: an integer ``id``, its first column (as the migrations create it)."""

    id: Mapped[int] = mapped_column(Integer, primary_key=True, sort_order=-1)


def _of_job(index: bool | None = None) -> MappedColumn[int]:
    """The ``job_id`` of a job's record, deleted with the job."""
    return mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), index=index)


class JobRow(Base):
    __tablename__ = "jobs"

    name: Mapped[str] = mapped_column(String(NAME), unique=True)
    user: Mapped[str] = mapped_column(String(NAME), default="")
    model: Mapped[str] = mapped_column(String(NAME), default="")
    dataset: Mapped[str] = mapped_column(String(NAME), default="")
    optimize_mode: Mapped[str] = mapped_column(String(32), default="cluster")
    status: Mapped[str] = mapped_column(String(32), default="running")
    #: JobLimits as a dict; requested resources per replica type (ReplicaResources dicts).
    limits: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    resources: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    created_at: Mapped[float] = mapped_column(Float)
    finished_at: Mapped[float | None] = mapped_column(Float, nullable=True)


class JobNodeRow(Base):
    """One replica of a job, by its stable name (e.g. ``worker-1``)."""

    __tablename__ = "job_nodes"
    __table_args__ = (UniqueConstraint("job_id", "name", name="uq_job_nodes_job_name"),)

    job_id: Mapped[int] = _of_job(index=True)
    name: Mapped[str] = mapped_column(String(NAME))
    replica_type: Mapped[str] = mapped_column(String(32))
    cpu_limit: Mapped[float | None] = mapped_column(Float, nullable=True)
    memory_limit_mb: Mapped[float | None] = mapped_column(Float, nullable=True)
    updated_at: Mapped[float] = mapped_column(Float)


class NodeSampleRow(Base):
    __tablename__ = "node_samples"
    __table_args__ = (Index("ix_node_samples_job_time", "job_id", "timestamp"),)

    job_id: Mapped[int] = _of_job()
    node_id: Mapped[int] = mapped_column(ForeignKey("job_nodes.id", ondelete="CASCADE"))
    timestamp: Mapped[float] = mapped_column(Float)
    cpu_percent: Mapped[float] = mapped_column(Float)
    memory_mb: Mapped[float] = mapped_column(Float)
    requests_per_second: Mapped[float | None] = mapped_column(Float, nullable=True)
    partition_bytes: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    gpu_memory_mb: Mapped[float | None] = mapped_column(Float, nullable=True)
    gpu_percent: Mapped[float | None] = mapped_column(Float, nullable=True)


class SpeedSampleRow(Base):
    __tablename__ = "speed_samples"
    __table_args__ = (Index("ix_speed_samples_job_time", "job_id", "timestamp"),)

    job_id: Mapped[int] = _of_job()
    timestamp: Mapped[float] = mapped_column(Float)
    step: Mapped[int] = mapped_column(BigInteger)
    samples_per_second: Mapped[float] = mapped_column(Float)
    world_size: Mapped[int] = mapped_column(Integer)


class NodeEventRow(Base):
    """Something that happened to a replica: OOM, failure, success."""

    __tablename__ = "node_events"

    job_id: Mapped[int] = _of_job(index=True)
    node_id: Mapped[int] = mapped_column(ForeignKey("job_nodes.id", ondelete="CASCADE"))
    kind: Mapped[str] = mapped_column(String(32))
    timestamp: Mapped[float] = mapped_column(Float)
    memory_mb: Mapped[float | None] = mapped_column(Float, nullable=True)


class ResourcePlanRow(Base):
    """A plan the brain gave a job, as ``api.ResourcePlan`` wire JSON."""

    __tablename__ = "resource_plans"

    job_id: Mapped[int] = _of_job(index=True)
    created_at: Mapped[float] = mapped_column(Float)
    stage: Mapped[str] = mapped_column(String(32))
    reason: Mapped[str] = mapped_column(String(2000), default="")
    plan: Mapped[dict[str, Any]] = mapped_column(JSON)
    #: Newest sample or event time the plan was based on; later data is fresh to the next plan.
    stats_until: Mapped[float] = mapped_column(Float, default=0.0)


class OptimizeEventRow(Base):
    """An event an administrator raised, the algorithm chosen and the plan it led to."""

    __tablename__ = "optimize_events"

    job_id: Mapped[int] = _of_job(index=True)
    created_at: Mapped[float] = mapped_column(Float)
    kind: Mapped[str] = mapped_column(String(32))
    node: Mapped[str] = mapped_column(String(NAME), default="")
    detail: Mapped[str] = mapped_column(String(2000), default="")
    algorithm: Mapped[str] = mapped_column(String(64), default="")
    plan_id: Mapped[int | None] = mapped_column(
        ForeignKey("resource_plans.id", ondelete="SET NULL"), nullable=True
    )


class ClusterNodeRow(Base):
    """A machine of the cluster as the cluster monitor last saw it."""

    __tablename__ = "cluster_nodes"

    name: Mapped[str] = mapped_column(String(NAME), unique=True)
    platform: Mapped[str] = mapped_column(String(32))
    cpu_capacity: Mapped[float] = mapped_column(Float)
    memory_capacity_mb: Mapped[float] = mapped_column(Float)
    updated_at: Mapped[float] = mapped_column(Float)


class ClusterSampleRow(Base):
    __tablename__ = "cluster_samples"
    __table_args__ = (Index("ix_cluster_samples_node_time", "cluster_node_id", "timestamp"),)

    cluster_node_id: Mapped[int] = mapped_column(ForeignKey("cluster_nodes.id", ondelete="CASCADE"))
    timestamp: Mapped[float] = mapped_column(Float)
    cpu_used: Mapped[float] = mapped_column(Float)
    memory_used_mb: Mapped[float] = mapped_column(Float)
    pods: Mapped[int] = mapped_column(Integer, default=0)


class ClusterJobRow(Base):
    """A job of the cluster as the cluster monitor last saw it (``ClusterReport.jobs``)."""

    __tablename__ = "cluster_jobs"

    name: Mapped[str] = mapped_column(String(NAME), unique=True)
    platform: Mapped[str] = mapped_column(String(32))
    phase: Mapped[str] = mapped_column(String(32))
    replicas: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    updated_at: Mapped[float] = mapped_column(Float)
