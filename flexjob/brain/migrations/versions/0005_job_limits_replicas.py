"""jobs.limits: the training type's bounds are ``min_replicas``/``max_replicas`` (were
``min_workers``/``max_workers``), the name of the spec's ``minReplicas``/``maxReplicas``

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-02
"""

from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: Old key → new key of each stored ``JobLimits`` dict.
RENAMED = {"min_workers": "min_replicas", "max_workers": "max_replicas"}

_jobs = sa.table("jobs", sa.column("id", sa.Integer()), sa.column("limits", sa.JSON()))


def _rename_keys(names: Mapping[str, str]) -> None:
    conn = op.get_bind()
    for row_id, limits in conn.execute(sa.select(_jobs.c.id, _jobs.c.limits)).all():
        if not isinstance(limits, dict) or not names.keys() & limits.keys():
            continue
        renamed: dict[str, Any] = {names.get(key, key): value for key, value in limits.items()}
        conn.execute(_jobs.update().where(_jobs.c.id == row_id).values(limits=renamed))


def upgrade() -> None:
    _rename_keys(RENAMED)


def downgrade() -> None:
    _rename_keys({new: old for old, new in RENAMED.items()})
