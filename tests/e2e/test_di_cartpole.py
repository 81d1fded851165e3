"""examples/di_cartpole as a DIJob v1 on the local platform, submitted with ``flexjob submit``
next to a real ``flexjob server``: the coordinator starts alone and asks the server for a
learner and collectors; DI-engine 0.5.3's own client (from its wheel) lists the job and adds a
collector as ``ding -m dist --add`` does; a collector killed with SIGKILL is recreated without
failing the job; the job is Succeeded when the coordinator reaches the target and exits 0.

Short form: target average return 60 (about 30 s). ``FLEXJOB_DI_E2E_LONG=1``: the documented
target 195 (about 60 s on a quiet machine, more under load).
"""

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psutil
import pytest
import yaml

from flexjob.api import JobPhase, ReplicaPhase
from flexjob.platform.local import LocalPlatform
from tests.support.ding_client import operator_server_class
from tests.support.polling import wait_until
from tests.support.server_process import flexjob_server

pytestmark = pytest.mark.e2e
pytest.importorskip("gymnasium", reason="examples/di_cartpole runs gymnasium: [examples] extra")

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "di_cartpole"
LONG = os.environ.get("FLEXJOB_DI_E2E_LONG") == "1"
TARGET = 195 if LONG else 60
JOB = "di-cartpole"
REACHED = re.compile(r"reached average return ([\d.]+) over 100 episodes in ([\d.]+) s")


def spec(tmp_path: Path, name: str, target: float = TARGET) -> Path:
    """The example's spec with the test's target and a deadline."""
    raw = yaml.safe_load((EXAMPLE / name).read_text())
    coordinator = raw["spec"]["coordinator"]["template"]["spec"]["containers"][0]
    given = coordinator["command"][2:]
    extra_args = given[given.index("--learner-gpus") :] if "--learner-gpus" in given else []
    args = ["--target", str(target), "--max-seconds", "240", *extra_args]
    coordinator["command"] = ["python", "examples/di_cartpole/coordinator.py", *args]
    path = tmp_path / name
    path.write_text(yaml.safe_dump(raw))
    return path


@contextmanager
def submitted(home: Path, url: str, path: Path) -> Iterator[subprocess.Popen[str]]:
    env = {**os.environ, "FLEXJOB_HOME": str(home), "FLEXJOB_SERVER_URL": url, "COLUMNS": "200"}
    command = [sys.executable, "-m", "flexjob", "submit", str(path)]
    proc = subprocess.Popen(command, env=env, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=30)


def pod_process(name: str, server: str) -> psutil.Process | None:
    """The Python process of the replica ``name`` of the job that asks ``server`` (not the
    shell that records its exit, nor a process another test left)."""
    for proc in psutil.process_iter(["cmdline", "name"]):
        try:
            command = proc.info["cmdline"] or []
            if not str(proc.info["name"]).startswith("python"):
                continue
            env = proc.environ() if "examples/di_cartpole" in " ".join(command) else {}
            if (
                env.get("KUBERNETES_POD_NAME") == name
                and env.get("KUBERNETES_SERVER_URL") == server
            ):
                return proc
        except psutil.Error:
            continue
    return None


def replicas(platform: LocalPlatform) -> dict[str, Any]:
    return {r.name: r for r in platform.list_replicas("default", JOB)}


def replica_log(home: Path, replica: str, job: str = JOB) -> str:
    return (home / "jobs" / "default" / job / "logs" / f"{replica}.log").read_text()


