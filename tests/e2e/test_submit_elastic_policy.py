"""``elasticPolicy.nProcPerNode`` does what it says on ``flexjob submit``: one worker replica
with ``nProcPerNode: 2`` runs two ranks (before, the field was dropped and every agent ran one
process). The operator passes it as ``FLEXJOB_NPROC_PER_NODE``; ``flexjob agent`` reads it."""

from pathlib import Path

import pytest

from tests.support.local_jobs import replica_logs, submit_to_end, user_env
from tests.support.manifests import manifest

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(90)]
REPO = Path(__file__).resolve().parents[2]
NAME = "nprocs"


def test_n_proc_per_node_gives_one_replica_that_many_ranks(home: Path, tmp_path: Path) -> None:
    container = {
        "name": "main",
        "image": "flexjob:latest",
        "command": ["python", "-m", "flexjob", "agent"],
        "args": ["tests/agent/plain_allreduce.py"],
    }
    worker = {
        "replicas": 1,
        "restartPolicy": "Never",
        "template": {"spec": {"containers": [container]}},
    }
    policy = {"rdzvBackend": "flexjob", "nProcPerNode": 2}
    spec = manifest(
        "ElasticJob", NAME, {"elasticPolicy": policy, "replicaSpecs": {"worker": worker}}
    )
    env = user_env(home, REPO)
    submit_to_end(env, tmp_path, spec, cwd=REPO)
    logs = replica_logs(env, NAME, "worker-0", cwd=REPO)
    assert "sum=3 world=2 rank=0" in logs, logs
    assert "sum=3 world=2 rank=1" in logs, logs
