"""The job commands take kubectl's habits (issue 37, item 10): ``-o json`` on a list is a
``List``, ``-o name``, ``-o jsonpath=...``, ``-o wide``, ``get -w``, ``delete a b``,
``apply -f``, and usage errors exit 1."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from flexjob.api import ElasticJob
from flexjob.api.load import job_from_dict
from flexjob.cli.get_output import jsonpath
from flexjob.cli.main import app
from flexjob.platform.local import LocalPlatform

pytestmark = pytest.mark.timeout(120)


def _job(name: str, workers: int = 1) -> ElasticJob:
    template = {"spec": {"containers": [{"name": "main", "image": "local", "command": ["true"]}]}}
    return job_from_dict(
        {
            "apiVersion": "flexjob.dev/v1alpha1",
            "kind": "ElasticJob",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicaSpecs": {"worker": {"replicas": workers, "template": template}}},
        }
    )


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("FLEXJOB_HOME", str(tmp_path))
    platform = LocalPlatform(tmp_path)
    for name in ("a", "b"):
        platform.create_job(_job(name))  # stored only: no operator runs them
    return tmp_path


def flexjob(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def test_json_of_a_list_is_a_list_object(home: Path) -> None:
    body = json.loads(flexjob("get", "-o", "json").output)
    assert body["kind"] == "List" and body["apiVersion"] == "v1"
    assert [item["metadata"]["name"] for item in body["items"]] == ["a", "b"]


def test_json_of_one_job_is_the_job(home: Path) -> None:
    body = json.loads(flexjob("get", "a", "-o", "json").output)
    assert body["kind"] == "ElasticJob" and body["metadata"]["name"] == "a"


def test_output_name_prints_resource_slash_name(home: Path) -> None:
    assert flexjob("get", "-o", "name").output == (
        "elasticjob.flexjob.dev/a\nelasticjob.flexjob.dev/b\n"
    )


def test_output_jsonpath_reads_fields(home: Path) -> None:
    names = flexjob("get", "-o", "jsonpath={.items[*].metadata.name}")
    assert names.exit_code == 0 and names.output == "a b"
    replicas = flexjob("get", "a", "-o", "jsonpath={.spec.replicaSpecs.worker.replicas}")
    assert replicas.output == "1"


def test_jsonpath_ranges_and_literals() -> None:
    body = {"items": [{"metadata": {"name": "a"}}, {"metadata": {"name": "b"}}]}
    template = '{range .items[*]}{.metadata.name}{"\\n"}{end}'
    assert jsonpath(template, body) == "a\nb\n"
    assert jsonpath("{.items[1].metadata}", body) == '{"name": "b"}'
    assert jsonpath("{.items[5].metadata.name}", body) == ""


def test_output_wide_adds_each_types_replicas(home: Path) -> None:
    done = flexjob("get", "-o", "wide")
    assert done.exit_code == 0
    assert "TYPES" in done.output and "worker:0/1" in done.output


def test_an_unknown_output_is_refused_naming_the_allowed_ones_with_exit_1(home: Path) -> None:
    done = flexjob("get", "-o", "xml")
    assert done.exit_code == 1
    assert "table, wide, name, yaml, json, jsonpath=TEMPLATE" in done.output


def test_usage_errors_exit_1_as_kubectl(home: Path) -> None:
    assert flexjob("get", "--no-such-flag").exit_code == 1
    assert flexjob("logs").exit_code == 1  # the job is missing
    assert flexjob("delete").exit_code == 1


def test_torchrun_commands_keep_exit_2_for_usage_errors(home: Path) -> None:
    assert flexjob("run", "--no-such-flag", "x.py").exit_code == 2


def test_delete_takes_several_jobs(home: Path) -> None:
    done = flexjob("delete", "a", "b")
    assert done.exit_code == 0
    assert "job default/a deleted" in done.output and "job default/b deleted" in done.output
    assert LocalPlatform(home).list_jobs("default") == []


def test_delete_names_a_missing_job_and_still_deletes_the_others(home: Path) -> None:
    done = flexjob("delete", "nope", "a")
    assert done.exit_code == 1
    assert "job default/nope not found" in done.output
    assert [j.name for j in LocalPlatform(home).list_jobs("default")] == ["b"]


def test_logs_has_no_short_r_it_is_torchruns_redirects(home: Path) -> None:
    assert flexjob("logs", "a", "-r", "worker-0").exit_code == 1


def test_get_watch_prints_a_job_again_when_it_changes(home: Path) -> None:
    env = {**os.environ, "FLEXJOB_HOME": str(home)}
    cmd = [sys.executable, "-m", "flexjob", "get", "a", "-w"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        header = proc.stdout.readline()
        assert "PHASE" in header
        first = proc.stdout.readline()
        assert first.split()[:3] == ["default", "a", "Pending"], first
        platform = LocalPlatform(home)
        deadline = time.monotonic() + 30
        platform.patch_job_status("default", "a", {"phase": "Running"})
        line = proc.stdout.readline()
        assert time.monotonic() < deadline
        assert line.split()[:3] == ["default", "a", "Running"], line
    finally:
        proc.terminate()
        proc.wait(10)
