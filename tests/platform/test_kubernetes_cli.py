"""The job commands with ``--platform kubernetes``, through a kubeconfig for the emulator."""

from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flexjob.cli.main import app
from tests.support.k8s_fixtures import EmulatorThread, use_kubeconfig

JOB = """
apiVersion: flexjob.dev/v1alpha1
kind: ElasticJob
metadata: {name: mnist, namespace: default}
spec:
  replicaSpecs:
    worker:
      replicas: 2
      template: {spec: {containers: [{name: main, image: "python:3.11", command: [python]}]}}
"""


@pytest.fixture
def kubeconfig(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    with EmulatorThread() as emulator:
        yield use_kubeconfig(tmp_path / "kubeconfig", emulator.base_url, monkeypatch)


def test_submitted_job_is_listed_from_the_cluster(kubeconfig: Path, tmp_path: Path) -> None:
    spec = tmp_path / "job.yaml"
    spec.write_text(JOB)
    submitted = CliRunner().invoke(
        app, ["submit", "--platform", "kubernetes", "--detach", str(spec)]
    )
    assert submitted.exit_code == 0, submitted.output
    listed = CliRunner().invoke(app, ["get", "--platform", "kubernetes", "-o", "yaml"])
    assert listed.exit_code == 0, listed.output
    assert "mnist" in listed.output
