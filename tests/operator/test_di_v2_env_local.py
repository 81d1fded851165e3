"""A DIJob v2 on the local platform under the local operator loop (real processes): every
replica gets DI Orchestrator v2's variables, and each one's ``DI_NODES[DI_RANK]`` is the host
its own Service gives it (what DI-engine's ``ditask`` k8s parser takes as its own address)."""

import json
import sys
from pathlib import Path
from typing import Any

from flexjob.api import JobPhase
from flexjob.api.load import job_from_dict
from flexjob.operator.local.loop import LocalJobLoop
from flexjob.platform.local import LocalPlatform
from tests.support.local_jobs import local_platform  # noqa: F401 (the fixture)
from tests.support.polling import wait_until

# Writes its environment to <out>/<type>-<index>.json, then exits 0.
DUMP = """
import json, os, pathlib, sys
out = pathlib.Path(sys.argv[1])
name = os.environ["FLEXJOB_REPLICA_TYPE"] + "-" + os.environ["FLEXJOB_REPLICA_INDEX"]
(out / (name + ".part")).write_text(json.dumps(dict(os.environ)))
(out / (name + ".part")).rename(out / (name + ".json"))
"""


def _dijob(out: Path) -> dict[str, Any]:
    def task(kind: str, name: str, replicas: int) -> dict[str, Any]:
        container = {
            "name": "di-container",
            "image": "opendilab/ding:nightly",
            "command": [sys.executable, "-c", DUMP, str(out)],
        }
        return {
            "replicas": replicas,
            "type": kind,
            "name": name,
            "template": {"spec": {"containers": [container]}},
        }

    return {
        "apiVersion": "diengine.opendilab.org/v2alpha1",
        "kind": "DIJob",
        "metadata": {"name": "pong", "namespace": "default"},
        "spec": {"tasks": [task("learner", "learner", 1), task("collector", "actor-pool", 2)]},
    }


def test_each_replica_of_a_dijob_v2_gets_di_orchestrator_v2s_variables(
    platform: LocalPlatform, tmp_path: Path
) -> None:
    out = tmp_path / "env"
    out.mkdir()
    platform.create_job(job_from_dict(_dijob(out)))
    loop = LocalJobLoop(platform, "default", "pong", interval=0.05)

    def dumped() -> bool:
        loop.step()
        return len(list(out.glob("*.json"))) == 3

    wait_until(dumped, timeout=30, what="3 replicas' environments")
    envs = {p.stem: json.loads(p.read_text()) for p in out.glob("*.json")}
    order = ["learner-0", "collector-0", "collector-1"]
    assert {n: e["DI_RANK"] for n, e in envs.items()} == {n: str(i) for i, n in enumerate(order)}
    assert {e["DI_JOB_ID"] for e in envs.values()} == {"default/pong"}
    [nodes] = {e["DI_NODES"] for e in envs.values()}
    for name, env in envs.items():
        own_host = env["FLEXJOB_REPLICA_ADDRESS"].rpartition(":")[0]
        assert nodes.split(",")[int(env["DI_RANK"])] == own_host, name
    assert len(envs["collector-1"]["DI_ACTOR_POOL_NODES"].split(",")) == 2
    learner_host = envs["learner-0"]["FLEXJOB_REPLICA_ADDRESS"].rpartition(":")[0]
    assert envs["learner-0"]["DI_LEARNER_NODES"] == learner_host
    final = loop.run()
    assert final is not None and final.status is not None
    assert final.status.phase is JobPhase.SUCCEEDED
