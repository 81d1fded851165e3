"""Fixtures shared by the whole-job tests."""

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from flexjob.platform.local import LocalPlatform


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    """A fresh ``FLEXJOB_HOME``; every job left in it is deleted (its replicas stopped)."""
    path = tmp_path / "home"
    yield path
    platform = LocalPlatform(path)
    for job in platform.list_jobs(None):
        platform.delete_job(job.namespace, job.name)


@pytest.fixture
def env(home: Path) -> dict[str, str]:
    """The environment of ``flexjob`` commands run in a test: its own home, wide tables."""
    return {**os.environ, "FLEXJOB_HOME": str(home), "COLUMNS": "200"}
