"""``flexjob validate``, ``flexjob convert`` and ``flexjob manifests crds`` as a user runs them."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from flexjob.api import names
from flexjob.api.crd import crds
from flexjob.api.load import check_documents, load_job, parse_documents
from flexjob.platform.local import LocalPlatform
from tests.api.specs import EXAMPLES, JOB_EXAMPLES

BAD_JOB = """\
apiVersion: flexjob.dev/v1alpha1
kind: ElasticJob
metadata:
  name: Bad_Name
spec:
  cleanPodPolicy: Sometimes
  replicaSpecs:
    worker:
      replicas: -1
      template:
        spec:
          containers:
            - name: main
"""


def flexjob(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flexjob", *args], capture_output=True, text=True, timeout=60
    )


@pytest.fixture
def bad_file(tmp_path: Path) -> Path:
    path = tmp_path / "bad.yaml"
    path.write_text(BAD_JOB)
    return path


def test_validate_accepts_every_example() -> None:
    result = flexjob("validate", *map(str, sorted(EXAMPLES.glob("*.yaml"))))
    assert result.returncode == 0, result.stdout
    assert all(line.endswith(": valid") for line in result.stdout.splitlines())


def master_waiting_for_no_worker(tmp_path: Path) -> Path:
    """A job file whose flexjob master (it has a dataset) may be left with 0 workers."""
    doc = yaml.safe_load(BAD_JOB)
    doc["metadata"]["name"] = "ok"
    del doc["spec"]["cleanPodPolicy"]
    doc["spec"]["dataset"] = {"name": "d", "size": 100}
    worker = doc["spec"]["replicaSpecs"]["worker"]
    worker.update(replicas=2, minReplicas=0)
    worker["template"]["spec"]["containers"][0]["image"] = "python:3.11"
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_validate_refuses_a_job_whose_master_would_wait_for_no_worker(tmp_path: Path) -> None:
    path = master_waiting_for_no_worker(tmp_path)
    result = flexjob("validate", str(path))
    assert result.returncode == 1
    assert result.stdout.startswith(f"{path}: spec.replicaSpecs.worker.minReplicas: must be >= 1")
    assert "min_nodes" not in result.stdout + result.stderr


def test_submit_refuses_it_before_storing_the_job(tmp_path: Path) -> None:
    path = master_waiting_for_no_worker(tmp_path)
    home = tmp_path / "home"
    env = {**os.environ, names.ENV_HOME: str(home)}
    result = subprocess.run(
        [sys.executable, "-m", "flexjob", "submit", "--detach", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert result.returncode == 1
    assert f"{path}: spec.replicaSpecs.worker.minReplicas: must be >= 1" in result.stderr
    assert "min_nodes" not in result.stdout + result.stderr
    assert LocalPlatform(home).list_jobs() == []


def test_validate_prints_one_line_per_problem_and_exits_1(bad_file: Path) -> None:
    result = flexjob("validate", str(bad_file))
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert f"{bad_file}: spec.cleanPodPolicy: 'Sometimes' is not one of Running, All, None" in lines
    assert f"{bad_file}: spec.replicaSpecs.worker.replicas: -1 is below the minimum 0" in lines
    paths = {line.split(": ")[1] for line in lines}
    assert paths == {
        "spec.cleanPodPolicy",
        "spec.replicaSpecs.worker.replicas",
        "metadata.name",
        "spec.replicaSpecs.worker.template.spec.containers[0].image",
    }


def test_validate_fails_if_any_file_is_bad(bad_file: Path) -> None:
    result = flexjob("validate", str(EXAMPLES / "elasticjob.yaml"), str(bad_file))
    assert result.returncode == 1
    assert f"{EXAMPLES / 'elasticjob.yaml'}: valid" in result.stdout.splitlines()


def test_validate_reports_yaml_syntax_errors_with_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("kind: ElasticJob\nspec:\n  a: 1\n b: 2\n")
    result = flexjob("validate", str(path))
    assert result.returncode == 1
    assert result.stdout.startswith(f"{path}: line 4, column 2: YAML syntax error")


def test_validate_reports_a_missing_file(tmp_path: Path) -> None:
    result = flexjob("validate", str(tmp_path / "nope.yaml"))
    assert result.returncode == 1
    assert "cannot read" in result.stdout


@pytest.mark.parametrize("path", JOB_EXAMPLES, ids=lambda p: p.name)
def test_convert_output_validates_and_reloads_equal(path: Path, tmp_path: Path) -> None:
    result = flexjob("convert", str(path))
    assert result.returncode == 0, result.stderr
    converted = tmp_path / "converted.yaml"
    converted.write_text(result.stdout)
    assert check_documents(parse_documents(result.stdout)) == []
    assert load_job(converted) == load_job(path)


def test_convert_with_defaults_fills_them_in() -> None:
    result = flexjob("convert", "--defaults", "-o", "json", str(EXAMPLES / "dijob-v2.yaml"))
    assert result.returncode == 0, result.stderr
    spec = yaml.safe_load(result.stdout)["spec"]
    assert "optimizeMode" not in spec  # a DI job runs no flexjob master, so no optimizer
    assert spec["replicaSpecs"]["learner"]["restartPolicy"] == "OnFailure"


def test_convert_of_a_bad_file_prints_problems_and_exits_1(bad_file: Path) -> None:
    result = flexjob("convert", str(bad_file))
    assert result.returncode == 1
    assert result.stdout == ""
    assert f"{bad_file}: spec.cleanPodPolicy:" in result.stderr


def test_manifests_crds_prints_both_crds() -> None:
    result = flexjob("manifests", "crds")
    assert result.returncode == 0, result.stderr
    assert list(yaml.safe_load_all(result.stdout)) == crds()
