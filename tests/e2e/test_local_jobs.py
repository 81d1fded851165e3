"""Whole jobs on the local platform through the ``flexjob`` command, as a user runs them."""

import contextlib
import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flexjob.api import CleanPodPolicy, ReplicaType
from flexjob.platform.local import LocalPlatform
from tests.support.local_jobs import (
    fail_first_then_succeed,
    local_job,
    wait_for_file_then_exit,
)
from tests.support.local_jobs import run_flexjob as flexjob
from tests.support.local_jobs import write_spec as write
from tests.support.polling import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(60)]
SLEEP = "import time; time.sleep(60)"


def job_json(env: dict[str, str], name: str) -> dict[str, Any]:
    out = flexjob(env, "get", name, "-o", "json")
    assert out.returncode == 0, out.stderr
    return dict(json.loads(out.stdout))


def phase_of(env: dict[str, str], name: str) -> str:
    """The job's phase as ``flexjob get`` shows it; "absent" before the job is stored."""
    out = flexjob(env, "get", name, "-o", "json")
    return str(json.loads(out.stdout)["status"]["phase"]) if out.returncode == 0 else "absent"


def test_master_and_two_workers_succeed(tmp_path: Path, env: dict[str, str]) -> None:
    job = local_job("ok", master="import time; time.sleep(0.5)", worker="print('trained')")
    out = flexjob(env, "submit", write(tmp_path, job))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "job default/ok Succeeded" in out.stdout
    assert phase_of(env, "ok") == "Succeeded"


def test_worker_failing_twice_within_backoff_limit_three_succeeds(
    tmp_path: Path, env: dict[str, str]
) -> None:
    done = tmp_path / "done"
    worker = fail_first_then_succeed(tmp_path / "count", 2, done)
    job = local_job("flaky", master=wait_for_file_then_exit(done), worker=worker, workers=1)
    out = flexjob(env, "submit", write(tmp_path, job))
    assert out.returncode == 0, out.stdout + out.stderr
    status = job_json(env, "flaky")["status"]
    assert (status["phase"], status["restartCount"]) == ("Succeeded", 2)


def test_worker_failing_four_times_with_backoff_limit_three_fails(
    tmp_path: Path, env: dict[str, str]
) -> None:
    worker = fail_first_then_succeed(tmp_path / "count", 4, tmp_path / "done")
    job = local_job("broken", master=SLEEP, worker=worker, workers=1)
    out = flexjob(env, "submit", write(tmp_path, job))
    assert out.returncode == 1
    status = job_json(env, "broken")["status"]
    assert status["phase"] == "Failed"
    assert "backoffLimit 3" in status["message"]


@pytest.mark.parametrize(
    ("policy", "left"),
    [
        (CleanPodPolicy.RUNNING, {"master-0": "Succeeded"}),
        (CleanPodPolicy.ALL, {}),
        (CleanPodPolicy.NONE, {"master-0": "Succeeded", "worker-0": "Running"}),
    ],
)
def test_clean_pod_policy_decides_which_replicas_remain(
    tmp_path: Path, env: dict[str, str], home: Path, policy: CleanPodPolicy, left: dict[str, str]
) -> None:
    job = local_job("clean", master="pass", worker=SLEEP, workers=1, clean=policy)
    out = flexjob(env, "submit", write(tmp_path, job))
    assert out.returncode == 0, out.stdout + out.stderr
    replicas = LocalPlatform(home).list_replicas("default", "clean")
    assert {r.short_name: r.phase.value for r in replicas} == left


def test_scale_adds_a_worker_to_a_running_job(
    tmp_path: Path, env: dict[str, str], home: Path
) -> None:
    stop = tmp_path / "stop"
    job = local_job(
        "grow", master=wait_for_file_then_exit(stop), worker=wait_for_file_then_exit(stop)
    )
    job.spec.replica_specs[ReplicaType.WORKER].max_replicas = 3
    assert flexjob(env, "submit", "--detach", write(tmp_path, job)).returncode == 0
    wait_until(lambda: phase_of(env, "grow") == "Running", timeout=20, what="Running")
    out = flexjob(env, "scale", "grow", "--worker", "3")
    assert out.returncode == 0, out.stderr
    platform = LocalPlatform(home)
    wait_until(
        lambda: any(r.short_name == "worker-2" for r in platform.list_replicas("default", "grow")),
        timeout=20,
        what="worker-2",
    )
    stop.touch()
    wait_until(lambda: phase_of(env, "grow") == "Succeeded", timeout=20, what="Succeeded")


