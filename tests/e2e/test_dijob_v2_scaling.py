"""A preemptible DIJob v2 on the local platform, submitted with ``flexjob submit --detach`` as
written: a real ``flexjob server`` adds a collector through ``/v2alpha1``, then one round of
``flexjob allocator`` (``goodput``) places every task — learner and collectors — on the
declared nodes and grows the collectors to what fits; the operator runs each replica on its
node, and the job still Succeeds when its replicas exit 0."""

import json
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from flexjob.api import JobPhase, ReplicaType
from flexjob.platform.local import LocalPlatform
from tests.support.local_jobs import run_flexjob as flexjob
from tests.support.polling import wait_until
from tests.support.server_process import flexjob_server

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]
JOB = "gobigger"

# A task's process: marks itself started, then exits 0 once the stop file exists.
TASK = """
import os, pathlib, sys, time
out, stop = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
(out / (os.environ["FLEXJOB_REPLICA_TYPE"] + "-" + os.environ["FLEXJOB_REPLICA_INDEX"])).touch()
end = time.time() + 90
while not stop.exists() and time.time() < end:
    time.sleep(0.1)
sys.exit(0 if stop.exists() else 1)
"""


def spec(tmp_path: Path, out: Path, stop: Path) -> Path:
    def task(kind: str, replicas: int) -> dict[str, Any]:
        container = {
            "name": "di-container",
            "image": "opendilab/ding:nightly",
            "command": [sys.executable, "-c", TASK, str(out), str(stop)],
            "resources": {"requests": {"cpu": 1}},
        }
        return {
            "replicas": replicas,
            "type": kind,
            "template": {"spec": {"containers": [container]}},
        }

    raw = {
        "apiVersion": "diengine.opendilab.org/v2alpha1",
        "kind": "DIJob",
        "metadata": {"name": JOB, "namespace": "default"},
        "spec": {"preemptible": True, "tasks": [task("learner", 1), task("collector", 2)]},
    }
    path = tmp_path / "dijob-v2.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def started(out: Path, *names: str) -> bool:
    return all((out / name).exists() for name in names)


def test_a_preemptible_dijob_v2_is_scaled_by_the_server_and_the_allocator(
    tmp_path: Path, home: Path, env: dict[str, str]
) -> None:
    out, stop = tmp_path / "out", tmp_path / "stop"
    out.mkdir()
    platform = LocalPlatform(home)
    with flexjob_server(home) as url:
        submitted = flexjob(env, "submit", "--detach", str(spec(tmp_path, out, stop)))
        assert submitted.returncode == 0, submitted.stderr
        wait_until(lambda: started(out, "learner-0", "collector-0", "collector-1"), timeout=60)

        resp = httpx.post(
            f"{url}/v2alpha1/default.{JOB}.1/replicas", json={"replicas": 1, "type": "collector"}
        )
        assert resp.status_code == 200, resp.text
        assert resp.json()["data"]["replicas"] == 3
        wait_until(lambda: started(out, "collector-2"), timeout=60, what="collector-2")

        placed = flexjob(
            env, "allocator", "--policy", "goodput", "--once",
            "--node", "n0:cpu=3", "--node", "n1:cpu=3",
        )  # fmt: skip
        assert placed.returncode == 0, placed.stderr
        lines = dict(line.split(": ", 1) for line in placed.stdout.strip().splitlines())
        assert set(lines) == {f"default/{JOB}/learner", f"default/{JOB}/collector"}, lines
        status = platform.get_job("default", JOB).status
        assert status is not None
        allocation = {t: list(n) for t, n in status.allocation.items()}
        assert len(allocation[ReplicaType.LEARNER]) == 1
        collectors = len(allocation[ReplicaType.COLLECTOR])
        assert collectors == 5  # 6 cores: the learner's one, and five collectors
        assert status.replicas[ReplicaType.COLLECTOR] == collectors
        names = [f"collector-{i}" for i in range(collectors)]
        wait_until(lambda: started(out, *names), timeout=60, what=f"{collectors} collectors")

        def on_their_nodes() -> bool:
            replicas = [r for r in platform.list_replicas("default", JOB) if not r.deleting]
            wanted = {(r.type, r.index): r.node for r in replicas}
            return all(
                wanted.get((t, i)) == node
                for t, nodes in allocation.items()
                for i, node in enumerate(nodes)
            )

        wait_until(on_their_nodes, timeout=60, what="every replica on its allocated node")
        stop.touch()
        wait_until(
            lambda: platform.get_job("default", JOB).status.phase is JobPhase.SUCCEEDED,  # type: ignore[union-attr]
            timeout=60,
            what="the job Succeeded",
        )
    print(json.dumps({str(t): n for t, n in allocation.items()}))
