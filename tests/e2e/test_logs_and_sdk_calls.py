"""A job's logs and the Kubeflow-style SDK calls on the local platform (issue 37, items 8 and
13): ``flexjob logs JOB`` prints every replica's output prefixed (rank 0's replica among them),
``--replica``, ``--tail`` and ``-l`` pick, ``--since`` is refused by name locally; the SDK's
``get_job_logs`` reads the same; ``get_job_conditions``, ``is_job_*``,
``wait_for_job_conditions(callback, polling_interval)`` and ``update_job`` as Kubeflow's."""

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from flexjob.api import ElasticJob, JobPhase
from flexjob.client import FlexjobClient
from tests.e2e.sdk_calls import PRINTS, check_update_job, command_job, waits_for

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[ElasticJob]]:
    """One job of two workers that printed two lines each and succeeded, with what the
    ``wait_for_job_conditions`` callback saw."""
    home = tmp_path_factory.mktemp("home")
    seen: list[ElasticJob] = []
    with FlexjobClient(home=home) as client:
        client.create_job(command_job("printed", PRINTS))
        client.wait_for_job_conditions(
            "printed",
            expected_conditions={"Succeeded"},
            wait_timeout=120,
            polling_interval=0.2,
            callback=seen.append,
        )
    return home, seen


def flexjob(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"FLEXJOB_HOME": str(home), "PATH": "/usr/bin:/bin"}
    cmd = [sys.executable, "-m", "flexjob", *args]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)


def test_logs_of_a_job_prints_every_replica_prefixed(finished: tuple[Path, Any]) -> None:
    done = flexjob(finished[0], "logs", "printed")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    for i in ("0", "1"):
        assert f"[worker-{i}] first from {i}" in lines and f"[worker-{i}] last from {i}" in lines


#: ``flexjob logs printed`` options and what they print, by what they show.
PICKS = {
    "replica-and-tail-pick-one-replicas-last-lines": (
        ["--replica", "worker-1", "--tail", "1"],
        "last from 1\n",
    ),
    "selector-picks-by-label": (["-l", "replica-index=0"], "first from 0\nlast from 0\n"),
}

#: Options ``flexjob logs printed`` refuses, and what its error says, by why.
REFUSED = {
    "since-is-refused-by-name-locally": (
        ["--since", "5m"],
        "--since: the local platform's logs carry no times",
    ),
    "a-replica-not-there-names-those-there": (
        ["-l", "replica-index=7"],
        "its replicas: worker-0, worker-1",
    ),
}


@pytest.mark.parametrize(("options", "printed"), PICKS.values(), ids=PICKS)
def test_logs_options_pick_what_is_printed(
    finished: tuple[Path, Any], options: list[str], printed: str
) -> None:
    done = flexjob(finished[0], "logs", "printed", *options)
    assert done.stdout == printed, done.stderr


@pytest.mark.parametrize(("options", "says"), REFUSED.values(), ids=REFUSED)
def test_logs_that_cannot_be_printed_exit_1_saying_why(
    finished: tuple[Path, Any], options: list[str], says: str
) -> None:
    done = flexjob(finished[0], "logs", "printed", *options)
    assert done.returncode == 1
    assert says in done.stderr


def test_sdk_get_job_logs_reads_every_replica_or_the_ones_picked(
    finished: tuple[Path, Any],
) -> None:
    with FlexjobClient(home=finished[0]) as client:
        every = list(client.get_job_logs("printed"))
        picked = list(client.get_job_logs("printed", replica_type="worker", replica_index=1))
        last = list(client.get_job_logs("printed", "worker-0", tail=1))
    assert "[worker-0] first from 0\n" in every and "[worker-1] last from 1\n" in every
    assert picked == ["first from 1\n", "last from 1\n"]
    assert last == ["last from 0\n"]


def test_wait_for_job_conditions_calls_back_and_returns_the_job(
    finished: tuple[Path, list[ElasticJob]],
) -> None:
    _, seen = finished
    assert seen and seen[-1].status is not None
    assert seen[-1].status.phase is JobPhase.SUCCEEDED


def test_conditions_and_is_job_calls_follow_the_phase(finished: tuple[Path, Any]) -> None:
    with FlexjobClient(home=finished[0]) as client:
        conditions = client.get_job_conditions("printed")
        current = [c.type for c in conditions if c.status == "True"]
        assert current == [JobPhase.SUCCEEDED]
        assert client.is_job_created("printed") and client.is_job_succeeded("printed")
        assert not client.is_job_running("printed")
        assert not client.is_job_failed("printed") and not client.is_job_restarting("printed")


def test_update_job_scales_a_running_job_and_names_what_cannot_change(
    tmp_path: Path,
) -> None:
    with FlexjobClient(home=tmp_path / "home") as client:
        done = tmp_path / "done"
        check_update_job(client, command_job("grows", waits_for(done), workers=1), done)
