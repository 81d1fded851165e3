"""A PS over its memory limit, for real: the local platform enforces the PS replica's
``limits.memory`` (a memory cgroup), the PS dies ``OOMKilled`` while its partition grows, the
operator relaunches it with 1.5x the memory, the new PS restores its partition from its last
checkpoint, the worker's calls reach it again and the job finishes."""

import os
import re
import sys
from pathlib import Path

import pytest
import yaml

from flexjob.api import names
from flexjob.platform.cgroups import CgroupRoot
from flexjob.platform.local import LocalPlatform
from tests.support.local_jobs import job_status, run_flexjob
from tests.support.manifests import manifest
from tests.support.polling import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]
REPO = Path(__file__).resolve().parents[2]
LIMIT_MIB = 224
ROWS, STEP_ROWS, DIM = 1_000_000, 20_000, 16  # 64 MiB of rows at the end, SGD (no slots)
RESTORED = re.compile(r"event=ps_restored index=0 num_ps=1 from_num_ps=1 rows=(\d+)")

#: The worker: every step creates STEP_ROWS new rows on the PS and pushes each once; at the
#: end it counts the rows holding that push (the ones lost with the OOM-killed PS read 0).
WORKER = f"""
import time
import numpy as np
from flexjob.core.ps.optim import OptimizerKind, OptimizerSpec
from flexjob.core.ps.table import TableSpec
from flexjob.trainer.ps_set import PsSet

ps = PsSet.from_env()
sgd = OptimizerSpec(OptimizerKind.SGD, lr=0.5)
ps.configure(sgd, [TableSpec("t", {DIM}, init_scale=0.0)], {{}})
for start in range(0, {ROWS}, {STEP_ROWS}):
    ids = np.arange(start, start + {STEP_ROWS}, dtype=np.int64)
    rows, split = ps.lookup("t", ids)
    for call in ps.push_rows("t", split, np.ones_like(rows)):
        call.result()
    time.sleep(0.05)
rows, split = ps.lookup("t", np.arange({ROWS}, dtype=np.int64))
print("rows pushed", {ROWS}, "rows kept", int((rows[:, 0] == -0.5).sum()), flush=True)
"""


def test_an_oom_killed_ps_comes_back_with_more_memory_and_its_partition(
    tmp_path: Path, home: Path
) -> None:
    if not CgroupRoot(own_dir=False).available():
        pytest.skip("no writable memory cgroup here (RLIMIT_AS fallback is unit-tested)")
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    env = {**os.environ, "FLEXJOB_HOME": str(home), "PATH": path, "PYTHONPATH": str(REPO)}
    script = tmp_path / "grow.py"
    script.write_text(WORKER)
    memory = {"memory": f"{LIMIT_MIB}Mi"}
    ps_env = [{"name": names.ENV_PS_CHECKPOINT_INTERVAL, "value": "1"}]
    wire = manifest("ElasticJob", "ps-oom", {
        "distributionStrategy": "ParameterServerStrategy",
        "backoffLimit": 3,
        "replicaSpecs": {
            "ps": {
                "replicas": 1,
                "restartPolicy": "OnFailure",
                "template": {"spec": {"containers": [{
                    "name": "main", "image": "flexjob:latest", "env": ps_env,
                    "resources": {"requests": memory, "limits": memory},
                }]}},
            },
            "worker": {
                "replicas": 1,
                "restartPolicy": "OnFailure",
                "template": {"spec": {"containers": [{
                    "name": "main", "image": "flexjob:latest",
                    "command": [sys.executable, str(script)],
                }]}},
            },
        },
    })  # fmt: skip
    spec = tmp_path / "ps-oom.yaml"
    spec.write_text(yaml.safe_dump(wire))
    out = run_flexjob(env, "submit", "--detach", str(spec), cwd=REPO)
    assert out.returncode == 0, out.stdout + out.stderr

    wait_until(
        lambda: job_status(env, "ps-oom").get("phase") in ("Succeeded", "Failed"),
        timeout=150,
        interval=1.0,
        what="the job to finish",
    )
    platform = LocalPlatform(home)
    ps_log = "".join(platform.read_logs("default", "ps-oom-ps-0"))
    worker_log = "".join(platform.read_logs("default", "ps-oom-worker-0"))
    status = job_status(env, "ps-oom")
    assert status["phase"] == "Succeeded", (status, ps_log[-3000:], worker_log[-3000:])
    restored = [int(n) for n in RESTORED.findall(ps_log)]
    assert restored and restored[0] > 0, ps_log[-3000:]  # the relaunched PS had its rows back
    kept = re.search(r"rows pushed (\d+) rows kept (\d+)", worker_log)
    assert kept is not None, worker_log[-3000:]
    assert int(kept.group(2)) >= restored[0]  # every checkpointed row kept its push
    events = run_flexjob(env, "describe", "ps-oom").stdout
    assert "OOMKilled" in events, events
