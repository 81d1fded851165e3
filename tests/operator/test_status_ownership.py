"""The operator patches only the status fields it owns: a scale request the server writes while
the operator is between reading the job and writing its status is not lost.

Deterministic: the server's scale runs inside the operator's ``get_job`` call, right after the
read, through a second platform on the same SQLite file (as a ``flexjob server`` process would).
"""

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from flexjob.api import ElasticJob, JobPhase, ReplicaType
from flexjob.operator.local.loop import LocalJobLoop
from flexjob.operator.reconcile_pass import reconcile_job
from flexjob.platform.contract import Platform, Replica
from flexjob.platform.local import LocalPlatform
from flexjob.server.jobs import JobService, scale_counts
from tests.support.local_jobs import local_job, wait_for_file_then_exit
from tests.support.polling import wait_until

W = ReplicaType.WORKER


class ScaleAfterRead:
    """A platform whose next ``get_job`` lets ``meanwhile`` run after reading the job."""

    def __init__(self, platform: LocalPlatform, meanwhile: Callable[[], None]) -> None:
        self._platform = platform
        self._meanwhile: Callable[[], None] | None = meanwhile

    def get_job(self, namespace: str, name: str) -> ElasticJob:
        job = self._platform.get_job(namespace, name)
        if self._meanwhile is not None:
            meanwhile, self._meanwhile = self._meanwhile, None
            meanwhile()
        return job

    def __getattr__(self, name: str) -> Any:
        return getattr(self._platform, name)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def operator_platform(home: Path) -> Iterator[LocalPlatform]:
    local = LocalPlatform(home)
    yield local
    local.close()


def server_adds_a_worker(home: Path) -> Callable[[], None]:
    """What ``POST /jobs/{id}/replicas`` does, from another platform on the same file."""

    def scale() -> None:
        server_platform = LocalPlatform(home)
        scale_counts(JobService(server_platform), "default", "race", {W: 1}, preemptible=False)

    return scale


def one_worker_job(stop: Path) -> ElasticJob:
    waiting = wait_for_file_then_exit(stop)
    return local_job("race", master=waiting, worker=waiting, workers=1)


def local_loop_round(platform: Platform) -> None:
    LocalJobLoop(platform, "default", "race").step()


def kopf_pass(platform: Platform) -> None:
    reconcile_job(platform, "default", "race", datetime.now(UTC))


def workers(platform: LocalPlatform) -> list[Replica]:
    return [r for r in platform.list_replicas("default", "race") if r.type is W and r.active]


@pytest.mark.parametrize("operator_round", [local_loop_round, kopf_pass], ids=["local", "kopf"])
def test_a_scale_request_made_while_the_operator_reconciles_survives_and_is_acted_on(
    operator_round: Callable[[Platform], None],
    operator_platform: LocalPlatform,
    home: Path,
    tmp_path: Path,
) -> None:
    stop = tmp_path / "stop"
    operator_platform.create_job(one_worker_job(stop))
    try:
        # Race every round until the operator writes a status (Pending -> Starting): in each,
        # the operator reads the job, the server adds a worker, then the operator writes.
        scaled = 0
        while scaled < 5:
            operator_round(ScaleAfterRead(operator_platform, server_adds_a_worker(home)))
            scaled += 1
            status = operator_platform.get_job("default", "race").status
            assert status is not None
            if status.phase is not JobPhase.PENDING:
                break
        assert status.phase is JobPhase.STARTING
        assert status.replicas == {W: 1 + scaled}, "the operator reverted a scale request"
        wait_until(
            lambda: operator_round(operator_platform) or len(workers(operator_platform)) > scaled,
            what=f"{1 + scaled} workers",
        )
        assert len(workers(operator_platform)) == 1 + scaled
    finally:
        stop.touch()
