"""The Kubernetes path across real hosts: one process kubelet per host, each host a Node; one
job's pods go through the kopf operator and land on different hosts with the hosts' addresses
(the master's pod on one, a worker on each of the others), so they train across hosts (each
host has a loopback of its own: gloo and the master are reached at the hosts' addresses), and
every sample is trained exactly once; then the same with a worker's host cut from the master
for longer than the node-death timeout and healed. Tens of seconds to minutes on this
machine: marked ``netfault``."""

import asyncio
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.chaos.harness import SampleCheck, check_samples, read_samples
from tests.e2e.k8s_cluster import Cluster, sample_logging_job
from tests.netfaults.faults import HEARTBEAT_TIMEOUT, _log_time
from tests.netfaults.k8s_hosts_cluster import host_cluster, host_of
from tests.support import hosts
from tests.support.hosts import Host, HostNet
from tests.support.k8s_emulator import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.netfault, pytest.mark.timeout(600)]
NAME = "digits-elastic"
MASTER, WORKERS = f"{NAME}-master-0", (f"{NAME}-worker-0", f"{NAME}-worker-1")
SAMPLES = 1437  # the digits training split
#: Two node-death timeouts: the master surely declares the cut worker dead meanwhile.
CUT_S = 2 * HEARTBEAT_TIMEOUT


def job(samples: Path, epochs: int, step_delay: float) -> dict[str, Any]:
    body = sample_logging_job(samples, epochs=epochs, step_delay=step_delay)
    body["spec"]["masterSettings"] = {"nodeHealth": {"heartbeatTimeout": HEARTBEAT_TIMEOUT}}
    return body


def running_on(c: Cluster, net: HostNet) -> dict[str, Host] | None:
    """Each pod's host once the job's three pods run (None before)."""
    pods = {b["metadata"]["name"]: b for b in c.pods(NAME)}
    if any(
        (pods.get(p) or {}).get("status", {}).get("phase") != "Running" for p in (MASTER, *WORKERS)
    ):
        return None
    return {p: host_of(c, net, p) for p in (MASTER, *WORKERS)}


async def placement(c: Cluster, net: HostNet) -> dict[str, Host]:
    """Where the job's pods run: one on each host, with the host's address."""
    placed: dict[str, Host] = await wait_for(lambda: running_on(c, net), 120, 0.2)
    assert len({h.name for h in placed.values()}) == 3, placed  # one pod per host
    for pod, host in placed.items():
        [body] = [b for b in c.pods(NAME) if b["metadata"]["name"] == pod]
        assert body["status"]["podIP"] == body["status"]["hostIP"] == host.address, body
    print("placed:", {p: h.address for p, h in placed.items()})
    return placed


async def finish(c: Cluster, timeout: float) -> None:
    """Wait for the end: the job succeeded."""
    phase = await c.wait_phase(NAME, ("Succeeded", "Failed"), timeout)
    logs = "\n".join(f"--- {p}\n{c.log(p)[-3000:]}" for p in (MASTER, *WORKERS))
    assert phase == "Succeeded", logs


async def test_one_jobs_pods_land_on_different_hosts_and_train_across_them(
    host_net: Callable[[int], HostNet], tmp_path: Path
) -> None:
    net = host_net(3)
    samples = tmp_path / "samples"
    epochs = 2
    async with host_cluster(tmp_path, net) as c:
        await c.apply_job(job(samples, epochs, 0.0))
        await placement(c, net)
        await finish(c, 300)
        assert re.search(r"round_completed .*world_size=2", c.log(MASTER)), c.log(MASTER)
    assert check_samples(samples, epochs) == SampleCheck(epochs * SAMPLES, epochs * SAMPLES, 0, 0)
    net.close()
    assert hosts.leftovers() == [] and not list(Path("/etc/netns").glob(f"{net.tag}*"))


def master_ports(c: Cluster) -> list[int]:
    """The master pod's gRPC port and its TCP store's."""
    log = c.log(MASTER)
    grpc = re.search(r"event=rpc_serving address=\S+:(\d+)", log)
    store = re.search(r"event=store_started .*store=\S+:(\d+)", log)
    return [int(m.group(1)) for m in (grpc, store) if m]


async def test_a_worker_host_cut_from_the_master_past_the_node_death_timeout_recovers(
    host_net: Callable[[int], HostNet], tmp_path: Path
) -> None:
    """worker-1's host loses the master's ports (its all-reduce peer it keeps) for two
    node-death timeouts: the master declares it dead, fences it; healed, it joins again as a
    new member and the job finishes with every sample trained exactly once."""
    net = host_net(3)
    samples = tmp_path / "samples"
    epochs = 2
    async with host_cluster(tmp_path, net) as c:
        await c.apply_job(job(samples, epochs, 0.02))
        placed = await placement(c, net)
        expected = epochs * SAMPLES
        await wait_for(lambda: sum(read_samples(samples).values()) > expected // 4, 240, 0.2)
        master, cut = placed[MASTER], placed[WORKERS[1]]
        wall, injected = time.time(), time.monotonic()
        before = sum(read_samples(samples).values())
        cut.cut_ports(master, master_ports(c))
        await asyncio.sleep(CUT_S)
        cut.heal()
        healed = time.monotonic()
        during = sum(read_samples(samples).values()) - before  # trained while cut
        last, last_change, longest = before + during, healed, 0.0
        resumed: float | None = None  # the heal to the first sample trained after it
        while c.phase(NAME) not in ("Succeeded", "Failed") and time.monotonic() < healed + 240:
            count = sum(read_samples(samples).values())
            if count != last:
                now = time.monotonic()
                resumed = now - healed if resumed is None else resumed
                longest = max(longest, now - last_change)
                last, last_change = count, now
            await asyncio.sleep(0.2)
        await finish(c, 30)
        log = c.log(MASTER)
        dead = [
            _log_time(m.group(1)) - wall
            for m in re.finditer(
                r"^(\S+ \S+) .*event=node_dead .*node=worker-1 reason=(.*)$", log, re.M
            )
        ]
        members = re.findall(r"event=node_member .*node=worker-1 incarnation=(\d+)", log)
        check = check_samples(samples, epochs)
        print(
            f"k8s worker host cut from master {CUT_S:.0f} s ({healed - injected:.1f} s): "
            f"detect {dead[0] if dead else None} s, {during} samples trained while cut, "
            f"first sample {resumed} s after the heal, longest stall after it {longest:.1f} s, "
            f"{check}"
        )
        assert dead and dead[0] < CUT_S, log  # declared dead while cut
        assert len(members) >= 2, log  # it came back as a new member
        assert "declared dead by the master" in c.log(WORKERS[1]), c.log(WORKERS[1])[-3000:]
        print("worker-1 incarnations:", members, "node_dead at", dead)
    assert (check.lost, check.duplicated) == (0, 0), check
    net.close()
    assert hosts.leftovers() == []
