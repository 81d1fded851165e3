"""The job commands with ``--platform kubernetes``, through a kubeconfig for the emulator."""

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from flexjob.cli.main import app
from tests.support.k8s_fixtures import EmulatorThread

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
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "emulator", "cluster": {"server": emulator.base_url}}],
            "users": [{"name": "tester", "user": {}}],
            "contexts": [
                {"name": "emulator", "context": {"cluster": "emulator", "user": "tester"}}
            ],
            "current-context": "emulator",
        }
        path = tmp_path / "kubeconfig"
        path.write_text(yaml.safe_dump(config))
        monkeypatch.setenv("KUBECONFIG", str(path))
        monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
        yield path


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
