"""The SDK's errors and arguments as a notebook meets them: phases written as strings, its
errors under ``FlexjobError``, no kubeconfig named without a traceback."""

from pathlib import Path

import pytest
from typer.testing import CliRunner

from flexjob.api import ElasticJob, JobPhase
from flexjob.api.errors import FlexjobError, InvalidSpecError, UnavailableError
from flexjob.api.load import job_from_dict
from flexjob.cli.main import app
from flexjob.client import FlexjobClient, JobFailedError
from flexjob.client.config import ConfigError
from flexjob.platform.local import LocalPlatform


def _job(name: str) -> ElasticJob:
    template = {"spec": {"containers": [{"name": "main", "image": "local", "command": ["true"]}]}}
    return job_from_dict(
        {
            "apiVersion": "flexjob.dev/v1alpha1",
            "kind": "ElasticJob",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicaSpecs": {"worker": {"replicas": 1, "template": template}}},
        }
    )


def test_wait_for_job_takes_phase_names_and_times_out(tmp_path: Path) -> None:
    platform = LocalPlatform(tmp_path)
    platform.create_job(_job("stays"))  # stored only: no operator moves it on
    with FlexjobClient(platform) as client, pytest.raises(TimeoutError, match="Succeeded"):
        client.wait_for_job("stays", phases=("Succeeded",), timeout=0.2, poll_interval=0.05)


def test_wait_for_job_names_the_allowed_phases_for_an_unknown_one(tmp_path: Path) -> None:
    with FlexjobClient(LocalPlatform(tmp_path)) as client, pytest.raises(InvalidSpecError) as err:
        client.wait_for_job("stays", phases=("Done",), timeout=0.2)
    assert "'Done'" in str(err.value) and "Succeeded" in str(err.value)
    assert JobPhase.RUNNING.value in str(err.value)


def test_sdk_errors_are_flexjob_errors() -> None:
    assert issubclass(JobFailedError, FlexjobError)
    assert issubclass(ConfigError, FlexjobError) and issubclass(ConfigError, ValueError)


def test_kubernetes_without_a_kubeconfig_is_one_line_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing"))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    done = CliRunner().invoke(app, ["get", "--platform", "kubernetes"])
    assert done.exit_code == 1
    assert done.exception is None or isinstance(done.exception, SystemExit)
    assert "Traceback" not in done.output
    assert f"no usable kubeconfig ({tmp_path / 'missing'}" in done.output


def test_the_sdk_raises_unavailable_without_a_kubeconfig(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing"))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(UnavailableError, match="no usable kubeconfig"):
        FlexjobClient("kubernetes")
