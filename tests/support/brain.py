"""A Brain for tests outside tests/brain: the real FastAPI app on SQLite, served in-process."""

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from flexjob.brain.client import BrainClient
from flexjob.brain.db.engine import open_database
from flexjob.brain.service import create_app
from flexjob.brain.store import BrainStore

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient


@contextmanager
def in_process_brain(tmp_path: Path) -> Iterator[BrainClient]:
    engine = open_database(f"sqlite:///{tmp_path}/brain.sqlite")
    try:
        with TestClient(create_app(BrainStore(engine)), base_url="http://brain") as http:
            yield BrainClient("http://brain", http=http)
    finally:
        engine.dispose()
