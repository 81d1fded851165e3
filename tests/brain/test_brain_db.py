import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Engine

from flexjob.brain.db.engine import (
    DatabaseUrlError,
    default_db_url,
    migrate,
    normalize_url,
    table_names,
)
from flexjob.brain.db.models import Base

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
