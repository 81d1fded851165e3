"""The Platform contract, run against the local platform (processes + SQLite)."""

from pathlib import Path

import pytest

from flexjob.platform.contract import Platform, Replica
from tests.platform.contract import *  # noqa: F403
from tests.support.local_jobs import local_platform  # noqa: F401 (the fixture)


@pytest.fixture
def exit_dir(tmp_path: Path) -> Path:
    path = tmp_path / "exits"
    path.mkdir()
    return path


@pytest.fixture
def contract_env(exit_dir: Path) -> dict[str, str]:
    return {"CONTRACT_EXIT_DIR": str(exit_dir)}


@pytest.fixture
def finish_replica(exit_dir: Path):  # type: ignore[no-untyped-def]
    def finish(platform: Platform, replica: Replica, code: int) -> None:
        (exit_dir / replica.name).write_text(str(code))

    return finish
