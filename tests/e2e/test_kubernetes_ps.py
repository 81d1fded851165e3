"""The CTR parameter-server job on the Kubernetes path: 2 PS and 2 workers created by the kopf
operator and run by the process kubelet (the workers reach the PS through their Services),
a worker pod SIGKILLed once a quarter of the shards are done and relaunched; the job
Succeeded with every shard of every epoch accepted exactly once and the AUC goal met, as on
the local platform (``tests/e2e/test_ps_jobs.py``)."""

from pathlib import Path

import pytest
import yaml

from tests.e2e.k8s_cluster import cluster
from tests.e2e.test_ps_jobs import (
    assert_every_shard_once_and_auc_met,
    assert_shards_back_before_the_replacement,
    ctr_spec,
    shards_accepted,
)
from tests.support.k8s_emulator import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]
NAME = "ctr-ps"
WORKER_0, WORKER_1 = f"{NAME}-worker-0", f"{NAME}-worker-1"


async def test_ctr_ps_job_survives_a_killed_worker_pod_with_every_shard_done_once(
    tmp_path: Path,
) -> None:
    shard_log = tmp_path / "shards.log"
    body = yaml.safe_load(ctr_spec(tmp_path, shard_log, ps_checkpoint_s=1).read_text())

    async with cluster(tmp_path / "cluster", shared_claim=True) as c:  # PS checkpoints
        await c.apply_job(body)
        await wait_for(lambda: shards_accepted(shard_log) >= 12, 120, 0.2)
        c.kill(WORKER_1)
        phase = await c.wait_phase(NAME, ("Succeeded", "Failed"), 150)
        logs = c.log(WORKER_0) + c.log(WORKER_1)
        master_log = c.log(f"{NAME}-master-0")
        pods = sorted(p["metadata"]["name"] for p in c.pods(NAME))
        context = "\n".join(f"--- {p}\n{c.log(p)[-2000:]}" for p in pods)
        assert phase == "Succeeded", context
        # No replica beyond the spec's; the implicit master may already be cleaned up.
        replicas = {f"{NAME}-ps-0", f"{NAME}-ps-1", WORKER_0, WORKER_1}
        assert replicas <= set(pods) <= replicas | {f"{NAME}-master-0"}, pods
    assert_every_shard_once_and_auc_met(shard_log, logs, unanswered=1)  # the killed worker
    assert_shards_back_before_the_replacement(master_log)
