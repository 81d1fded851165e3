"""One way to run a training script the way its user would — ``flexjob run --nnodes 2``,
``flexjob submit`` of an ElasticJob on the local platform, or an ElasticJob on the emulated
Kubernetes path — and collect what every rank printed. Shared by the framework tests
(``test_frameworks.py``, ``test_torchrun_contract.py``)."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.jobs import Job, running, start_run
from tests.support.local_jobs import run_flexjob

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = Path(__file__).parent / "frameworks"
#: What a framework must not do in a test: reach a hub for weights or data.
OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def script(name: str) -> str:
    """The path of a script in ``tests/e2e/frameworks``, relative to the repository (as a
    spec's ``args`` name it)."""
    return str((SCRIPTS / name).relative_to(REPO))


@dataclass(frozen=True)
class Outcome:
    code: int
    output: str  # every rank's output (and flexjob's), as the user would read it

    def lines(self, prefix: str) -> list[str]:
        """The lines that start with ``prefix`` (what the scripts print per rank)."""
        return sorted(
            line.split(prefix, 1)[1].strip() for line in self.output.splitlines() if prefix in line
        )


def run(
    tmp: Path, name: str, *args: str, flags: tuple[str, ...] = ("--nnodes", "2"),
    timeout: float = 150,
) -> Outcome:  # fmt: skip
    """``flexjob run FLAGS SCRIPT ARGS`` to its end (the test's environment: ``offline``)."""
    with running(tmp, *flags, script=str(SCRIPTS / name), script_args=args) as job:
        code = job.wait(timeout)
        return Outcome(code, job.output())


def start(tmp: Path, name: str, *args: str, flags: tuple[str, ...] = ("--nnodes", "2")) -> Job:
    """``flexjob run`` started (a test kills something meanwhile; ``Job.stop`` ends it)."""
    return start_run(tmp, *flags, script=str(SCRIPTS / name), script_args=args)


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """The test's own environment (which ``flexjob run`` hands on) never reaches a hub."""
    for key, value in OFFLINE.items():
        monkeypatch.setenv(key, value)


def elastic_job(
    job_name: str, name: str, *args: str, workers: int = 2, max_restarts: int | None = None
) -> dict[str, Any]:
    """An ElasticJob whose ``workers`` run ``flexjob agent SCRIPT ARGS`` with flexjob's
    rendezvous (the operator adds the master), as ``examples/specs/digits-elastic.yaml``."""
    policy: dict[str, Any] = {"rdzvBackend": "flexjob", "nProcPerNode": 1}
    if max_restarts is not None:
        policy["maxRestarts"] = max_restarts
    container = {
        "name": "main",
        "image": "flexjob:latest",
        "command": ["python", "-m", "flexjob", "agent"],
        "args": [script(name), *args],
        "env": [{"name": k, "value": v} for k, v in OFFLINE.items()],
    }
    return {
        "apiVersion": "flexjob.dev/v1alpha1",
        "kind": "ElasticJob",
        "metadata": {"name": job_name, "namespace": "default"},
        "spec": {
            "distributionStrategy": "AllreduceStrategy",
            "backoffLimit": 2,
            "elasticPolicy": policy,
            "replicaSpecs": {
                "worker": {
                    "replicas": workers,
                    "restartPolicy": "OnFailure",
                    "template": {"spec": {"containers": [container]}},
                }
            },
        },
    }


def user_env(home: Path) -> dict[str, str]:
    """A user's shell for ``flexjob submit``: its own home, ``python`` is this interpreter,
    the repository importable."""
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    pythonpath = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
    return {
        **os.environ, **OFFLINE, "FLEXJOB_HOME": str(home), "PATH": path,
        "PYTHONPATH": pythonpath, "COLUMNS": "200",
    }  # fmt: skip


def submit(tmp: Path, home: Path, body: dict[str, Any], timeout: float = 150) -> Outcome:
    """``flexjob submit SPEC`` in the foreground to the job's end; the output is the
    submit's and every worker's ``flexjob logs``."""
    env = user_env(home)
    spec = tmp / f"{body['metadata']['name']}.yaml"
    spec.write_text(yaml.safe_dump(body))
    out = run_flexjob(env, "submit", str(spec), timeout=timeout, cwd=REPO)
    text = out.stdout + out.stderr
    name = body["metadata"]["name"]
    workers = body["spec"]["replicaSpecs"]["worker"]["replicas"]
    for index in range(workers):
        logs = run_flexjob(env, "logs", name, "--replica", f"worker-{index}", cwd=REPO)
        text += f"\n--- worker-{index}\n{logs.stdout}{logs.stderr}"
    return Outcome(out.returncode, text)
