"""node samples: a training replica's GPU memory and utilisation (issue 38)

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-02
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("node_samples", schema=None) as batch_op:
        batch_op.add_column(sa.Column("gpu_memory_mb", sa.Float(), nullable=True))
        batch_op.add_column(sa.Column("gpu_percent", sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("node_samples", schema=None) as batch_op:
        batch_op.drop_column("gpu_percent")
        batch_op.drop_column("gpu_memory_mb")
