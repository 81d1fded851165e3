"""Killing the local operator (SIGKILL) mid-job and restarting it with ``flexjob operator``.

While no operator runs, ``flexjob get`` says so; the restarted operator adopts the replica that
still runs, does not run the one that finished meanwhile again, and the job ends Succeeded with
every worker having run its script exactly once.
"""

import contextlib
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import psutil

from flexjob.api import JobPhase, ReplicaPhase
from flexjob.api.load import dump_yaml
from flexjob.platform.local import LocalPlatform
from tests.support.local_jobs import local_job, run_flexjob
from tests.support.polling import wait_until


def _worker(runs: Path, gates: Path) -> str:
    """Appends its replica index to ``runs`` (once per run), then exits 0 once
    ``gates/go-<index>`` exists."""
    return (
        "import os, pathlib, time\n"
        "i = os.environ['FLEXJOB_REPLICA_INDEX']\n"
        f"with open({str(runs)!r}, 'a') as f: f.write(i + '\\n')\n"
        f"gate = pathlib.Path({str(gates)!r}) / ('go-' + i); end = time.time() + 120\n"
        "while not gate.exists() and time.time() < end: time.sleep(0.05)\n"
    )


def _phase(home: Path, name: str) -> JobPhase | None:
    status = LocalPlatform(home).get_job("default", name).status
    return None if status is None else status.phase


def _phases(home: Path, name: str) -> dict[str, ReplicaPhase]:
    return {r.short_name: r.phase for r in LocalPlatform(home).list_replicas("default", name)}


def test_operator_killed_and_restarted_adopts_replicas_and_reruns_none(
    home: Path, tmp_path: Path
) -> None:
    runs, gates = tmp_path / "runs.txt", tmp_path / "gates"
    gates.mkdir()
    spec = tmp_path / "job.yaml"
    spec.write_text(dump_yaml(local_job("restart", None, _worker(runs, gates)).to_wire()))
    env = {**os.environ, "FLEXJOB_HOME": str(home)}

    submitted = run_flexjob(env, "submit", "--detach", str(spec))
    assert submitted.returncode == 0, submitted.stderr
    first = int(re.findall(r"local operator pid (\d+)", submitted.stdout)[0])
    wait_until(lambda: runs.exists() and len(runs.read_text().split()) == 2, 60, 0.1, "2 runs")
    wait_until(lambda: _phase(home, "restart") is JobPhase.RUNNING, 30, 0.1, "phase Running")

    os.kill(first, signal.SIGKILL)
    wait_until(lambda: not psutil.pid_exists(first), 10, what="the operator to die")
    shown = run_flexjob(env, "get", "restart")
    assert "Running (operator not running)" in " ".join(shown.stdout.split()), shown.stdout

    (gates / "go-0").touch()  # worker-0 finishes while no operator runs
    wait_until(
        lambda: (
            _phases(home, "restart")
            == {"worker-0": ReplicaPhase.SUCCEEDED, "worker-1": ReplicaPhase.RUNNING}
        ),
        30,
        0.1,
        "worker-0 to finish",
    )

    log = tmp_path / "operator.log"
    with log.open("wb") as out:
        second = subprocess.Popen(
            [sys.executable, "-m", "flexjob", "operator", "--platform", "local", "restart"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_until(lambda: "adopted replica" in log.read_text(), 30, 0.1, "adoption")
        third = run_flexjob(env, "operator", "--platform", "local", "restart")
        assert third.returncode == 1
        assert f"already has a running operator (pid {second.pid})" in third.stderr
        assert "operator not running" not in run_flexjob(env, "get", "restart").stdout

        (gates / "go-1").touch()
        assert second.wait(60) == 0, log.read_text()
    finally:
        if second.poll() is None:
            second.kill()
            second.wait()

    assert _phase(home, "restart") is JobPhase.SUCCEEDED
    assert "default/restart-worker-1" in log.read_text()
    assert sorted(runs.read_text().split()) == ["0", "1"]  # no worker ran its script twice


def test_the_restarted_operator_exits_1_when_the_job_failed(home: Path, tmp_path: Path) -> None:
    """``flexjob operator --platform local NAME`` exits like ``flexjob submit``: 0 only for a
    job that Succeeded (a script waiting on it must not take a Failed job for done)."""
    job = local_job("fails", None, "raise SystemExit(3)", workers=1, backoff=0)
    spec = tmp_path / "job.yaml"
    spec.write_text(dump_yaml(job.to_wire()))
    env = {**os.environ, "FLEXJOB_HOME": str(home)}
    submitted = run_flexjob(env, "submit", "--detach", str(spec))
    assert submitted.returncode == 0, submitted.stderr
    first = int(re.findall(r"local operator pid (\d+)", submitted.stdout)[0])
    with contextlib.suppress(ProcessLookupError):
        os.kill(first, signal.SIGKILL)
    wait_until(lambda: not psutil.pid_exists(first), 10, what="the operator to die")
    second = run_flexjob(env, "operator", "--platform", "local", "fails", timeout=90)
    assert second.returncode == 1, second.stdout + second.stderr
    assert _phase(home, "fails") is JobPhase.FAILED
