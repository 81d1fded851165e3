"""``flexjob submit`` and friends as a new user meets them (issue 13): flexjob's own Python for
``python`` commands, fail-fast with a root cause in ``describe``, scale bounds, clean deletes,
(Ctrl-C on a foreground submit: ``test_local_jobs``)."""

import json
import os
import sys
from pathlib import Path

import pytest

from flexjob.api import ElasticJob, ReplicaType
from flexjob.platform.local import LocalPlatform
from tests.support.local_jobs import local_job
from tests.support.local_jobs import run_flexjob as flexjob
from tests.support.local_jobs import write_spec as write

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(90)]


def with_command(job: ElasticJob, *argv: str) -> ElasticJob:
    template = job.spec.replica_specs[ReplicaType.WORKER].template
    assert template is not None
    template.spec.containers[0].command = list(argv)
    return job


def test_a_bare_python_in_a_spec_is_flexjobs_own_interpreter(
    tmp_path: Path, env: dict[str, str]
) -> None:
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    fake = fake_bin / "python"
    fake.write_text("#!/bin/sh\necho the system python\nexit 1\n")
    fake.chmod(0o755)
    job = local_job("which", master=None, worker="", workers=1)
    with_command(job, "python", "-c", "import sys, flexjob; print(sys.executable)")
    env = {**env, "PATH": f"{fake_bin}{os.pathsep}{env['PATH']}"}
    out = flexjob(env, "submit", write(tmp_path, job))
    assert out.returncode == 0, out.stdout + out.stderr
    assert flexjob(env, "logs", "which").stdout.strip() == sys.executable


def test_a_job_run_from_the_wrong_directory_fails_at_once_saying_why(
    tmp_path: Path, env: dict[str, str]
) -> None:
    job = local_job("lost", master=None, worker="", workers=1, backoff=5)
    with_command(job, "python", "-m", "flexjob", "agent", "--master", "127.0.0.1:1", "train.py")
    out = flexjob(env, "submit", write(tmp_path, job), cwd=tmp_path)
    assert out.returncode == 1, out.stdout + out.stderr
    status = json.loads(flexjob(env, "get", "lost", "-o", "json").stdout)["status"]
    assert status["phase"] == "Failed" and status.get("restartCount", 0) == 0, status
    assert "script not found: train.py" in status["message"]
    described = flexjob(env, "describe", "lost").stdout
    assert f"script not found: train.py (looked in {tmp_path})" in described
    assert "exit code 127" in described
    assert described.count("ReplicaFailed") == 1, described


def test_scale_is_refused_beyond_max_replicas_and_after_the_job_finished(
    tmp_path: Path, env: dict[str, str], home: Path
) -> None:
    job = local_job("bounded", master=None, worker="pass", workers=1)
    job.spec.replica_specs[ReplicaType.WORKER].max_replicas = 3
    LocalPlatform(home).create_job(job)
    over = flexjob(env, "scale", "bounded", "--worker", "10")
    assert over.returncode == 1 and "above maxReplicas 3" in over.stderr
    assert LocalPlatform(home).list_scale_plans("default", "bounded") == []
    LocalPlatform(home).delete_job("default", "bounded")
    assert flexjob(env, "submit", write(tmp_path, job)).returncode == 0
    done = flexjob(env, "scale", "bounded", "--worker", "2")
    assert done.returncode == 1 and "has finished (Succeeded)" in done.stderr


def test_delete_removes_the_logs_so_a_resubmitted_name_starts_clean(
    tmp_path: Path, env: dict[str, str]
) -> None:
    first = local_job("again", master=None, worker="print('first run')", workers=1)
    assert flexjob(env, "submit", write(tmp_path, first)).returncode == 0
    assert flexjob(env, "delete", "again").returncode == 0
    second = local_job("again", master=None, worker="print('second run')", workers=1)
    assert flexjob(env, "submit", write(tmp_path, second)).returncode == 0
    assert flexjob(env, "logs", "again").stdout == "second run\n"
