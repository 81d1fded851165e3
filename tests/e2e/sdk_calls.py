"""What the SDK tests on both platforms share: a job of plain command pods, the scripts its
pods run, and the ``update_job`` scenario (tests/e2e/test_logs_and_sdk_calls.py locally,
tests/e2e/test_kubernetes_sdk.py on the emulated cluster)."""

import sys
from pathlib import Path
from typing import Any

import pytest

from flexjob.api import JobPhase, ReplicaPhase
from flexjob.api.errors import InvalidSpecError
from flexjob.client import FlexjobClient
from tests.support.polling import wait_until


def command_job(
    name: str,
    code: str,
    workers: int = 2,
    backoff: int | None = None,
    image: str = "local",
    python: str = sys.executable,
) -> dict[str, Any]:
    """An ElasticJob of ``workers`` (1 to 3) pods each running ``python -c code`` in
    ``image``; no job master; ``backoff``: its ``backoffLimit`` (the default without)."""
    main = {"name": "main", "image": image, "command": [python, "-c", code]}
    template = {"spec": {"containers": [main]}}
    worker = {"replicas": workers, "minReplicas": 1, "maxReplicas": 3, "template": template}
    spec: dict[str, Any] = {"replicaSpecs": {"worker": worker}}
    if backoff is not None:
        spec["backoffLimit"] = backoff
    return {
        "apiVersion": "flexjob.dev/v1alpha1",
        "kind": "ElasticJob",
        "metadata": {"name": name},
        "spec": spec,
    }


#: Each pod prints two lines naming its index and succeeds.
PRINTS = (
    "import os\n"
    "i = os.environ['FLEXJOB_REPLICA_INDEX']\n"
    "print('first from', i, flush=True)\n"
    "print('last from', i, flush=True)\n"
)


def waits_for(path: Path, seconds: int = 120) -> str:
    """A pod script that runs until ``path`` exists (at most ``seconds``), then succeeds."""
    return (
        "import pathlib, time\n"
        f"p = pathlib.Path({str(path)!r})\n"
        f"end = time.time() + {seconds}\n"
        "while not p.exists() and time.time() < end: time.sleep(0.05)\n"
    )


def check_update_job(client: FlexjobClient, body: dict[str, Any], done: Path) -> None:
    """``body`` (one worker running ``waits_for(done)``) is created and running: ``update_job``
    with two workers gets a second one running, one changing ``backoffLimit`` is refused
    naming it; then the job ends and succeeds."""
    name = body["metadata"]["name"]
    client.create_job(body)
    client.wait_for_job_conditions(
        name, expected_conditions=("Running",), wait_timeout=90, polling_interval=0.2
    )
    assert client.is_job_running(name)
    body["spec"]["replicaSpecs"]["worker"]["replicas"] = 2
    client.update_job(body)

    def two_running() -> bool:
        replicas = client.list_replicas(name)
        return sum(r.phase is ReplicaPhase.RUNNING for r in replicas) == 2

    wait_until(two_running, 90, what="a second worker running")
    body["spec"]["backoffLimit"] = 7
    with pytest.raises(InvalidSpecError, match="backoffLimit cannot change"):
        client.update_job(body)
    done.touch()
    finished = client.wait_for_job(name, timeout=90)
    assert finished.status is not None and finished.status.phase is JobPhase.SUCCEEDED
    client.delete_job(name)
