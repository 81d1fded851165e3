"""``flexjob operator`` as a process, pointed at the emulator like at ``kubectl proxy``."""

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import kubernetes.client
import pytest
from kubernetes.client import CoreV1Api, CustomObjectsApi

from tests.support.k8s_fixtures import EmulatorThread


@pytest.fixture()
def emulator_url() -> Iterator[str]:
    with EmulatorThread() as emulator:
        yield emulator.base_url


def test_operator_command_creates_the_master_of_a_new_job(
    emulator_url: str, tmp_path: Path
) -> None:
    assert_operator_creates_a_master(sys.executable, emulator_url, tmp_path)


def assert_operator_creates_a_master(
    python: str, emulator_url: str, tmp_path: Path, env: dict[str, str] | None = None
) -> None:
    """``PYTHON -m flexjob operator`` (in ``env``) against the emulator creates a new job's
    master pod (also run from a venv without torch: tests/test_no_torch_install.py)."""
    command = [
        python,
        "-m",
        "flexjob",
        "operator",
        "--server",
        emulator_url,
        "--no-webhooks",
        "--resync",
        "0",
    ]
    log = (tmp_path / "operator.log").open("wb")
    env = {**(env or os.environ), "FLEXJOB_IMAGE": "flexjob:test"}  # it runs job masters
    process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        client = kubernetes.client.ApiClient(kubernetes.client.Configuration(host=emulator_url))
        template = {"spec": {"containers": [{"name": "main", "image": "python:3.11"}]}}
        job = {
            "apiVersion": "flexjob.dev/v1alpha1",
            "kind": "ElasticJob",
            "metadata": {"name": "cli"},
            "spec": {"replicaSpecs": {"master": {"replicas": 1, "template": template}}},
        }
        CustomObjectsApi(client).create_namespaced_custom_object(
            "flexjob.dev", "v1alpha1", "default", "elasticjobs", job
        )
        deadline = time.monotonic() + 60  # a loaded machine starts kopf slowly
        names: list[str] = []
        while time.monotonic() < deadline and "cli-master-0" not in names:
            assert process.poll() is None, (tmp_path / "operator.log").read_text()
            names = [
                p.metadata.name for p in CoreV1Api(client).list_namespaced_pod("default").items
            ]
            time.sleep(0.1)
        assert "cli-master-0" in names
    finally:
        process.terminate()
        process.wait(10)
        log.close()


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--job-master-state-size", "lots"], "--job-master-state-size"),
        (["--job-master-state-size", "0"], "--job-master-state-size"),
        (["--no-job-master-state", "--job-master-state-claim", "m"], "--no-job-master-state"),
        (["--no-job-master-state", "--job-master-state-class", "ssd"], "--no-job-master-state"),
        (["--job-master-state-claim", "m", "--job-master-state-class", "ssd"], "per-job claims"),
    ],
)
def test_job_master_state_options_that_cannot_work_are_refused_by_name(
    args: list[str], named: str
) -> None:
    from typer.testing import CliRunner

    from flexjob.cli.main import app

    result = CliRunner().invoke(app, ["operator", "--server", "http://127.0.0.1:9", *args])
    assert result.exit_code == 2, result.output
    assert named in " ".join(result.output.split())


def test_job_master_state_options_make_the_operators_setting() -> None:
    from flexjob.cli.operator_cmd import _master_state
    from flexjob.core.operator.master_state import NO_STATE, PER_JOB_STATE, MasterStateStorage

    assert _master_state(True, "", "", "1Gi") == PER_JOB_STATE
    assert _master_state(False, "", "", "1Gi") == NO_STATE
    assert _master_state(True, "m", "", "1Gi") == MasterStateStorage(claim="m")
    assert _master_state(True, "", "ssd", "5Gi") == MasterStateStorage(
        storage_class="ssd", size="5Gi"
    )