def test_di_cartpole_reaches_its_target_scaled_by_its_coordinator(
    tmp_path: Path, home: Path
) -> None:
    platform = LocalPlatform(home)
    with flexjob_server(home) as url, submitted(home, url, spec(tmp_path, "dijob.yaml")) as job:
        first = wait_until(lambda: replicas(platform), timeout=60, what="a first replica")
        assert list(first) == [f"{JOB}-coordinator-0"]  # the coordinator first, alone

        # a collector killed early (the job is young) comes back under its name
        collector = f"{JOB}-collector-0"
        victim = wait_until(
            lambda: pod_process(collector, url), timeout=60, what="collector-0 running"
        )
        uid = wait_until(lambda: (r := replicas(platform).get(collector)) and r.uid, timeout=30)
        victim.send_signal(signal.SIGKILL)

        def recreated() -> bool:
            now = replicas(platform).get(collector)
            return now is not None and now.uid != uid and now.phase is ReplicaPhase.RUNNING

        wait_until(recreated, timeout=60, what="collector-0 recreated")
        status = platform.get_job("default", JOB).status
        assert status is not None and status.phase is JobPhase.RUNNING
        assert status.restart_count == 0

        with operator_server_class(tmp_path / "ding") as OperatorServer:
            server = urlsplit(url)
            client = OperatorServer(
                server.hostname, server.port, api_version="v1alpha2", namespace="default",
                name=f"{JOB}-coordinator-0",
            )  # fmt: skip
            client.set_worker_type("coordinator")

            def listed() -> dict[str, Any] | None:
                ok, _, _, data = client.get_replicas()
                return data if ok and len(data["learners"]) == 1 and data["collectors"] else None

            data = wait_until(listed, timeout=60, what="DI's client listing learner and collector")
            before = len(data["collectors"])
            ok, _, message, added = client.post_replicas({"collectors": {"replicas": 1}})
            assert ok, message
            assert len(added["collectors"]) == 1, added  # the name of the one it added

        job.wait(timeout=300)
        assert job.returncode == 0, job.stdout.read() if job.stdout else ""
    final = platform.get_job("default", JOB).status
    assert final is not None and final.phase is JobPhase.SUCCEEDED
    log = replica_log(home, "coordinator-0")
    reached = REACHED.search(log)
    assert reached, log[-2000:]
    assert float(reached.group(1)) >= TARGET
    trace = re.search(r"collectors over time: (.*)", log)
    assert trace, log[-2000:]
    counts = [int(step.split(":")[1]) for step in trace.group(1).split()]
    assert counts[0] == 1 and before >= 1
    print(f"di_cartpole: {reached.group(0)}; collectors over time: {trace.group(1)}")


def test_di_cartpole_with_a_logic_learner_behind_the_clusters_aggregator(
    tmp_path: Path, home: Path
) -> None:
    """Two learner processes (the learner's ``nvidia.com/gpu: 2``) behind an aggregator built
    from the AggregatorConfig applied with ``flexjob apply``; the aggregator finds them through
    the server (``GET ?aggregator=``). Short form: target 40; long: 195."""
    env = {**os.environ, "FLEXJOB_HOME": str(home)}
    config = str(EXAMPLE / "aggregator-config.yaml")
    applied = subprocess.run(
        [sys.executable, "-m", "flexjob", "apply", config], env=env, capture_output=True, text=True
    )
    assert applied.returncode == 0, applied.stderr
    job_name = "di-cartpole-logic"
    target = 195 if LONG else 40
    platform = LocalPlatform(home)
    path = spec(tmp_path, "dijob-logic-learner.yaml", target)
    with flexjob_server(home) as url, submitted(home, url, path) as job:
        job.wait(timeout=300)
        assert job.returncode == 0, job.stdout.read() if job.stdout else ""
    final = platform.get_job("default", job_name).status
    assert final is not None and final.phase is JobPhase.SUCCEEDED
    learner = replica_log(home, "learner-0", job_name)
    assert len(re.findall(r"learner-0: serving on \d+", learner)) == 2, learner  # 2 processes
    assert "aggregator-0: serving on" in replica_log(home, "aggregator-0", job_name)
    log = replica_log(home, "coordinator-0", job_name)
    assert "learner_processes=2" in log, log[-2000:]
    reached = REACHED.search(log)
    assert reached and float(reached.group(1)) >= target, log[-2000:]
    print(f"di_cartpole logic learner: {reached.group(0)}")
