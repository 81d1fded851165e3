"""initial schema

Revision ID: 0001
Revises: (none)
Create Date: 2026-11-22
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:

    op.create_table(
        "cluster_nodes",
        sa.Column("id", sa.Integer(), nullable=False),
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
        sa.Column("id", sa.Integer(), nullable=False),
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
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("cluster_node_id", sa.Integer(), nullable=False),
        sa.Column("timestamp", sa.Float(), nullable=False),
        sa.Column("cpu_used", sa.Float(), nullable=False),
        sa.Column("memory_used_mb", sa.Float(), nullable=False),
        sa.Column("pods", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["cluster_node_id"], ["cluster_nodes.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("cluster_samples", schema=None) as batch_op:
        batch_op.create_index(
            "ix_cluster_samples_node_time", ["cluster_node_id", "timestamp"], unique=False
        )

    op.create_table(
        "job_nodes",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("job_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("replica_type", sa.String(length=32), nullable=False),
        sa.Column("cpu_limit", sa.Float(), nullable=True),
        sa.Column("memory_limit_mb", sa.Float(), nullable=True),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(["job_id"], ["jobs.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("job_id", "name", name="uq_job_nodes_job_name"),
    )
    with op.batch_alter_table("job_nodes", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_job_nodes_job_id"), ["job_id"], unique=False)

    op.create_table(
        "resource_plans",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("job_id", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("stage", sa.String(length=32), nullable=False),
        sa.Column("reason", sa.String(length=2000), nullable=False),
        sa.Column("plan", sa.JSON(), nullable=False),
        sa.Column("stats_until", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(["job_id"], ["jobs.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("resource_plans", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_resource_plans_job_id"), ["job_id"], unique=False)

    op.create_table(
        "speed_samples",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("job_id", sa.Integer(), nullable=False),
        sa.Column("timestamp", sa.Float(), nullable=False),
        sa.Column("step", sa.BigInteger(), nullable=False),
        sa.Column("samples_per_second", sa.Float(), nullable=False),
        sa.Column("world_size", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["job_id"], ["jobs.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("speed_samples", schema=None) as batch_op:
        batch_op.create_index("ix_speed_samples_job_time", ["job_id", "timestamp"], unique=False)

    op.create_table(
        "node_events",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("job_id", sa.Integer(), nullable=False),
        sa.Column("node_id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("timestamp", sa.Float(), nullable=False),
        sa.Column("memory_mb", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(["job_id"], ["jobs.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["node_id"], ["job_nodes.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("node_events", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_node_events_job_id"), ["job_id"], unique=False)

    op.create_table(
        "node_samples",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("job_id", sa.Integer(), nullable=False),
        sa.Column("node_id", sa.Integer(), nullable=False),
        sa.Column("timestamp", sa.Float(), nullable=False),
        sa.Column("cpu_percent", sa.Float(), nullable=False),
        sa.Column("memory_mb", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(["job_id"], ["jobs.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["node_id"], ["job_nodes.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("node_samples", schema=None) as batch_op:
        batch_op.create_index("ix_node_samples_job_time", ["job_id", "timestamp"], unique=False)

    op.create_table(
        "optimize_events",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("job_id", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("node", sa.String(length=255), nullable=False),
        sa.Column("detail", sa.String(length=2000), nullable=False),
        sa.Column("algorithm", sa.String(length=64), nullable=False),
        sa.Column("plan_id", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(["job_id"], ["jobs.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["plan_id"], ["resource_plans.id"], ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("optimize_events", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_optimize_events_job_id"), ["job_id"], unique=False)


def downgrade() -> None:

    with op.batch_alter_table("optimize_events", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_optimize_events_job_id"))

    op.drop_table("optimize_events")
    with op.batch_alter_table("node_samples", schema=None) as batch_op:
        batch_op.drop_index("ix_node_samples_job_time")

    op.drop_table("node_samples")
    with op.batch_alter_table("node_events", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_node_events_job_id"))

    op.drop_table("node_events")
    with op.batch_alter_table("speed_samples", schema=None) as batch_op:
        batch_op.drop_index("ix_speed_samples_job_time")

    op.drop_table("speed_samples")
    with op.batch_alter_table("resource_plans", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_resource_plans_job_id"))

    op.drop_table("resource_plans")
    with op.batch_alter_table("job_nodes", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_job_nodes_job_id"))

    op.drop_table("job_nodes")
    with op.batch_alter_table("cluster_samples", schema=None) as batch_op:
        batch_op.drop_index("ix_cluster_samples_node_time")

    op.drop_table("cluster_samples")
    op.drop_table("jobs")
    op.drop_table("cluster_nodes")
