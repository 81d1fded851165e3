"""initial schema

Revision ID: 0001
Revises: (none)
Create Date: 2026-11-22
"""

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: The per-job tables indexed on more than ``job_id``: the index's name and columns.
_TIME_INDEXES = {
    "speed_samples": ("ix_speed_samples_job_time", ["job_id", "timestamp"]),
    "node_samples": ("ix_node_samples_job_time", ["job_id", "timestamp"]),
}


def _id() -> "sa.Column[int]":
    return sa.Column("id", sa.Integer(), nullable=False)


def _cascade(column: str, table: str) -> sa.ForeignKeyConstraint:
    """``column`` refers to a row of ``table``, and goes with it."""
    return sa.ForeignKeyConstraint([column], [f"{table}.id"], ondelete="CASCADE")


def _job_index(name: str, batch_op: Any) -> tuple[str, list[str]]:
    """The index of the per-job table ``name``: as ``_TIME_INDEXES`` says, else on ``job_id``."""
    return _TIME_INDEXES.get(name, (batch_op.f(f"ix_{name}_job_id"), ["job_id"]))


def _per_job(name: str, *items: sa.Column[Any] | sa.Constraint) -> None:
    """A table of one job's rows: ``id``, ``job_id`` (deleted with the job), the columns and
    constraints in ``items``; indexed on ``job_id``, or as ``_TIME_INDEXES`` says."""
    op.create_table(
        name,
        _id(),
        sa.Column("job_id", sa.Integer(), nullable=False),
        *[item for item in items if isinstance(item, sa.Column)],
        _cascade("job_id", "jobs"),
        *[item for item in items if not isinstance(item, sa.Column)],
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table(name, schema=None) as batch_op:
        index, columns = _job_index(name, batch_op)
        batch_op.create_index(index, columns, unique=False)


def _drop_per_job(name: str) -> None:
    with op.batch_alter_table(name, schema=None) as batch_op:
        batch_op.drop_index(_job_index(name, batch_op)[0])
    op.drop_table(name)


def upgrade() -> None:
    op.create_table(
        "cluster_nodes",
        _id(),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("platform", sa.String(length=32), nullable=False),
        sa.Column("cpu_capacity", sa.Float(), nullable=False),
        sa.Column("memory_capacity_mb", sa.Float(), nullable=False),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("name"),
    )
    op.create_table(
        "jobs",
        _id(),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("user", sa.String(length=255), nullable=False),
        sa.Column("model", sa.String(length=255), nullable=False),
        sa.Column("dataset", sa.String(length=255), nullable=False),
        sa.Column("optimize_mode", sa.String(length=32), nullable=False),
        sa.Column("status", sa.String(length=32), nullable=False),
        sa.Column("limits", sa.JSON(), nullable=False),
        sa.Column("resources", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("finished_at", sa.Float(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("name"),
    )
    op.create_table(
        "cluster_samples",
        _id(),
        sa.Column("cluster_node_id", sa.Integer(), nullable=False),
        sa.Column("timestamp", sa.Float(), nullable=False),
        sa.Column("cpu_used", sa.Float(), nullable=False),
        sa.Column("memory_used_mb", sa.Float(), nullable=False),
        sa.Column("pods", sa.Integer(), nullable=False),
        _cascade("cluster_node_id", "cluster_nodes"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("cluster_samples", schema=None) as batch_op:
        batch_op.create_index(
            "ix_cluster_samples_node_time", ["cluster_node_id", "timestamp"], unique=False
        )

    _per_job(
        "job_nodes",
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("replica_type", sa.String(length=32), nullable=False),
        sa.Column("cpu_limit", sa.Float(), nullable=True),
        sa.Column("memory_limit_mb", sa.Float(), nullable=True),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.UniqueConstraint("job_id", "name", name="uq_job_nodes_job_name"),
    )
    _per_job(
        "resource_plans",
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("stage", sa.String(length=32), nullable=False),
        sa.Column("reason", sa.String(length=2000), nullable=False),
        sa.Column("plan", sa.JSON(), nullable=False),
        sa.Column("stats_until", sa.Float(), nullable=False),
    )
    _per_job(
        "speed_samples",
        sa.Column("timestamp", sa.Float(), nullable=False),
        sa.Column("step", sa.BigInteger(), nullable=False),
        sa.Column("samples_per_second", sa.Float(), nullable=False),
        sa.Column("world_size", sa.Integer(), nullable=False),
    )
    _per_job(
        "node_events",
        sa.Column("node_id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("timestamp", sa.Float(), nullable=False),
        sa.Column("memory_mb", sa.Float(), nullable=True),
        _cascade("node_id", "job_nodes"),
    )
    _per_job(
        "node_samples",
        sa.Column("node_id", sa.Integer(), nullable=False),
        sa.Column("timestamp", sa.Float(), nullable=False),
        sa.Column("cpu_percent", sa.Float(), nullable=False),
        sa.Column("memory_mb", sa.Float(), nullable=False),
        _cascade("node_id", "job_nodes"),
    )
    _per_job(
        "optimize_events",
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("node", sa.String(length=255), nullable=False),
        sa.Column("detail", sa.String(length=2000), nullable=False),
        sa.Column("algorithm", sa.String(length=64), nullable=False),
        sa.Column("plan_id", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(["plan_id"], ["resource_plans.id"], ondelete="SET NULL"),
    )


def downgrade() -> None:
    for name in (
        "optimize_events",
        "node_samples",
        "node_events",
        "speed_samples",
        "resource_plans",
        "job_nodes",
    ):
        _drop_per_job(name)
    with op.batch_alter_table("cluster_samples", schema=None) as batch_op:
        batch_op.drop_index("ix_cluster_samples_node_time")

    op.drop_table("cluster_samples")
    op.drop_table("jobs")
    op.drop_table("cluster_nodes")