@contextlib.contextmanager
def foreground_submit(env: dict[str, str], spec: str) -> Iterator[subprocess.Popen[bytes]]:
    """``flexjob submit spec`` in the foreground (it owns the job), killed after if still
    running."""
    submit = subprocess.Popen(
        [sys.executable, "-m", "flexjob", "submit", spec],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield submit
    finally:
        submit.kill()
        submit.wait()


def test_get_from_another_process_shows_the_running_phase(
    tmp_path: Path, env: dict[str, str]
) -> None:
    stop = tmp_path / "stop"
    job = local_job(
        "seen", master=wait_for_file_then_exit(stop), worker=wait_for_file_then_exit(stop)
    )
    with foreground_submit(env, write(tmp_path, job)) as submit:
        wait_until(lambda: "Running" in flexjob(env, "get").stdout, timeout=20, what="Running")
        stop.touch()
        assert submit.wait(timeout=20) == 0
        assert "Succeeded" in flexjob(env, "get", "seen").stdout


def test_logs_show_a_replicas_output(tmp_path: Path, env: dict[str, str]) -> None:
    job = local_job(
        "talk", master=None, worker="import os; print('hello', os.environ['FLEXJOB_REPLICA_INDEX'])"
    )
    assert flexjob(env, "submit", write(tmp_path, job)).returncode == 0
    assert flexjob(env, "logs", "talk", "--replica", "worker-1").stdout == "hello 1\n"


def test_delete_stops_a_running_job(tmp_path: Path, env: dict[str, str], home: Path) -> None:
    job = local_job("gone", master=None, worker=SLEEP)
    assert flexjob(env, "submit", "--detach", write(tmp_path, job)).returncode == 0
    wait_until(lambda: phase_of(env, "gone") == "Running", timeout=20, what="Running")
    assert flexjob(env, "delete", "gone").returncode == 0
    assert LocalPlatform(home).list_replicas("default", "gone") == []
    assert "not found" in flexjob(env, "get", "gone").stderr


def test_describe_shows_status_and_events(tmp_path: Path, env: dict[str, str]) -> None:
    job = local_job("desc", master=None, worker="pass", workers=1)
    assert flexjob(env, "submit", write(tmp_path, job)).returncode == 0
    out = flexjob(env, "describe", "desc").stdout
    assert "phase: Succeeded" in out
    assert "SuccessfulCreate" in out


def test_invalid_spec_is_rejected_naming_the_field(tmp_path: Path, env: dict[str, str]) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(
        "apiVersion: flexjob.dev/v1alpha1\nkind: ElasticJob\nmetadata: {name: bad}\n"
        "spec:\n  cleanPodPolicy: Sometimes\n  replicaSpecs:\n    worker: {replicas: 1}\n"
    )
    out = flexjob(env, "submit", str(path))
    assert out.returncode == 1
    assert "cleanPodPolicy" in out.stderr


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_interrupted_submit_stops_the_replicas_and_fails_the_job(
    tmp_path: Path, env: dict[str, str], home: Path, sig: signal.Signals
) -> None:
    """Ctrl-C (SIGINT), SIGTERM or SIGHUP on a foreground submit stops the job it owns."""
    job = local_job("stopped", master=None, worker=SLEEP)
    with foreground_submit(env, write(tmp_path, job)) as submit:
        wait_until(lambda: phase_of(env, "stopped") == "Running", timeout=20, what="Running")
        submit.send_signal(sig)
        assert submit.wait(timeout=20) == 1
    assert phase_of(env, "stopped") == "Failed"
    replicas = LocalPlatform(home).list_replicas("default", "stopped")
    assert replicas and all(not r.active for r in replicas)
