from typing import Any

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Engine

from flexjob.brain.db.engine import (
    DatabaseUrlError,
    alembic_config,
    default_db_url,
    make_engine,
    migrate,
    normalize_url,
    table_names,
)
from flexjob.brain.db.models import Base
from flexjob.core.planner import JobLimits
from flexjob.rpc.brain_messages import JobLimitsMessage

TABLES = {
    "jobs",
    "job_nodes",
    "node_samples",
    "speed_samples",
    "node_events",
    "resource_plans",
    "optimize_events",
    "cluster_nodes",
    "cluster_samples",
    "cluster_jobs",
    "alembic_version",
}
#: A ``jobs`` row as revision 0004 has it, but for its name and limits.
JOB_ROW = {
    "user": "",
    "model": "",
    "dataset": "",
    "optimize_mode": "cluster",
    "status": "running",
    "resources": {},
    "created_at": 1.0,
}
JOBS = sa.table(
    "jobs",
    sa.column("id", sa.Integer()),
    sa.column("name", sa.String()),
    sa.column("limits", sa.JSON()),
    sa.column("resources", sa.JSON()),
    *(sa.column(name) for name in JOB_ROW if name != "resources"),
)


def test_migrations_create_every_table(engine: Engine) -> None:
    assert set(table_names(engine)) == TABLES


def test_migrated_schema_matches_the_models(engine: Engine) -> None:
    with engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    assert diff == []


def test_migrating_an_up_to_date_database_changes_nothing(engine: Engine) -> None:
    migrate(engine)
    assert set(table_names(engine)) == TABLES


def test_default_database_is_sqlite_in_flexjob_home(
    monkeypatch: pytest.MonkeyPatch, tmp_path: object
) -> None:
    monkeypatch.setenv("FLEXJOB_HOME", str(tmp_path))
    assert default_db_url() == f"sqlite:///{tmp_path}/brain.sqlite"
    assert normalize_url(None) == default_db_url()


def test_plain_postgresql_urls_use_psycopg_3() -> None:
    assert normalize_url("postgresql://u:p@h/db") == "postgresql+psycopg://u:p@h/db"


def test_unsupported_database_names_the_option_and_allowed_schemes() -> None:
    with pytest.raises(DatabaseUrlError, match=r"--db: scheme 'mysql' .* allowed: sqlite"):
        normalize_url("mysql://u@h/db")


def _stored_limits(engine: Engine) -> list[dict[str, Any]]:
    with engine.connect() as conn:
        rows = conn.execute(sa.select(JOBS.c.limits).order_by(JOBS.c.id))
        return [dict(limits) for (limits,) in rows]


def test_migration_0005_renames_the_stored_training_bounds_and_its_downgrade_restores_them(
    db_url: str,
) -> None:
    """A job a brain stored before the rename (``min_workers``/``max_workers``) keeps its bounds
    under the names ``JobLimits`` has now; the other limits are left as they were."""
    engine = make_engine(db_url)
    try:
        migrate(engine, "0004")
        old = {"min_workers": 2, "max_workers": 5, "max_ps": 1}
        with engine.begin() as conn:
            conn.execute(
                JOBS.insert(),
                [
                    {**JOB_ROW, "name": "old", "limits": old},
                    {**JOB_ROW, "name": "none", "limits": {"max_cpu": 2.0}},
                ],
            )
        migrate(engine)
        assert _stored_limits(engine) == [
            {"min_replicas": 2, "max_replicas": 5, "max_ps": 1},
            {"max_cpu": 2.0},
        ]
        assert JobLimitsMessage.model_validate(_stored_limits(engine)[0]).to_core() == JobLimits(
            min_replicas=2, max_replicas=5, max_ps=1
        )
        cfg = alembic_config(engine)
        with engine.begin() as conn:
            cfg.attributes["connection"] = conn
            command.downgrade(cfg, "0004")
        assert _stored_limits(engine) == [old, {"max_cpu": 2.0}]
    finally:
        engine.dispose()
