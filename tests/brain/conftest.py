"""Brain fixtures: every database test runs on SQLite and, when FLEXJOB_TEST_PG_URL is set, on
PostgreSQL (each test in its own schema, dropped afterwards)."""

import os
import subprocess
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.engine import make_url

from flexjob.brain.app import create_app
from flexjob.brain.db.engine import normalize_url, open_database
from flexjob.brain.stats_store import BrainStore
from flexjob.rpc.brain_client import BrainClient
from tests.support.brain import brain_process as start_brain_process

with warnings.catch_warnings():
    # Starlette warns about its httpx-based TestClient at import time; it is what FastAPI ships.
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

PG_ENV = "FLEXJOB_TEST_PG_URL"
PG_URL = os.environ.get(PG_ENV, "")
PG_SKIP_REASON = f"{PG_ENV} is not set: no PostgreSQL server to test against (.ci/run starts one)"

ENGINES = [
    pytest.param("sqlite", id="sqlite"),
    pytest.param(
        "postgresql",
        id="postgresql",
        marks=[pytest.mark.postgres, pytest.mark.skipif(not PG_URL, reason=PG_SKIP_REASON)],
    ),
]


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if PG_URL:
        where = make_url(normalize_url(PG_URL)).render_as_string(hide_password=True)
        terminalreporter.write_line(f"brain tests ran on SQLite and on PostgreSQL at {where}")
    else:
        terminalreporter.write_line(f"brain PostgreSQL tests skipped: {PG_SKIP_REASON}")


@pytest.fixture(params=ENGINES)
def db_url(request: pytest.FixtureRequest, tmp_path: os.PathLike[str]) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/brain.sqlite"
        return
    schema = f"t_{uuid.uuid4().hex[:12]}"
    admin = create_engine(normalize_url(PG_URL))
    with admin.begin() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    url = make_url(normalize_url(PG_URL)).update_query_dict({"options": f"-csearch_path={schema}"})
    try:
        yield url.render_as_string(hide_password=False)
    finally:
        with admin.begin() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


@pytest.fixture
def engine(db_url: str) -> Iterator[Engine]:
    eng = open_database(db_url)
    yield eng
    eng.dispose()


class Clock:
    """A settable clock for the store."""

    def __init__(self, now: float = 10_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store(engine: Engine, clock: Clock) -> BrainStore:
    return BrainStore(engine, clock)


@pytest.fixture
def http(store: BrainStore) -> Iterator[TestClient]:
    """Raw HTTP to the real FastAPI app, in-process."""
    with TestClient(create_app(store), base_url="http://brain") as client:
        yield client


@pytest.fixture
def brain(http: TestClient) -> BrainClient:
    """The typed client talking to the real FastAPI app in-process."""
    return BrainClient("http://brain", http=http)


@pytest.fixture
def brain_process(db_url: str, tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    with start_brain_process(db_url, tmp_path / "brain.log") as running:
        yield running
