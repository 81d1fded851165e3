"""Whole jobs on the Kubernetes path: kopf operator, emulated API, pods run by the process
kubelet, real gloo between pods on their own loopback addresses."""

import contextlib
import os
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from flexjob.core.operator.master_state import NO_STATE
from tests.chaos.harness import SampleCheck, check_samples, read_samples
from tests.e2e.k8s_cluster import Cluster, cluster, digits_job, flexjob_cli, sample_logging_job
from tests.support.k8s_emulator import wait_for
from tests.support.k8s_fixtures import in_thread

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(150)]
NAME = "digits-elastic"
EPOCHS = 3
SAMPLES = 1437  # the digits training split
ACCURACY = re.compile(r"digits: accuracy=([0-9.]+) steps=\d+ world_size=(\d+)")


async def test_digits_job_trains_to_success_through_the_operator(tmp_path: Path) -> None:
    async with cluster(tmp_path) as c:
        await c.apply_job(digits_job(epochs=EPOCHS))
        phase = await c.wait_phase(NAME, ("Succeeded", "Failed"), 120)
        logs = {p: c.log(p) for p in (f"{NAME}-master-0", f"{NAME}-worker-0", f"{NAME}-worker-1")}
        assert phase == "Succeeded", logs
        [(accuracy, world)] = [m for p in logs.values() for m in ACCURACY.findall(p)]
        assert float(accuracy) >= 0.9 and world == "2"
        assert_every_sample_once(c.master_state(NAME), EPOCHS)


def assert_every_sample_once(state: dict[str, Any], epochs: int) -> None:
    """The master's books: every epoch completed, every sample of each done once
    (``job done: N/N samples``), no shard counted twice."""
    (dataset,) = state["shards"].values()
    assert sorted(dataset["completed"]) == list(range(epochs))
    assert dataset["samples_done"] == epochs * SAMPLES


LONG = pytest.mark.skipif(
    not os.environ.get("FLEXJOB_K8S_E2E_LONG"),
    reason="long Kubernetes-path fault tests: set FLEXJOB_K8S_E2E_LONG=1",
)
SLOW_EPOCHS = 6
MASTER, WORKER_0, WORKER_1 = (f"{NAME}-master-0", f"{NAME}-worker-0", f"{NAME}-worker-1")
Test = TypeVar("Test", bound=Callable[..., Awaitable[None]])


def long_fault_test(test: Test) -> Test:
    """A long fault test (``LONG``: skipped unless asked for), given 240 s."""
    return LONG(pytest.mark.timeout(240)(test))


@contextlib.asynccontextmanager
async def slow_job(tmp_path: Path, logged: str, timeout: float) -> AsyncIterator[Cluster]:
    """A cluster running the slow digits job (``SLOW_EPOCHS``), once its master logged
    ``logged``."""
    async with cluster(tmp_path) as c:
        await c.apply_job(digits_job(epochs=SLOW_EPOCHS, step_delay=0.1))
        await c.wait_log(MASTER, logged, timeout)
        yield c


async def finish(c: Cluster, epochs: int = SLOW_EPOCHS) -> str:
    """Wait for the end; the job must succeed with every sample done once."""
    phase = await c.wait_phase(NAME, ("Succeeded", "Failed"), 150)
    logs = "\n".join(f"--- {p}\n{c.log(p)[-3000:]}" for p in (MASTER, WORKER_0, WORKER_1))
    assert phase == "Succeeded", logs
    assert_every_sample_once(c.master_state(NAME), epochs)
    assert "shard_report_rejected" not in c.log(MASTER)
    return c.log(MASTER)


@long_fault_test
async def test_flexjob_scale_grows_a_running_job_to_three_workers(tmp_path: Path) -> None:
    async with slow_job(tmp_path, "world_size=2", 90) as c:
        out = await in_thread(flexjob_cli, c.kubelet.kubeconfig, "scale", NAME, "--worker", "3")
        assert out.returncode == 0, out.stdout + out.stderr
        await c.wait_log(MASTER, "world_size=3", 90)
        await finish(c)


@long_fault_test
async def test_a_killed_worker_pod_is_relaunched_and_nothing_is_lost(tmp_path: Path) -> None:
    async with slow_job(tmp_path, "epoch=2", 120) as c:
        c.kill(WORKER_1)
        master_log = await finish(c)
        # Relaunched and back in a world of two (its shard, if it held one, went back to TODO;
        # it holds none when the other rank vouched for its last one: finish() checks every
        # sample once either way).
        rounds = re.findall(r"round_completed .*round=(\d+) world_size=(\d+)", master_log)
        assert rounds and int(rounds[-1][0]) >= 2 and rounds[-1][1] == "2", master_log


