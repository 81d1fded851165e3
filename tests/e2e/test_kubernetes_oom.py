"""OOM on the Kubernetes path, for real: a worker pod's ``limits.memory`` is enforced by the
process kubelet (a memory cgroup), its trainer allocates past it in the middle of training
and the kernel kills it, the kubelet reports the container ``OOMKilled``, and the kopf operator
relaunches the pod with 1.5x the memory; the job succeeds with every sample trained once."""

from pathlib import Path

import pytest

from flexjob.api.quantity import memory_mib
from tests.chaos.harness import SampleCheck, check_samples
from tests.e2e.k8s_cluster import cluster, sample_logging_job

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]
NAME = "digits-elastic"
MASTER, WORKER_1 = f"{NAME}-master-0", f"{NAME}-worker-1"
EPOCHS = 3
SAMPLES = 1437  # the digits training split
SCRIPT = "tests/e2e/scripts/train_then_oom.py"
#: Room for the agent and a torch trainer; the script's ballast goes past it.
LIMIT_MIB = 1024


async def test_an_oom_killed_worker_pod_is_relaunched_with_more_memory_and_nothing_is_lost(
    tmp_path: Path,
) -> None:
    samples, trigger = tmp_path / "samples", tmp_path / "oom-now"
    oom = {"OOM_TRIGGER": str(trigger), "OOM_REPLICA": "1"}
    body = sample_logging_job(samples, EPOCHS, script=SCRIPT, env=oom)
    template = body["spec"]["replicaSpecs"]["worker"]["template"]
    limit = {"memory": f"{LIMIT_MIB}Mi"}
    template["spec"]["containers"][0]["resources"] = {"requests": limit, "limits": limit}
    async with cluster(tmp_path) as c:
        if not c.kubelet.memory_limits:
            pytest.skip("no writable memory cgroup here: the kubelet cannot enforce limits")
        await c.apply_job(body)
        await c.wait_log(MASTER, "epoch=1", 90)
        trigger.touch()
        phase = await c.wait_phase(NAME, ("Succeeded", "Failed"), 120)
        logs = "\n".join(f"--- {p}\n{c.log(p)[-3000:]}" for p in (MASTER, WORKER_1))
        assert phase == "Succeeded", logs
        assert "train_then_oom: allocating past the memory limit" in c.log(WORKER_1), logs
        assert "no limit stopped" not in c.log(WORKER_1), logs
        status = c.job(NAME)["status"]
        relaunched = LIMIT_MIB * 3 // 2
        assert status["migratedReplicas"] == {"worker-1": {"memory": relaunched}}, status
        [pod] = [p for p in c.pods(NAME) if p["metadata"]["name"] == WORKER_1]
        resources = pod["spec"]["containers"][0]["resources"]
        assert memory_mib(resources["limits"]["memory"]) == relaunched, resources
        events = c.emulator.store.select(c.emulator.kind("", "v1", "events"), "default")
        assert any("OOMKilled" in (e.get("message") or "") for e in events), events
    assert check_samples(samples, EPOCHS) == SampleCheck(EPOCHS * SAMPLES, EPOCHS * SAMPLES, 0, 0)
