"""A Kubeflow PyTorchJob whose pods run a plain torch script (``init_process_group("gloo")``,
``env://``, no flexjob imports) forms one world on ``flexjob submit``: the operator gives its
Master (the chief, rank 0) a service and every pod MASTER_ADDR/MASTER_PORT/WORLD_SIZE/RANK
(``core.operator.torch_world``), as Kubeflow's training operator does. Before, the pods got none of
them
and could not start."""

from pathlib import Path

import pytest

from tests.support.local_jobs import replica_logs, submit_to_end, user_env
from tests.support.manifests import manifest

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(90)]
REPO = Path(__file__).resolve().parents[2]
NAME = "plain-torch"


PLAIN = ["python", "tests/agent/plain_allreduce.py"]
#: torchrun with no flags: it reads them from PET_NNODES, PET_RDZV_ENDPOINT, PET_RDZV_BACKEND...
TORCHRUN = ["python", "-m", "torch.distributed.run", "tests/agent/plain_allreduce.py"]


def _replica(replicas: int, command: list[str] = PLAIN) -> dict[str, object]:
    container = {"name": "pytorch", "image": "pytorch:latest", "command": command}
    return {
        "replicas": replicas,
        "restartPolicy": "Never",
        "template": {"spec": {"containers": [container]}},
    }


def pytorchjob(spec: dict[str, object]) -> dict[str, object]:
    """The Kubeflow PyTorchJob ``NAME`` with ``spec``."""
    return manifest("PyTorchJob", NAME, spec, api_version="kubeflow.org/v1")


def test_a_pytorchjob_running_plain_torch_forms_one_world(home: Path, tmp_path: Path) -> None:
    replicas = {"Master": _replica(1), "Worker": _replica(1)}
    spec = pytorchjob({"pytorchReplicaSpecs": replicas})
    env = user_env(home, REPO)
    submit_to_end(env, tmp_path, spec, cwd=REPO)
    for replica, rank in (("chief-0", 0), ("worker-0", 1)):
        logs = replica_logs(env, NAME, replica, cwd=REPO)
        assert f"sum=3 world=2 rank={rank}" in logs, logs


def test_an_elastic_pytorchjob_running_torchrun_forms_one_world(home: Path, tmp_path: Path) -> None:
    """Two workers run bare ``torchrun script``: the c10d rendezvous on worker-0's service and
    the node count come from the PET_* variables the operator sets for an elasticPolicy; two
    processes per node from ``nProcPerNode``."""
    spec = pytorchjob(
        {
            "elasticPolicy": {"rdzvBackend": "c10d", "nProcPerNode": 2},
            "pytorchReplicaSpecs": {"Worker": _replica(2, TORCHRUN)},
        }
    )
    env = user_env(home, REPO)
    submit_to_end(env, tmp_path, spec, cwd=REPO)
    ranks = set()
    for replica in ("worker-0", "worker-1"):
        logs = replica_logs(env, NAME, replica, cwd=REPO)
        ranks |= {r for r in range(4) if f"sum=10 world=4 rank={r}" in logs}
    assert ranks == {0, 1, 2, 3}