async def test_a_killed_master_pod_is_relaunched_and_every_sample_is_trained_once(
    tmp_path: Path,
) -> None:
    """The default install (no state option): the operator gives the master a claim of its
    own; the master pod is SIGKILLed a third into the second epoch, its relaunch restores its
    state from that claim, and the workers finish with every sample trained exactly once."""
    samples = tmp_path / "samples"
    async with cluster(tmp_path) as c:
        await c.apply_job(sample_logging_job(samples, epochs=EPOCHS))
        await kill_master_mid_epoch(c, samples, epoch=1)
        master_log = await finish(c, EPOCHS)
        claim = c.claim(f"{NAME}-master-state")
        [owner] = claim["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["uid"]) == ("ElasticJob", c.job(NAME)["metadata"]["uid"])
        job_dirs = JOB_DIR.findall(master_log)
        volume = c.kubelet.claim_directory("default", f"{NAME}-master-state")
        assert len(job_dirs) == 2 and volume and {d.startswith(volume) for d in job_dirs} == {True}
        assert len(set(job_dirs)) == 1, job_dirs  # the relaunch continued in the same folder
        assert 0 not in epochs_started(c)[1], epochs_started(c)  # ...and did not start over
    assert check_samples(samples, EPOCHS) == SampleCheck(EPOCHS * SAMPLES, EPOCHS * SAMPLES, 0, 0)


#: The ``master_started`` event's state folder (the claim's volume, as the kubelet mounts it).
JOB_DIR = re.compile(r"event=master_started .*job_dir=(\S+)")


def epochs_started(c: Cluster) -> list[list[int]]:
    """The epochs each incarnation of the master started (its ``epoch_started`` events)."""
    files = sorted(c.kubelet.log_dir.glob(f"default_{MASTER}_*.log"), key=os.path.getmtime)
    return [[int(e) for e in EPOCH_STARTED.findall(f.read_text())] for f in files]


EPOCH_STARTED = re.compile(r"event=epoch_started .*epoch=(\d+)")


async def kill_master_mid_epoch(c: Cluster, samples: Path, epoch: int) -> int:
    """SIGKILL the master's process once a third of ``epoch``'s samples are trained; how many
    samples (of every epoch) were trained by then."""

    def trained(of_epoch: int | None = None) -> int:
        counts = read_samples(samples)
        return sum(n for (e, _), n in counts.items() if of_epoch in (None, e))

    await wait_for(lambda: trained(epoch) >= SAMPLES // 3, 90, 0.05)
    c.kill(MASTER)
    return trained()


async def test_without_kept_state_a_relaunched_master_starts_over_and_samples_are_redone(
    tmp_path: Path,
) -> None:
    """The negative of the test above: an operator told to keep no state
    (``--no-job-master-state``) gives the master no claim, so its relaunch starts the dataset
    from nothing: it starts epoch 0 again, the job still Succeeds, but the first epoch is
    trained twice, so the per-sample check does not come out exactly once."""
    samples, epochs = tmp_path / "samples", 2
    async with cluster(tmp_path, job_master_state=NO_STATE) as c:
        await c.apply_job(sample_logging_job(samples, epochs=epochs))
        await kill_master_mid_epoch(c, samples, epoch=1)
        phase = await c.wait_phase(NAME, ("Succeeded", "Failed"), 150)
        master_log = c.log(MASTER)
        assert master_log.count("event=master_started") == 2, master_log
        assert JOB_DIR.findall(master_log) == ["-", "-"]
        assert not c.emulator.store.select(
            c.emulator.kind("", "v1", "persistentvolumeclaims"), "default"
        )
        started = epochs_started(c)
    assert started[0] == [0, 1] and started[1][:1] == [0], started  # the relaunch started over
    check = check_samples(samples, epochs)
    assert phase == "Succeeded" and check.lost == 0 and check.duplicated >= SAMPLES, check


@long_fault_test
async def test_a_lost_node_is_left_and_its_pods_run_elsewhere(tmp_path: Path) -> None:
    async with slow_job(tmp_path, "epoch=2", 120) as c:
        [pod] = [p for p in c.pods(NAME) if p["metadata"]["name"] == WORKER_1]
        lost = pod["spec"]["nodeName"]
        await c.kubelet.lose_node(lost)
        await finish(c)
        assert all(p["spec"].get("nodeName") != lost for p in c.pods(NAME))


@long_fault_test
async def test_a_killed_operator_is_replaced_and_the_job_finishes_with_nothing_lost(
    tmp_path: Path,
) -> None:
    """The operator vanishes in the second epoch (its task cancelled, no cleanup) and a worker
    pod is killed while none runs: a fresh operator relaunches that worker and nothing else.
    It vanishes again and the workers finish meanwhile: a third one re-creates no completed
    replica and marks the job Succeeded. Every sample is trained exactly once."""
    samples = tmp_path / "samples"
    pods = (MASTER, WORKER_0, WORKER_1)
    async with cluster(tmp_path) as c:
        await c.apply_job(sample_logging_job(samples, epochs=EPOCHS))
        await c.wait_log(MASTER, "epoch=1", 90)
        await c.stop_operator()
        runs = {p: c.incarnations(p) for p in pods}
        c.kill(WORKER_1)
        await wait_for(lambda: pod_phase(c, WORKER_1) == "Failed", 30, 0.2)
        await c.start_operator()
        await wait_for(lambda: pod_phase(c, WORKER_1) == "Running", 60, 0.2)
        await c.stop_operator()
        await wait_for(lambda: {pod_phase(c, p) for p in pods[1:]} == {"Succeeded"}, 120, 0.2)
        assert c.phase(NAME) == "Running"
        await c.start_operator()
        master_log = await finish(c, EPOCHS)
        assert master_log.count("event=master_started") == 1, master_log
        assert {p: c.incarnations(p) for p in pods} == {**runs, WORKER_1: runs[WORKER_1] + 1}
        assert {p["metadata"]["name"] for p in c.pods(NAME)} <= set(pods)
    assert check_samples(samples, EPOCHS) == SampleCheck(EPOCHS * SAMPLES, EPOCHS * SAMPLES, 0, 0)


def pod_phase(c: Cluster, pod: str) -> str:
    """The pod's phase ("" while it does not exist)."""
    [phase] = [
        str((p.get("status") or {}).get("phase"))
        for p in c.pods(NAME)
        if p["metadata"]["name"] == pod
    ] or [""]
    return phase
