"""Brains for tests: the real FastAPI app in-process (SQLite), or `flexjob brain` as a process."""

import re
import subprocess
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from flexjob.brain.app import create_app
from flexjob.brain.db.engine import open_database
from flexjob.brain.stats_store import BrainStore
from flexjob.rpc.brain_client import BrainClient

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


@contextmanager
def brain_process(db_url: str, log_path: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """``python -m flexjob brain`` on a free port; yields the process and its base URL."""
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "flexjob", "brain", "--db", db_url, "--port", "0"],
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
        )
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            match = re.search(r"listening on (http://\S+)", line)
            assert match, f"no address from flexjob brain: {line!r}, {log_path.read_text()}"
            yield proc, match.group(1)
        finally:
            proc.terminate()
            proc.wait(timeout=20)
