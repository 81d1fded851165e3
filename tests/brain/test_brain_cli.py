import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from flexjob.core.planner import OptimizeStage
from flexjob.rpc import brain_messages as schemas
from flexjob.rpc.brain_client import BrainClient
from tests.brain import reports


def test_brain_command_serves_plans_over_http(
    brain_process: tuple[subprocess.Popen[str], str], db_url: str
) -> None:
    _, url = brain_process
    with BrainClient(url) as brain:
        assert brain.healthy()
        brain.persist_metrics("job", schemas.MetricsReport(job=reports.job_info("job")))
        assert not brain.optimize("job", OptimizeStage.CREATE).empty
    assert "job" in BrainClient(url).list_jobs()


def test_brain_command_rejects_an_unsupported_database() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "flexjob", "brain", "--db", "mysql://u@h/db"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2
    assert "--db" in out.stderr and "allowed: sqlite" in out.stderr


@contextlib.contextmanager
def brain_command(env: dict[str, str]) -> Iterator[str]:
    """``flexjob brain`` on a free port with ``env`` added to this process's: its first line
    (where it says which database it uses); stopped after."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "flexjob", "brain", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, **env},
    )
    try:
        assert proc.stdout is not None
        yield proc.stdout.readline()
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_brain_defaults_to_sqlite_in_flexjob_home(tmp_path: Path) -> None:
    env_home = tmp_path / "home"
    with brain_command({"FLEXJOB_HOME": str(env_home)}) as line:
        assert f"sqlite:///{env_home}/brain.sqlite" in line
        assert (env_home / "brain.sqlite").exists()


def test_brain_takes_its_database_url_from_flexjob_brain_db(tmp_path: Path) -> None:
    """On a cluster the URL (with its password) comes from a Secret as $FLEXJOB_BRAIN_DB."""
    db = tmp_path / "from-env.sqlite"
    env = {"FLEXJOB_HOME": str(tmp_path / "home"), "FLEXJOB_BRAIN_DB": f"sqlite:///{db}"}
    with brain_command(env) as line:
        assert f"sqlite:///{db}" in line
        assert db.exists() and not (tmp_path / "home" / "brain.sqlite").exists()
