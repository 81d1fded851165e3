"""Database URLs, engines and migrations for the Brain.

The default database is an SQLite file in the user's flexjob directory (``FLEXJOB_HOME``, default
``~/.flexjob``); PostgreSQL is chosen by URL. ``open_database`` creates the engine and upgrades the
schema to the newest Alembic revision shipped in the package. Not for queries
(``brain.stats_store``).
"""

import logging
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, create_engine, event, inspect
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from flexjob.api.errors import BrainError, InvalidSpecError
from flexjob.platform.local.paths import flexjob_home

log = logging.getLogger(__name__)

MIGRATIONS_DIR = Path(__file__).resolve().parent.parent / "migrations"
ALLOWED_SCHEMES = ("sqlite", "postgresql", "postgresql+psycopg")


class DatabaseUrlError(BrainError, InvalidSpecError):
    """A ``--db`` URL that is not SQLite or PostgreSQL."""


def default_db_url() -> str:
    return f"sqlite:///{flexjob_home() / 'brain.sqlite'}"


def normalize_url(url: str | None) -> str:
    """The SQLAlchemy URL to use: the default file, or ``url`` with the psycopg 3 driver."""
    if not url:
        return default_db_url()
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise DatabaseUrlError(f"--db: cannot parse {url!r}: {exc}") from None
    if parsed.drivername not in ALLOWED_SCHEMES:
        raise DatabaseUrlError(
            f"--db: scheme {parsed.drivername!r} is not supported; "
            f"allowed: {', '.join(ALLOWED_SCHEMES)}"
        )
    if parsed.drivername == "postgresql":
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed.render_as_string(hide_password=False)


def _sqlite_pragmas(dbapi_conn: object, _record: object) -> None:
    cursor = dbapi_conn.cursor()  # type: ignore[attr-defined]
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA busy_timeout=5000")
    cursor.close()


def make_engine(url: str | None = None) -> Engine:
    url = normalize_url(url)
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"check_same_thread": False})
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    return create_engine(url, pool_pre_ping=True)


def alembic_config(engine: Engine) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    url = engine.url.render_as_string(hide_password=False)
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def migrate(engine: Engine, revision: str = "head") -> None:
    """Upgrade the schema to ``revision`` (the newest by default)."""
    cfg = alembic_config(engine)
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, revision)
    log.info("brain database at %s is at revision %s", engine.url.render_as_string(), revision)


def open_database(url: str | None = None) -> Engine:
    engine = make_engine(url)
    migrate(engine)
    return engine


def table_names(engine: Engine) -> list[str]:
    return sorted(inspect(engine).get_table_names())
