"""Building small local ElasticJobs whose replicas are plain Python one-liners."""

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from flexjob.api import (
    CleanPodPolicy,
    Container,
    ElasticJob,
    ElasticJobSpec,
    ObjectMeta,
    PodSpec,
    PodTemplateSpec,
    ReplicaSpec,
    ReplicaType,
)
from flexjob.api.load import dump_yaml
from flexjob.platform.local import LocalPlatform
from tests.support.polling import wait_until


def python_template(code: str) -> PodTemplateSpec:
    container = Container(
        name="main", image="ignored-locally", command=[sys.executable, "-c", code]
    )
    return PodTemplateSpec(spec=PodSpec(containers=[container]))


def wait_for_file_then_exit(path: Path, timeout: float = 25) -> str:
    """Code that exits 0 once ``path`` exists, 1 after ``timeout`` seconds."""
    return (
        "import pathlib, sys, time\n"
        f"p = pathlib.Path({str(path)!r}); end = time.time() + {timeout}\n"
        "while not p.exists() and time.time() < end: time.sleep(0.05)\n"
        "sys.exit(0 if p.exists() else 1)\n"
    )


def fail_first_then_succeed(counter: Path, failures: int, done: Path) -> str:
    """Code that fails the first ``failures`` runs (counted in ``counter``), then touches
    ``done`` and exits 0."""
    return (
        "import pathlib, sys\n"
        f"c = pathlib.Path({str(counter)!r})\n"
        "n = int(c.read_text()) + 1 if c.exists() else 1\n"
        "c.write_text(str(n))\n"
        f"if n <= {failures}: print('failing run', n); sys.exit(1)\n"
        f"pathlib.Path({str(done)!r}).touch(); print('succeeded on run', n)\n"
    )


def local_job(
    name: str,
    master: str | None,
    worker: str,
    workers: int = 2,
    backoff: int = 3,
    clean: CleanPodPolicy | None = None,
    namespace: str = "default",
) -> ElasticJob:
    specs: dict[ReplicaType, ReplicaSpec] = {}
    if master is not None:
        specs[ReplicaType.MASTER] = ReplicaSpec(replicas=1, template=python_template(master))
    specs[ReplicaType.WORKER] = ReplicaSpec(replicas=workers, template=python_template(worker))
    return ElasticJob(
        metadata=ObjectMeta(name=name, namespace=namespace),
        spec=ElasticJobSpec(replica_specs=specs, backoff_limit=backoff, clean_pod_policy=clean),
    )


def write_spec(directory: Path, job: ElasticJob) -> str:
    """Write ``job`` as ``<directory>/<name>.yaml`` (what a user submits); its path."""
    path = directory / f"{job.name}.yaml"
    path.write_text(yaml.safe_dump(job.to_wire()))
    return str(path)


def user_env(home: Path, repo: Path) -> dict[str, str]:
    """A user's shell for ``flexjob submit`` of a spec whose pods run ``python`` on files of
    ``repo``: ``FLEXJOB_HOME`` is ``home``, ``python`` is this interpreter, ``repo`` is
    importable."""
    pythonpath = os.pathsep.join(p for p in (str(repo), os.environ.get("PYTHONPATH")) if p)
    return {
        **os.environ,
        "FLEXJOB_HOME": str(home),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": pythonpath,
    }


def run_flexjob(
    env: dict[str, str], *args: str, timeout: float = 30, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m flexjob ARGS`` as a user's shell runs it; output captured as text."""
    return subprocess.run(
        [sys.executable, "-m", "flexjob", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def submit_detached(env: dict[str, str], directory: Path, job: ElasticJob) -> Path:
    """Write ``job`` as ``<directory>/job.yaml`` (what a user writes) and ``flexjob submit
    --detach`` it in the shell ``env``; the spec's path."""
    spec = directory / "job.yaml"
    spec.write_text(dump_yaml(job.to_wire()))
    _submitted(env, "--detach", str(spec))
    return spec


def submit_to_end(
    env: dict[str, str], directory: Path, wire: dict[str, Any], cwd: Path | None = None
) -> None:
    """Write the manifest ``wire`` as ``<directory>/job.yaml`` and ``flexjob submit`` it in the
    foreground, to the job's end; the submit's exit code must be 0."""
    spec = directory / "job.yaml"
    spec.write_text(yaml.safe_dump(wire))
    _submitted(env, str(spec), timeout=80, cwd=cwd)


def _submitted(
    env: dict[str, str], *args: str, timeout: float = 30, cwd: Path | None = None
) -> None:
    """``flexjob submit ARGS``, which must exit 0."""
    out = run_flexjob(env, "submit", *args, timeout=timeout, cwd=cwd)
    assert out.returncode == 0, out.stdout + out.stderr


def replica_logs(env: dict[str, str], job: str, replica: str, cwd: Path | None = None) -> str:
    """What ``flexjob logs JOB --replica REPLICA`` prints."""
    return run_flexjob(env, "logs", job, "--replica", replica, cwd=cwd).stdout


def finished_job(platform: LocalPlatform, name: str, timeout: float = 60) -> ElasticJob:
    """The job ``name`` (namespace ``default``) once it has finished, polled for up to
    ``timeout`` seconds."""

    def finished() -> ElasticJob | None:
        job = platform.get_job("default", name)
        return job if job.status is not None and job.status.phase.finished else None

    return wait_until(finished, timeout, 0.2, f"job {name} to finish")


def job_status(env: dict[str, str], name: str) -> dict[str, object]:
    """The job's ``status`` as ``flexjob get NAME -o json`` prints it; empty while it cannot."""
    out = run_flexjob(env, "get", name, "-o", "json")
    return dict(json.loads(out.stdout)["status"]) if out.returncode == 0 else {}


@pytest.fixture(name="platform")
def local_platform(tmp_path: Path) -> Iterator[LocalPlatform]:
    """The fixture ``platform``: an empty local platform with its home in ``tmp_path/home``,
    closed after the test (a test module takes it by importing ``local_platform``)."""
    with contextlib.closing(LocalPlatform(tmp_path / "home")) as local:
        yield local
