"""The Python SDK on the local platform, used as a notebook would: a job created from a dict
runs (its operator is started), scales, shows its logs, succeeds, is deleted; a failing job
raises with its reason."""

from pathlib import Path

import pytest

from flexjob.api import JobPhase, ReplicaPhase
from flexjob.client import FlexjobClient, JobFailedError
from flexjob.platform.contract import NotFoundError
from tests.e2e.sdk_calls import command_job
from tests.support.polling import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]


def test_a_notebook_creates_scales_reads_and_deletes_a_job(home: Path, tmp_path: Path) -> None:
    done = tmp_path / "done"
    code = (
        "import os, pathlib, time\n"
        "print('hello from', os.environ['FLEXJOB_REPLICA_INDEX'], flush=True)\n"
        f"p = pathlib.Path({str(done)!r})\n"
        "end = time.time() + 60\n"
        "while not p.exists() and time.time() < end: time.sleep(0.05)\n"
    )
    with FlexjobClient(home=home) as client:
        client.create_job(command_job("nb", code, backoff=0))
        running = client.wait_for_job("nb", phases=(JobPhase.RUNNING,), timeout=60)
        assert running.status is not None and running.status.phase is JobPhase.RUNNING
        client.scale_job("nb", worker=3)

        def three_running() -> bool:
            replicas = client.list_replicas("nb")
            return sum(r.phase is ReplicaPhase.RUNNING for r in replicas) == 3

        wait_until(three_running, 60, what="a third worker")
        wait_until(lambda: "hello from 2\n" in list(client.get_job_logs("nb", "worker-2")), 30)
        done.touch()
        finished = client.wait_for_job("nb", timeout=60)
        assert client.is_job_succeeded("nb") and finished.status is not None
        client.delete_job("nb")
        with pytest.raises(NotFoundError):
            client.get_job("nb")


def test_waiting_for_a_failing_job_raises_with_its_reason(home: Path) -> None:
    with FlexjobClient(home=home) as client:
        client.create_job(command_job("broken", "raise SystemExit(3)", workers=1, backoff=0))
        with pytest.raises(JobFailedError, match="job default/broken failed"):
            client.wait_for_job("broken", timeout=60)
