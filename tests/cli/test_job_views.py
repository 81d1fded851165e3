"""What ``flexjob get`` / ``describe`` show: counts without the implicit master, root causes."""

from datetime import UTC, datetime

from rich.console import Console, RenderableType

from flexjob.api import ElasticJobStatus, JobPhase, ReplicaPhase, ReplicaStatus, ReplicaType
from flexjob.cli import job_views
from flexjob.core.replicas import Replica
from tests.core.operator.reconcile_sim import make_job


def text(renderable: RenderableType) -> str:
    console = Console(width=200, record=True)
    console.print(renderable)
    return console.export_text()


def test_replicas_column_does_not_count_the_implicit_master() -> None:
    job = make_job(master=False, workers=2)
    job.metadata.creation_timestamp = "2026-01-01T00:00:00Z"
    job.status = ElasticJobStatus(
        phase=JobPhase.RUNNING,
        replica_statuses={
            ReplicaType.MASTER: ReplicaStatus(active=1),
            ReplicaType.WORKER: ReplicaStatus(active=2),
        },
    )
    row = text(job_views.jobs_table([job])).splitlines()[1]
    assert " 2/2 " in row, row


def test_describe_shows_a_failed_replicas_last_lines() -> None:
    job = make_job(master=False, workers=1)
    job.status = ElasticJobStatus(phase=JobPhase.FAILED)
    failed = Replica(
        "ns", "demo", "demo-worker-0", ReplicaType.WORKER, 0, ReplicaPhase.FAILED,
        exit_code=127, created=datetime.now(UTC),
        message="error: script not found: train.py (looked in /tmp)",
    )  # fmt: skip
    out = text(job_views.describe(job, [failed], []))
    assert "Failures" in out and "worker-0: exit code 127" in out
    assert "script not found: train.py" in out
