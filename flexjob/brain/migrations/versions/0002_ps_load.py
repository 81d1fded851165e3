"""node samples: a PS replica's requests/s and partition bytes (issue 15)

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-26
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("node_samples", schema=None) as batch_op:
        batch_op.add_column(sa.Column("requests_per_second", sa.Float(), nullable=True))
        batch_op.add_column(sa.Column("partition_bytes", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("node_samples", schema=None) as batch_op:
        batch_op.drop_column("partition_bytes")
        batch_op.drop_column("requests_per_second")
